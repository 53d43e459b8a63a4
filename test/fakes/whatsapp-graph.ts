import http from 'node:http';
import { createHmac, randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';

/**
 * A local stand-in for Meta's Graph API (WhatsApp Business Cloud API), enforcing the public
 * contract the connector is built from (docs/whatsapp.md; research notes on Meta's reference and
 * the pywa and whatsapp-api-js clients):
 * - `POST /{version}/{phone_number_id}/messages` with `Authorization: Bearer <token>`: an unknown or
 *   expired token is 401 with `{error: {type: "OAuthException", code: 190, error_subcode: 463}}`;
 *   another number's id is 400 code 100.
 * - The body: `messaging_product: "whatsapp"`, `to` digits only, `type: "template"`, a template
 *   that exists and is APPROVED in that language (else 404 code 132001), one body text parameter per
 *   `{{n}}` (else 400 code 132000). Answers `{messaging_product, contacts: [{input, wa_id}],
 *   messages: [{id: "wamid…"}]}`.
 * - Throughput: `rateLimitNext(n)` answers 400 code 130429 n times (nothing sent).
 * - `loseNextAnswer()`: the message is accepted (and counted), the connection cut before the answer.
 * - Notifications: `notify(payload)` posts to the company's callback URL, signed
 *   `X-Hub-Signature-256: sha256=<hex HMAC of the raw body with the app secret>`, JSON with non-ASCII
 *   escaped as Meta sends it; helpers build status and reply notifications.
 * It has no idempotency key, as Meta has none: the same body sent twice is two messages.
 */
export interface FakeTemplate {
  name: string;
  language: string;
  status: 'APPROVED' | 'PENDING' | 'REJECTED';
  body: string;
}

export interface SentMessage {
  id: string;
  to: string;
  template: string;
  language: string;
  params: string[];
  reference: string | undefined;
  raw: Record<string, unknown>;
}

export class FakeWhatsAppGraph {
  readonly phoneNumberId = '109876543210987';
  readonly accessToken = `EAAG${randomBytes(24).toString('hex')}`;
  readonly appSecret = randomBytes(16).toString('hex');
  readonly version = 'v23.0';
  templates: FakeTemplate[] = [
    { name: 'recaudo_cobro', language: 'es', status: 'APPROVED', body: '{{1}} te envió una solicitud de pago: {{2}}, por {{3}}. Paga aquí: {{4}}' },
    { name: 'recaudo_codigo', language: 'es', status: 'APPROVED', body: '{{1}} es tu código de verificación.' },
    { name: 'recaudo_pendiente', language: 'es', status: 'PENDING', body: '{{1}}' },
  ];
  sent: SentMessage[] = [];
  requests = 0;
  expiredToken = false;
  private rateLimited = 0;
  private lose = 0;
  private server = http.createServer((req, res) => void this.handle(req, res));
  url = '';
  /** Where notifications go (the connector's events_url). */
  callbackUrl = '';

  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  rateLimitNext(n = 1): void {
    this.rateLimited += n;
  }

  loseNextAnswer(): void {
    this.lose++;
  }

  private error(res: http.ServerResponse, status: number, code: number, message: string, extra: Record<string, unknown> = {}) {
    res.writeHead(status, { 'content-type': 'application/json' }).end(
      JSON.stringify({
        error: { message, type: code === 190 ? 'OAuthException' : 'OAuthException', code, ...extra, fbtrace_id: randomBytes(8).toString('hex') },
      }),
    );
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    this.requests++;
    const m = /^\/(v\d+\.\d+)\/([^/]+)\/messages$/.exec(req.url ?? '');
    if (req.method !== 'POST' || !m) return this.error(res, 400, 100, 'Unsupported request');
    if (req.headers.authorization !== `Bearer ${this.accessToken}` || this.expiredToken) {
      return this.error(res, 401, 190, 'Error validating access token: Session has expired.', { error_subcode: 463 });
    }
    if (m[2] !== this.phoneNumberId) return this.error(res, 400, 100, `Unsupported post request. Object with ID '${m[2]}' does not exist`);
    if (!/application\/json/.test(String(req.headers['content-type']))) return this.error(res, 400, 100, 'Invalid content type');
    let body: Record<string, any>;
    try {
      body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    } catch {
      return this.error(res, 400, 100, 'Invalid JSON');
    }
    if (body.messaging_product !== 'whatsapp') return this.error(res, 400, 100, '(#100) The parameter messaging_product is required.');
    if (typeof body.to !== 'string' || !/^\d{8,15}$/.test(body.to)) return this.error(res, 400, 100, '(#100) Invalid parameter: to');
    if (body.type !== 'template') return this.error(res, 400, 131051, 'Unsupported message type');
    const name = body.template?.name;
    const language = body.template?.language?.code;
    const template = this.templates.find((t) => t.name === name && t.language === language && t.status === 'APPROVED');
    if (!template)
      return this.error(
        res,
        404,
        132001,
        `(#132001) Template name does not exist in the translation: template name (${name}) does not exist in ${language}`,
      );
    const bodyComponent = (body.template?.components ?? []).find((c: { type?: string }) => c.type === 'body');
    const params: string[] = (bodyComponent?.parameters ?? []).map((p: { type?: string; text?: unknown }) =>
      p.type === 'text' ? String(p.text) : '',
    );
    const expected = new Set(template.body.match(/\{\{\d+\}\}/g) ?? []).size;
    if (params.length !== expected || params.some((p) => p.trim() === '')) {
      return this.error(res, 400, 132000, `(#132000) Number of parameters does not match the expected number of params: expected ${expected}`);
    }
    if (this.rateLimited > 0) {
      this.rateLimited--;
      return this.error(res, 400, 130429, '(#130429) Rate limit hit');
    }
    const id = `wamid.HBgM${randomBytes(18).toString('base64url')}`;
    this.sent.push({ id, to: body.to, template: name, language, params, reference: body.biz_opaque_callback_data, raw: body });
    if (this.lose > 0) {
      this.lose--;
      req.socket.destroy(); // accepted, then the answer is lost
      return;
    }
    res
      .writeHead(200, { 'content-type': 'application/json' })
      .end(JSON.stringify({ messaging_product: 'whatsapp', contacts: [{ input: body.to, wa_id: body.to }], messages: [{ id }] }));
  }

  /** Posts a notification to the callback URL as Meta does (signed raw bytes, non-ASCII escaped). */
  async notify(payload: unknown, opts: { secret?: string; signature?: string } = {}): Promise<{ status: number; text: string }> {
    const raw = JSON.stringify(payload).replace(/[\u007f-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
    const signature =
      opts.signature ??
      `sha256=${createHmac('sha256', opts.secret ?? this.appSecret)
        .update(raw)
        .digest('hex')}`;
    const res = await fetch(this.callbackUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-hub-signature-256': signature },
      body: raw,
    });
    return { status: res.status, text: await res.text() };
  }

  private envelope(value: Record<string, unknown>) {
    return {
      object: 'whatsapp_business_account',
      entry: [
        {
          id: '102290129340398',
          changes: [
            {
              field: 'messages',
              value: {
                messaging_product: 'whatsapp',
                metadata: { display_phone_number: '573009998877', phone_number_id: this.phoneNumberId },
                ...value,
              },
            },
          ],
        },
      ],
    };
  }

  statusNotification(message: SentMessage, status: 'sent' | 'delivered' | 'read' | 'failed', error?: { code: number; title: string }) {
    return this.envelope({
      statuses: [
        {
          id: message.id,
          status,
          timestamp: String(Math.floor(Date.now() / 1000)),
          recipient_id: message.to,
          ...(message.reference ? { biz_opaque_callback_data: message.reference } : {}),
          ...(error ? { errors: [{ code: error.code, title: error.title, message: error.title, error_data: { details: error.title } }] } : {}),
        },
      ],
    });
  }

  replyNotification(message: SentMessage, text: string) {
    return this.envelope({
      contacts: [{ profile: { name: 'Pagador' }, wa_id: message.to }],
      messages: [
        {
          from: message.to,
          id: `wamid.${randomBytes(12).toString('base64url')}`,
          timestamp: String(Math.floor(Date.now() / 1000)),
          context: { from: '573009998877', id: message.id },
          type: 'text',
          text: { body: text },
        },
      ],
    });
  }
}
