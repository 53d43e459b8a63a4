import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { verifyWebhook, WebhookVerificationError, type WebhookVerificationReason } from '../src/index.ts';

// Deliveries made here the way docs/webhooks.md describes them (the end-to-end test checks real ones).
const secret = 'wh_tok_Zq4k9s8aPz1mVb7cXr2LwT0yH';
const token = 'wh_hdr_Kj3nB5vQ8sR1';
const createdAt = '2026-03-01T12:00:00.000Z';
const now = Date.parse(createdAt) + 5_000;

function delivery(overrides: Record<string, unknown> = {}) {
  const body = JSON.stringify({
    id: 'evt_01J9Z',
    event: 'charge.paid',
    created_at: createdAt,
    is_test: true,
    data: { id: 'ch_1', amount: 150000 },
    ...overrides,
  });
  const raw = Buffer.from(body, 'utf8');
  const headers: Record<string, string | string[] | undefined> = {
    'content-type': 'application/json',
    'x-webhook-token': token,
    'x-webhook-event': JSON.parse(body).event,
    'x-webhook-id': JSON.parse(body).id,
    signature: createHmac('sha256', secret).update(raw).digest('hex'),
  };
  return { raw, headers };
}

function refused(fn: () => unknown, reason: WebhookVerificationReason): void {
  assert.throws(fn, (error: unknown) => {
    assert.ok(error instanceof WebhookVerificationError, `expected a WebhookVerificationError, got ${String(error)}`);
    assert.equal(error.reason, reason, error.message);
    return true;
  });
}

describe('verifyWebhook', () => {
  test('a genuine delivery verifies with the secret, the token, or both, from a Buffer, a string or fetch Headers', () => {
    const { raw, headers } = delivery();
    const event = verifyWebhook<{ id: string; amount: number }>(raw, headers, { secret, now });
    assert.equal(event.id, 'evt_01J9Z');
    assert.equal(event.event, 'charge.paid');
    assert.equal(event.data.amount, 150000);
    assert.equal(verifyWebhook(raw.toString('utf8'), headers, { secret, token, now }).id, 'evt_01J9Z');
    assert.equal(verifyWebhook(new Uint8Array(raw), new Headers(headers as Record<string, string>), { secret, now }).id, 'evt_01J9Z');
    // Header names in any case (a framework that keeps the sender's spelling).
    const upper = { 'X-Webhook-Id': headers['x-webhook-id'], 'X-Webhook-Event': headers['x-webhook-event'], Signature: headers.signature };
    assert.equal(verifyWebhook(raw, upper, { secret, now }).id, 'evt_01J9Z');
    // Token mode: the token alone.
    assert.equal(verifyWebhook(raw, headers, { token, now }).id, 'evt_01J9Z');
  });

  test('fails closed without credentials: no secret and no token (or empty ones) refuse even a genuine delivery', () => {
    const { raw, headers } = delivery();
    refused(() => verifyWebhook(raw, headers, {}), 'no_credentials');
    refused(() => verifyWebhook(raw, headers, { secret: '', token: '' }), 'no_credentials');
    refused(() => verifyWebhook(raw, headers, { secret: undefined }), 'no_credentials');
    refused(() => verifyWebhook(raw, headers, undefined as never), 'no_credentials');
  });

  test('a forged body, a wrong secret, a tampered or malformed signature are refused', () => {
    const { raw, headers } = delivery();
    const forged = Buffer.from(raw.toString('utf8').replace('150000', '150001'));
    refused(() => verifyWebhook(forged, headers, { secret, now }), 'bad_signature');
    refused(() => verifyWebhook(raw, headers, { secret: 'wh_tok_wrong', now }), 'bad_signature');
    const sig = String(headers.signature);
    refused(
      () => verifyWebhook(raw, { ...headers, signature: sig.slice(0, -1) + (sig.endsWith('0') ? '1' : '0') }, { secret, now }),
      'bad_signature',
    );
    refused(() => verifyWebhook(raw, { ...headers, signature: sig.slice(0, 32) }, { secret, now }), 'bad_signature');
    refused(() => verifyWebhook(raw, { ...headers, signature: `sha256=${sig}` }, { secret, now }), 'bad_signature');
    refused(() => verifyWebhook(raw, { ...headers, signature: sig.replace(/./, 'z') }, { secret, now }), 'bad_signature');
    // Re-serialised JSON (spaces) is other bytes: the signature covers the raw body only.
    refused(() => verifyWebhook(JSON.stringify(JSON.parse(raw.toString()), null, 1), headers, { secret, now }), 'bad_signature');
    // The same signature is accepted in upper case hex (it is the same digest).
    assert.equal(verifyWebhook(raw, { ...headers, signature: sig.toUpperCase() }, { secret, now }).id, 'evt_01J9Z');
  });

  test('a wrong or missing token is refused in token mode, and with both credentials', () => {
    const { raw, headers } = delivery();
    refused(() => verifyWebhook(raw, { ...headers, 'x-webhook-token': 'wh_hdr_other' }, { token, now }), 'bad_token');
    refused(() => verifyWebhook(raw, { ...headers, 'x-webhook-token': `${token}x` }, { token, now }), 'bad_token');
    refused(() => verifyWebhook(raw, { ...headers, 'x-webhook-token': 'wh_hdr_other' }, { secret, token, now }), 'bad_token');
    refused(() => verifyWebhook(raw, { ...headers, 'x-webhook-token': undefined }, { token, now }), 'missing_header');
  });

  test('missing, empty or repeated headers are refused', () => {
    const { raw, headers } = delivery();
    for (const name of ['signature', 'x-webhook-id', 'x-webhook-event']) {
      refused(() => verifyWebhook(raw, { ...headers, [name]: undefined }, { secret, now }), 'missing_header');
      refused(() => verifyWebhook(raw, { ...headers, [name]: '' }, { secret, now }), 'missing_header');
      refused(() => verifyWebhook(raw, { ...headers, [name]: [String(headers[name]), String(headers[name])] }, { secret, now }), 'duplicate_header');
    }
    // The same name twice in different case is two values.
    refused(() => verifyWebhook(raw, { ...headers, Signature: String(headers.signature) }, { secret, now }), 'duplicate_header');
    // fetch Headers joins repeats into one value, which cannot match.
    const joined = new Headers(headers as Record<string, string>);
    joined.append('signature', String(headers.signature));
    refused(() => verifyWebhook(raw, joined, { secret, now }), 'bad_signature');
    // An unsigned delivery: no Signature header at all.
    refused(() => verifyWebhook(raw, { ...headers, signature: undefined }, { secret, token, now }), 'missing_header');
    refused(() => verifyWebhook(raw, null as never, { secret, now }), 'missing_header');
  });

  test('x-webhook-id and x-webhook-event must be the signed body’s id and event', () => {
    const { raw, headers } = delivery();
    refused(() => verifyWebhook(raw, { ...headers, 'x-webhook-id': 'evt_other' }, { secret, now }), 'id_mismatch');
    refused(() => verifyWebhook(raw, { ...headers, 'x-webhook-id': `${headers['x-webhook-id']}, evt_other` }, { secret, now }), 'id_mismatch');
    refused(() => verifyWebhook(raw, { ...headers, 'x-webhook-event': 'charge.failed' }, { secret, now }), 'event_mismatch');
  });

  test('the signed created_at must be within the tolerance (default 4 days), and not in the future', () => {
    const { raw, headers } = delivery();
    const created = Date.parse(createdAt);
    // The last automatic retry (72 h + 10 % jitter) still passes with the default.
    assert.equal(verifyWebhook(raw, headers, { secret, now: created + 79.2 * 3600_000 }).id, 'evt_01J9Z');
    refused(() => verifyWebhook(raw, headers, { secret, now: created + 4 * 86400_000 + 1 }), 'timestamp_out_of_tolerance');
    refused(() => verifyWebhook(raw, headers, { secret, now: created + 301_000, tolerance: 300 }), 'timestamp_out_of_tolerance');
    assert.equal(verifyWebhook(raw, headers, { secret, now: created + 299_000, tolerance: 300 }).id, 'evt_01J9Z');
    refused(() => verifyWebhook(raw, headers, { secret, now: new Date(created - 6 * 60_000) }), 'timestamp_out_of_tolerance');
    assert.equal(verifyWebhook(raw, headers, { secret, now: created + 400 * 86400_000, tolerance: false }).id, 'evt_01J9Z');
    const bad = delivery({ created_at: 'yesterday' });
    refused(() => verifyWebhook(bad.raw, bad.headers, { secret, now }), 'malformed_body');
  });

  test('bodies that are not a signed standard event are refused', () => {
    const sign = (body: string, extra: Record<string, string> = {}) => ({
      'x-webhook-id': 'evt_1',
      'x-webhook-event': 'charge.paid',
      signature: createHmac('sha256', secret).update(body).digest('hex'),
      ...extra,
    });
    for (const body of ['not json', '[]', 'null', '{"id":"evt_1","event":"charge.paid"}']) {
      refused(() => verifyWebhook(body, sign(body), { secret, now }), 'malformed_body');
    }
    const legacy = JSON.stringify({ charge: { id: 'ch_1' }, event: { type: 'charge.paid', timestamp: 1767225600, environment: 'test' } });
    refused(() => verifyWebhook(legacy, sign(legacy), { secret, now }), 'unsupported_format');
    const { headers } = delivery();
    refused(() => verifyWebhook({ id: 'evt_01J9Z' } as never, headers, { secret, now }), 'malformed_body');
    refused(() => verifyWebhook(undefined as never, headers, { secret, now }), 'malformed_body');
  });
});
