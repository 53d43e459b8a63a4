import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { verifyWebhook, WebhookVerificationError } from './index.mjs';

const secret = 'wh_tok_abc';
const token = 'wh_hdr_xyz';
const raw = Buffer.from(
  JSON.stringify({ id: 'evt_1', event: 'charge.paid', created_at: '2026-01-01T00:00:00.000Z', is_test: true, data: { amount: 1000 } }),
);
const headers = { 'x-webhook-token': token, 'x-webhook-event': 'charge.paid', signature: createHmac('sha256', secret).update(raw).digest('hex') };

test('accepts a genuine delivery and returns the event', () => {
  const event = verifyWebhook({ rawBody: raw, headers, secret, token });
  assert.equal(event.id, 'evt_1');
  assert.equal(verifyWebhook({ rawBody: raw.toString(), headers: new Headers(headers), secret, token }).event, 'charge.paid');
});

test('rejects a changed body, a wrong token, a missing signature', () => {
  const changed = Buffer.from(raw.toString().replace('1000', '1001'));
  assert.throws(() => verifyWebhook({ rawBody: changed, headers, secret, token }), WebhookVerificationError);
  assert.throws(() => verifyWebhook({ rawBody: raw, headers: { ...headers, 'x-webhook-token': 'nope' }, secret, token }), /token/);
  assert.throws(() => verifyWebhook({ rawBody: raw, headers: { ...headers, signature: undefined }, secret }), /missing/);
  assert.throws(() => verifyWebhook({ rawBody: raw, headers: { ...headers, 'x-webhook-event': 'charge.failed' }, secret }), /x-webhook-event/);
});
