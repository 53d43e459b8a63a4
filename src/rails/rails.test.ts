import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type net from 'node:net';
import pino from 'pino';
import { loadConfig } from '../config.ts';
import { parseMail, startSmtpSink } from '../../test/smtp-sink.ts';
import {
  HttpMessaging,
  SandboxEmail,
  SandboxMessaging,
  SmtpEmail,
  createRails,
  formatAmount,
  paymentLinkMessage,
  type RailEnvironment,
} from './index.ts';

const logger = pino({ level: 'silent' });

describe('rails configuration and factory', () => {
  test('defaults: sandboxes, 500 ms sandbox delay, the default sender', () => {
    const config = loadConfig({});
    assert.equal(config.messagingProvider, 'sandbox');
    assert.equal(config.messagingHttpUrl, undefined);
    assert.equal(config.messagingHttpToken, undefined);
    assert.equal(config.messagingHttpTimeoutMs, 10_000);
    assert.equal(config.messagingSandboxDelayMs, 500);
    assert.equal(config.smtpUrl, undefined);
    assert.equal(config.smtpFrom, 'Recaudo <no-reply@recaudo.local>');
  });

  test('reads and checks every setting', () => {
    const config = loadConfig({
      MESSAGING_PROVIDER: 'http',
      MESSAGING_HTTP_URL: 'https://sms-gateway.example.co/send',
      MESSAGING_HTTP_TOKEN: 'tok',
      MESSAGING_HTTP_TIMEOUT_MS: '2500',
      MESSAGING_SANDBOX_DELAY_MS: '0',
      SMTP_URL: 'smtps://u:p@mail.example.co:465',
      SMTP_FROM: 'Cobros <cobros@example.co>',
    });
    assert.deepEqual(
      [
        config.messagingProvider,
        config.messagingHttpUrl,
        config.messagingHttpToken,
        config.messagingHttpTimeoutMs,
        config.messagingSandboxDelayMs,
        config.smtpUrl,
        config.smtpFrom,
      ],
      ['http', 'https://sms-gateway.example.co/send', 'tok', 2500, 0, 'smtps://u:p@mail.example.co:465', 'Cobros <cobros@example.co>'],
    );
    assert.throws(() => loadConfig({ MESSAGING_PROVIDER: 'twilio' }), /MESSAGING_PROVIDER/);
    assert.throws(() => loadConfig({ MESSAGING_PROVIDER: 'http' }), /MESSAGING_HTTP_URL/);
    assert.throws(() => loadConfig({ MESSAGING_HTTP_URL: 'ftp://x' }), /MESSAGING_HTTP_URL/);
    assert.throws(() => loadConfig({ MESSAGING_SANDBOX_DELAY_MS: '-1' }), /MESSAGING_SANDBOX_DELAY_MS/);
    assert.throws(() => loadConfig({ MESSAGING_HTTP_TIMEOUT_MS: '0' }), /MESSAGING_HTTP_TIMEOUT_MS/);
    assert.throws(() => loadConfig({ SMTP_URL: 'mail.example.co:25' }), /SMTP_URL/);
  });

  test('test keys always get the sandboxes; live gets refusals when nothing is configured (never a simulation)', async () => {
    const rails = createRails(loadConfig({ MESSAGING_SANDBOX_DELAY_MS: '0' }), logger);
    try {
      assert.ok(rails.test.messaging instanceof SandboxMessaging);
      assert.ok(rails.test.email instanceof SandboxEmail);
      assert.equal(rails.live.messaging.provider, 'none');
      assert.equal(rails.live.email.provider, 'none');
      await assert.rejects(rails.live.messaging.send({ to: '+573001234567', text: 'x', reference: 'r' }), /channel_not_configured/);
      await assert.rejects(rails.live.email.send({ to: 'a@example.co', subject: 's', text: 't' }), /channel_not_configured/);
      assert.notEqual(rails.live.messaging, rails.test.messaging);
      assert.notEqual(rails.live.email, rails.test.email);
      assert.equal(rails.contact({ companyId: 'co_a', environment: 'test' }), rails.test);
      assert.equal(rails.contact({ companyId: 'co_a', environment: 'live' }), rails.live);
    } finally {
      await rails.close();
    }
  });

  test("a company's own contact rails serve only that company and environment; their reports are heard", async () => {
    const rails = createRails(loadConfig({ MESSAGING_SANDBOX_DELAY_MS: '0' }), logger);
    const own = new SandboxMessaging({ delayMs: 0, logger });
    const heard: [string, RailEnvironment, string | undefined][] = [];
    rails.onMessageStatus((_id, status, detail, env) => void heard.push([status, env, detail.reference]));
    try {
      const uninstall = rails.installContact({ companyId: 'co_own', environment: 'live' }, { messaging: own });
      assert.equal(rails.contact({ companyId: 'co_own', environment: 'live' }).messaging, own);
      assert.equal(rails.contact({ companyId: 'co_own', environment: 'live' }).email, rails.live.email, "ports not given stay the environment's");
      assert.equal(rails.contact({ companyId: 'co_own', environment: 'test' }).messaging, rails.test.messaging);
      assert.equal(rails.contact({ companyId: 'co_other', environment: 'live' }).messaging, rails.live.messaging);
      await rails.contact({ companyId: 'co_own', environment: 'live' }).messaging.send({ to: '+573001111111', text: 'x', reference: 'own' });
      await own.idle();
      assert.deepEqual(heard, [['replied', 'live', 'own']]);
      uninstall();
      assert.equal(rails.contact({ companyId: 'co_own', environment: 'live' }).messaging, rails.live.messaging);
    } finally {
      await own.close();
      await rails.close();
    }
  });

  test('configured providers serve live only', async () => {
    const rails = createRails(
      loadConfig({ MESSAGING_PROVIDER: 'http', MESSAGING_HTTP_URL: 'http://127.0.0.1:9/send', SMTP_URL: 'smtp://127.0.0.1:9' }),
      logger,
    );
    try {
      assert.ok(rails.live.messaging instanceof HttpMessaging);
      assert.ok(rails.live.email instanceof SmtpEmail);
      assert.ok(rails.test.messaging instanceof SandboxMessaging);
      assert.ok(rails.test.email instanceof SandboxEmail);
    } finally {
      await rails.close();
    }
  });

  test('onMessageStatus tells which environment a status belongs to', async () => {
    const rails = createRails(loadConfig({ MESSAGING_SANDBOX_DELAY_MS: '0' }), logger);
    const heard: [string, string, RailEnvironment, string | undefined][] = [];
    const off = rails.onMessageStatus((id, status, detail, env) => void heard.push([id, status, env, detail.reference]));
    // Live reports come from a live provider: a company's own rail here (a sandbox stands in for it).
    const liveRail = new SandboxMessaging({ delayMs: 0, logger });
    rails.installContact({ companyId: 'co_a', environment: 'live' }, { messaging: liveRail });
    try {
      const t = await rails
        .contact({ companyId: 'co_a', environment: 'test' })
        .messaging.send({ to: '+573000000000', text: 'x', reference: 'in-test' });
      const l = await rails
        .contact({ companyId: 'co_a', environment: 'live' })
        .messaging.send({ to: '+573001111111', text: 'x', reference: 'in-live' });
      await Promise.all([rails.test.messaging.idle(), liveRail.idle()]);
      assert.deepEqual(
        heard.sort((a, b) => a[3]!.localeCompare(b[3]!)),
        [
          [l.providerMessageId, 'replied', 'live', 'in-live'],
          [t.providerMessageId, 'failed', 'test', 'in-test'],
        ],
      );
      off();
      await rails.test.messaging.send({ to: '+573001234567', text: 'x', reference: 'after' });
      await rails.test.messaging.idle();
      assert.equal(heard.length, 2);
    } finally {
      await rails.close();
    }
  });

  test('a payment link goes out through the configured providers', async () => {
    const received: { auth: string | undefined; body: Record<string, unknown> }[] = [];
    const gateway = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        received.push({ auth: req.headers.authorization, body: JSON.parse(Buffer.concat(chunks).toString('utf8')) });
        res.writeHead(202, { 'content-type': 'application/json' }).end('{"id":"gw-1"}');
      });
    });
    await new Promise<void>((resolve) => gateway.listen(0, '127.0.0.1', resolve));
    const sink = await startSmtpSink();
    const port = (gateway.address() as net.AddressInfo).port;
    const rails = createRails(
      loadConfig({
        MESSAGING_PROVIDER: 'http',
        MESSAGING_HTTP_URL: `http://127.0.0.1:${port}/send`,
        MESSAGING_HTTP_TOKEN: 'secreto',
        SMTP_URL: sink.url(),
        SMTP_FROM: 'Cobros Recaudo <cobros@recaudo.local>',
      }),
      logger,
    );
    try {
      const text = paymentLinkMessage({
        companyName: 'Ferretería El Tornillo',
        title: 'Factura FE-1024',
        amountText: formatAmount(150000),
        link: 'https://pagos.recaudo.co/p/pay_01',
      });
      const sms = await rails.live.messaging.send({ to: '+573001234567', text: text.sms, reference: 'pmsg_1' });
      assert.equal(sms.providerMessageId, 'gw-1');
      assert.equal(received[0].auth, 'Bearer secreto');
      assert.equal(received[0].body.text, text.sms);

      const mail = await rails.live.email.send({ to: 'cliente@example.co', ...text.email, fromName: 'Ferretería El Tornillo' });
      const got = parseMail((await sink.nextMessage()).raw);
      assert.equal(got.header('message-id'), mail.messageId);
      assert.equal(got.header('from'), 'Ferretería El Tornillo <cobros@recaudo.local>');
      assert.equal(got.header('subject'), 'Ferretería El Tornillo: solicitud de pago por $ 150.000');
      assert.equal(got.text, text.email.text);
      assert.equal(got.html, text.email.html);
      assert.equal(rails.test.email.sent.length, 0, 'the test sandbox saw nothing');
    } finally {
      await rails.close();
      await sink.close();
      gateway.closeAllConnections();
      await new Promise<void>((resolve) => gateway.close(() => resolve()));
    }
  });
});
