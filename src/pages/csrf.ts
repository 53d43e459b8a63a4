import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

/**
 * Form tokens of the payer pages: every POST carries a token that this server signed for that
 * payment (HMAC-SHA256 with PAGES_SECRET) at a given time, valid for TOKEN_TTL_MS. A POST whose
 * token is missing, forged, for another payment or too old is refused (403) before anything else
 * happens. There is no session or cookie: the token proves the form came from this page.
 *
 * PAGES_SECRET must be the same in every API process; when it is unset a random one is made at
 * start (fine for one process; a token then dies with a restart).
 */
export const TOKEN_TTL_MS = 24 * 3_600_000;

export class FormTokens {
  private readonly key: Buffer;

  constructor(secret: string | undefined) {
    this.key = secret ? Buffer.from(secret, 'utf8') : randomBytes(32);
  }

  private mac(paymentId: string, issued: string): string {
    return createHmac('sha256', this.key).update(`pay-form\n${paymentId}\n${issued}`).digest('base64url');
  }

  issue(paymentId: string, now: Date): string {
    const issued = now.getTime().toString(36);
    return `${issued}.${this.mac(paymentId, issued)}`;
  }

  verify(paymentId: string, token: unknown, now: Date): boolean {
    if (typeof token !== 'string' || token.length > 200) return false;
    const dot = token.indexOf('.');
    if (dot <= 0) return false;
    const issued = token.slice(0, dot);
    const at = parseInt(issued, 36);
    if (!/^[0-9a-z]{1,12}$/.test(issued) || !Number.isFinite(at)) return false;
    const age = now.getTime() - at;
    if (age > TOKEN_TTL_MS || age < -5 * 60_000) return false;
    const given = Buffer.from(token.slice(dot + 1));
    const expected = Buffer.from(this.mac(paymentId, issued));
    return given.length === expected.length && timingSafeEqual(given, expected);
  }
}
