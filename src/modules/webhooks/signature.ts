import { createHmac } from 'node:crypto';

/** SPEC.md: `Signature` is the hex HMAC-SHA256 of the exact raw body bytes with the webhook secret. */
export function signBody(secret: string, body: string | Buffer): string {
  return createHmac('sha256', secret).update(body).digest('hex');
}
