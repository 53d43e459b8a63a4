// Verifies a Recaudo webhook delivery on the receiving side. Plain JavaScript, no dependencies:
// import it from the package (`recaudo/receiver`) or copy this file into your service.
import { createHmac, timingSafeEqual } from 'node:crypto';

function header(headers, name) {
  if (typeof headers.get === 'function') return headers.get(name) ?? undefined; // fetch Headers
  const value = headers[name] ?? headers[name.toLowerCase()];
  return Array.isArray(value) ? value[0] : value;
}

// Compares two strings in constant time, whatever their lengths (compares fixed-size digests).
function safeEqual(a, b) {
  const ha = createHmac('sha256', 'recaudo-compare').update(String(a)).digest();
  const hb = createHmac('sha256', 'recaudo-compare').update(String(b)).digest();
  return timingSafeEqual(ha, hb) && a.length === b.length;
}

/**
 * Checks the token and the signature of one delivery over the raw body bytes (never a re-serialised
 * object) and returns the parsed event. Throws a WebhookVerificationError when anything is off.
 *
 * @param {{ rawBody: Buffer | Uint8Array | string, headers: object, secret?: string, token?: string }} input
 * @returns {{ id: string, event: string, created_at: string, is_test: boolean, data: object }}
 */
export function verifyWebhook({ rawBody, headers, secret, token }) {
  if (rawBody === undefined || rawBody === null) throw new WebhookVerificationError('raw body is required');
  const bytes = typeof rawBody === 'string' ? Buffer.from(rawBody, 'utf8') : Buffer.from(rawBody);
  if (token !== undefined) {
    const got = header(headers, 'x-webhook-token');
    if (typeof got !== 'string' || !safeEqual(got, token)) throw new WebhookVerificationError('x-webhook-token does not match');
  }
  if (secret !== undefined) {
    const got = header(headers, 'signature');
    if (typeof got !== 'string') throw new WebhookVerificationError('Signature header is missing');
    const expected = createHmac('sha256', secret).update(bytes).digest('hex');
    if (!safeEqual(got.toLowerCase(), expected)) throw new WebhookVerificationError('Signature does not match the body');
  }
  let event;
  try {
    event = JSON.parse(bytes.toString('utf8'));
  } catch {
    throw new WebhookVerificationError('body is not JSON');
  }
  const type = header(headers, 'x-webhook-event');
  if (type !== undefined && type !== event.event) throw new WebhookVerificationError('x-webhook-event does not match the body');
  return event;
}

export class WebhookVerificationError extends Error {
  constructor(message) {
    super(message);
    this.name = 'WebhookVerificationError';
  }
}
