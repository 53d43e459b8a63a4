import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import net from 'node:net';
import pino from 'pino';
import { HttpMessaging, MessagingError, type HttpMessagePayload, type MessageStatus, type StatusDetail } from './index.ts';

const logger = pino({ level: 'silent' });
const TOKEN = 'tok_sécret-123';

interface Received {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  body: HttpMessagePayload;
}

/** A local provider endpoint; `respond` decides each answer. */
function provider() {
  const received: Received[] = [];
  let respond: (req: Received, res: http.ServerResponse) => void = (_req, res) => {
    res.writeHead(202, { 'content-type': 'application/json' }).end(JSON.stringify({ id: `prov-${received.length}` }));
  };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const r: Received = {
        method: req.method ?? '',
        url: req.url ?? '',
        headers: req.headers,
        body: JSON.parse(Buffer.concat(chunks).toString('utf8')),
      };
      received.push(r);
      respond(r, res);
    });
  });
  return {
    received,
    server,
    set respond(fn: typeof respond) {
      respond = fn;
    },
    url: () => `http://127.0.0.1:${(server.address() as net.AddressInfo).port}/sms/send`,
  };
}

const message = { to: '+573001234567', text: 'Tienda Ñandú le envió una solicitud de pago por $ 150.000.', reference: 'pmsg_abc' };

describe('http messaging adapter', () => {
  const p = provider();
  before(() => new Promise<void>((resolve) => p.server.listen(0, '127.0.0.1', resolve)));
  after(() => {
    p.server.closeAllConnections();
    return new Promise<void>((resolve) => p.server.close(() => resolve()));
  });
  const rail = (opts: { token?: string; timeoutMs?: number; url?: string } = {}) =>
    new HttpMessaging({ url: opts.url ?? p.url(), token: 'token' in opts ? opts.token : TOKEN, timeoutMs: opts.timeoutMs ?? 2_000, logger });

  test('POSTs the message as JSON with the token and the reference as idempotency key', async () => {
    p.respond = (_req, res) => res.writeHead(202, { 'content-type': 'application/json' }).end('{"id":"prov-42","status":"queued"}');
    const before = p.received.length;
    const result = await rail().send({ ...message, template: 'payment_link', variables: { empresa: 'Tienda Ñandú' } });
    assert.deepEqual(result, { providerMessageId: 'prov-42', status: 'queued' });
    const r = p.received[before];
    assert.equal(r.method, 'POST');
    assert.equal(r.url, '/sms/send');
    assert.equal(r.headers.authorization, `Bearer ${TOKEN}`);
    assert.equal(r.headers['idempotency-key'], 'pmsg_abc');
    assert.match(r.headers['content-type'] ?? '', /^application\/json/);
    assert.match(r.body.id, /^msg_[0-9a-z]{26}$/);
    assert.deepEqual(
      { ...r.body, id: undefined },
      {
        id: undefined,
        to: '+573001234567',
        text: message.text,
        template: 'payment_link',
        variables: { empresa: 'Tienda Ñandú' },
        reference: 'pmsg_abc',
      },
    );
  });

  test('without a token no authorization header is sent; without an id in the answer our id is the provider id', async () => {
    p.respond = (_req, res) => res.writeHead(200).end();
    const before = p.received.length;
    const result = await rail({ token: undefined }).send(message);
    const r = p.received[before];
    assert.equal(r.headers.authorization, undefined);
    assert.equal(result.providerMessageId, r.body.id);
    assert.equal(r.body.template, null);
    assert.deepEqual(r.body.variables, {});
  });

  test('answers map to errors: 4xx rejected, 429 retryable, 5xx retryable with an unknown outcome', async () => {
    const cases: [number, string, boolean, boolean][] = [
      [400, 'rejected', false, false],
      [422, 'rejected', false, false],
      [401, 'rejected', false, false],
      [429, 'provider_error', true, false],
      [500, 'provider_error', true, true],
      [503, 'provider_error', true, true],
      [302, 'rejected', false, false],
    ];
    for (const [status, code, retryable, unknown] of cases) {
      p.respond = (_req, res) => res.writeHead(status, { location: 'http://127.0.0.1:1/elsewhere' }).end('{"error":"número inválido"}');
      await assert.rejects(rail().send(message), (e: unknown) => {
        assert.ok(e instanceof MessagingError, String(e));
        assert.deepEqual([e.code, e.retryable, e.outcomeUnknown, e.httpStatus], [code, retryable, unknown, status], `HTTP ${status}`);
        return true;
      });
    }
  });

  test('a provider that does not answer in time gives a timeout with an unknown outcome', async () => {
    p.respond = () => {}; // never answers
    const started = Date.now();
    await assert.rejects(rail({ timeoutMs: 150 }).send(message), (e: unknown) => {
      assert.ok(e instanceof MessagingError);
      assert.deepEqual([e.code, e.retryable, e.outcomeUnknown], ['timeout', true, true]);
      return true;
    });
    assert.ok(Date.now() - started < 2_000);
  });

  test('a provider that cannot be reached: retryable, known not sent', async () => {
    const closed = net.createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as net.AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    await assert.rejects(rail({ url: `http://127.0.0.1:${port}/x` }).send(message), (e: unknown) => {
      assert.ok(e instanceof MessagingError);
      assert.deepEqual([e.code, e.retryable, e.outcomeUnknown], ['network', true, false]);
      return true;
    });
  });

  test('an invalid message is refused before any request', async () => {
    const before = p.received.length;
    await assert.rejects(rail().send({ ...message, to: '3001234567' }), (e: unknown) => e instanceof MessagingError && e.code === 'invalid_request');
    assert.equal(p.received.length, before);
  });

  test('close waits for a send under way', async () => {
    p.respond = (_req, res) => setTimeout(() => res.writeHead(202).end('{"id":"slow"}'), 100);
    const r = rail();
    const sending = r.send(message);
    await new Promise((resolve) => setTimeout(resolve, 20));
    await r.close();
    assert.deepEqual(await sending, { providerMessageId: 'slow', status: 'queued' });
    await assert.rejects(r.send(message), /closed/);
  });

  describe('status callbacks', () => {
    const calls: { id: string; status: MessageStatus; detail: StatusDetail }[] = [];
    // Callbacks need no provider endpoint.
    const callbackRail = (token: string | undefined = TOKEN) => new HttpMessaging({ url: 'http://127.0.0.1:9/unused', token, logger });
    const r = callbackRail();
    r.onStatus((id, status, detail) => void calls.push({ id, status, detail }));
    const auth = { authorization: `Bearer ${TOKEN}` };

    test('an authenticated report reaches the listeners', async () => {
      const res = await r.receiveStatus({
        headers: auth,
        body: {
          provider_message_id: 'prov-42',
          status: 'replied',
          reference: 'pmsg_abc',
          to: '+573001234567',
          at: '2025-05-15T10:00:00-05:00',
          reply_text: 'Ya pagué, gracias',
        },
      });
      assert.deepEqual(res, { statusCode: 200, body: { ok: true } });
      assert.equal(calls.length, 1);
      assert.equal(calls[0].id, 'prov-42');
      assert.equal(calls[0].status, 'replied');
      assert.deepEqual(calls[0].detail, {
        reference: 'pmsg_abc',
        to: '+573001234567',
        at: new Date('2025-05-15T15:00:00Z'),
        replyText: 'Ya pagué, gracias',
      });
    });

    test('a failed report carries its reason; a missing time is now', async () => {
      const res = await r.receiveStatus({
        headers: auth,
        body: { provider_message_id: 'prov-43', status: 'failed', reason: 'number_not_on_network' },
      });
      assert.equal(res.statusCode, 200);
      const last = calls.at(-1)!;
      assert.equal(last.detail.reason, 'number_not_on_network');
      assert.ok(Math.abs(last.detail.at.getTime() - Date.now()) < 5_000);
    });

    test('refuses a missing or wrong token, and any report when no token is configured', async () => {
      const before = calls.length;
      const body = { provider_message_id: 'prov-1', status: 'delivered' };
      assert.equal((await r.receiveStatus({ headers: {}, body })).statusCode, 401);
      assert.equal((await r.receiveStatus({ headers: { authorization: `Bearer ${TOKEN}x` }, body })).statusCode, 401);
      assert.equal((await r.receiveStatus({ headers: { authorization: TOKEN }, body })).statusCode, 401);
      const open = callbackRail(undefined);
      open.onStatus(() => assert.fail('must not be called'));
      assert.equal((await open.receiveStatus({ headers: { authorization: 'Bearer ' }, body })).statusCode, 401);
      assert.equal(calls.length, before);
    });

    test('refuses a malformed report with 400', async () => {
      for (const body of [
        null,
        'x',
        {},
        { provider_message_id: 'p', status: 'read' },
        { provider_message_id: '', status: 'delivered' },
        { provider_message_id: 'p', status: 'delivered', at: 'yesterday' },
      ]) {
        const res = await r.receiveStatus({ headers: auth, body });
        assert.equal(res.statusCode, 400, JSON.stringify(body));
        assert.ok('error' in res.body);
      }
    });

    test('a listener that fails makes the provider retry (500)', async () => {
      const failing = callbackRail();
      failing.onStatus(() => {
        throw new Error('database down');
      });
      const res = await failing.receiveStatus({ headers: auth, body: { provider_message_id: 'p', status: 'delivered' } });
      assert.equal(res.statusCode, 500);
    });
  });
});
