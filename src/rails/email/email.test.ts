import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import pino from 'pino';
import { parseMail, startSmtpSink, type SmtpSink } from '../../../test/smtp-sink.ts';
import { paymentLinkMessage } from '../messages.ts';
import { EmailError, SandboxEmail, SmtpEmail, smtpError } from './index.ts';

const logger = pino({ level: 'silent' });
const FROM = 'Recaudo <no-reply@recaudo.local>';
const CREDENTIALS = { user: 'recaudo', pass: 'p@ss:wörd/1' };

const spanish = {
  subject: 'Solicitud de pago — cuota de junio: ¿ya la pagó? Ñandú',
  text: 'Hola, señora Peña:\n\nLe recordamos el pago de la cuota de administración por $ 150.000.\nGracias por su atención.\n',
  html: '<p>Hola, señora <strong>Peña</strong>: cuota de administración por $ 150.000. ¡Gracias!</p>',
};

describe('SMTP e-mail adapter', () => {
  let sink: SmtpSink;
  let rail: SmtpEmail;
  before(async () => {
    sink = await startSmtpSink({ auth: CREDENTIALS });
    rail = new SmtpEmail({ url: sink.url(CREDENTIALS), from: FROM, logger });
  });
  after(async () => {
    await rail.close();
    await sink.close();
  });

  test('delivers UTF-8 Spanish text, HTML and an attachment with the right headers', async () => {
    const pdf = Buffer.from('%PDF-1.4 factura electrónica');
    const result = await rail.send({
      to: 'Ana Peña <ana.pena@example.co>',
      ...spanish,
      attachments: [{ filename: 'factura-001.pdf', content: pdf, contentType: 'application/pdf' }],
      reference: 'pmsg_01',
    });
    const got = await sink.nextMessage();
    assert.equal(got.user, 'recaudo', 'authenticated with the URL credentials');
    assert.equal(got.from, 'no-reply@recaudo.local');
    assert.deepEqual(got.to, ['ana.pena@example.co']);

    const mail = parseMail(got.raw);
    assert.match(result.messageId, /^<[^<>@\s]+@recaudo\.local>$/);
    assert.equal(mail.header('message-id'), result.messageId);
    assert.equal(mail.header('from'), 'Recaudo <no-reply@recaudo.local>');
    assert.equal(mail.header('to'), 'Ana Peña <ana.pena@example.co>');
    assert.equal(mail.header('subject'), spanish.subject);
    assert.equal(mail.header('x-recaudo-reference'), 'pmsg_01');
    assert.ok(mail.header('date'));
    assert.equal(mail.text, spanish.text);
    assert.equal(mail.html, spanish.html);
    assert.equal(mail.attachments.length, 1);
    assert.equal(mail.attachments[0].filename, 'factura-001.pdf');
    assert.equal(mail.attachments[0].contentType, 'application/pdf');
    assert.deepEqual(mail.attachments[0].content, pdf);
    for (const part of mail.parts.filter((p) => p.contentType.startsWith('text/'))) {
      assert.equal(part.params.charset?.toLowerCase(), 'utf-8');
    }
  });

  test('the payment link e-mail arrives as written, with the company as sender name', async () => {
    const m = paymentLinkMessage({
      companyName: 'Panadería "La Espiga" <S.A.S.>',
      title: 'Pedido de cumpleaños',
      amountText: '$ 150.000',
      link: 'https://pagos.recaudo.co/p/pay_01abc',
    });
    await rail.send({ to: ['comprador@example.co', 'copia@example.co'], ...m.email, fromName: 'Panadería "La Espiga" <S.A.S.>' });
    const got = await sink.nextMessage();
    assert.deepEqual(got.to, ['comprador@example.co', 'copia@example.co']);
    const mail = parseMail(got.raw);
    assert.equal(mail.header('subject'), 'Panadería "La Espiga" <S.A.S.>: solicitud de pago por $ 150.000');
    assert.match(mail.header('from') ?? '', /<no-reply@recaudo\.local>$/);
    assert.match(mail.header('from') ?? '', /Panadería/);
    assert.equal(mail.text, m.email.text);
    assert.equal(mail.html, m.email.html);
    assert.match(mail.html ?? '', /Panadería &quot;La Espiga&quot; &lt;S\.A\.S\.&gt;/);
  });

  test('a line break in the subject cannot add a header or a recipient', async () => {
    await rail.send({ to: 'ana@example.co', subject: 'Hola\r\nBcc: intruso@example.co', text: 'x' });
    const got = await sink.nextMessage();
    assert.deepEqual(got.to, ['ana@example.co']);
    const mail = parseMail(got.raw);
    assert.equal(mail.header('bcc'), undefined);
    assert.equal(mail.header('subject'), 'Hola Bcc: intruso@example.co');
  });

  test('a lone dot on a line of the body survives (dot-stuffing)', async () => {
    await rail.send({ to: 'ana@example.co', subject: 'Puntos', text: 'línea 1\n.\n..\nfin' });
    const mail = parseMail((await sink.nextMessage()).raw);
    assert.equal(mail.text, 'línea 1\n.\n..\nfin');
  });

  test('invalid addresses are refused before connecting', async () => {
    const before = sink.messages.length;
    for (const to of ['no-es-correo', 'a@b', 'x@y.co\r\nRCPT TO:<z@y.co>', ''] as const) {
      await assert.rejects(rail.send({ to, subject: 'a', text: 'b' }), (e: unknown) => e instanceof EmailError && e.code === 'invalid_request', to);
    }
    await assert.rejects(rail.send({ to: [], subject: 'a', text: 'b' }), EmailError);
    await assert.rejects(rail.send({ to: 'a@b.co', subject: ' ', text: 'b' }), EmailError);
    assert.equal(sink.messages.length, before);
  });

  test('a recipient refused for good is not retryable', async () => {
    sink.rejectRecipient = (address) => (address.startsWith('nadie@') ? '550 5.1.1 no such user' : undefined);
    try {
      await assert.rejects(rail.send({ to: 'nadie@example.co', subject: 'a', text: 'b' }), (e: unknown) => {
        assert.ok(e instanceof EmailError, String(e));
        assert.deepEqual([e.code, e.retryable, e.outcomeUnknown, e.smtpCode], ['rejected', false, false, 550]);
        return true;
      });
    } finally {
      sink.rejectRecipient = undefined;
    }
  });

  test('a temporary refusal of the message is retryable', async () => {
    sink.rejectData = '451 4.3.0 try again later';
    try {
      await assert.rejects(rail.send({ to: 'ana@example.co', subject: 'a', text: 'b' }), (e: unknown) => {
        assert.ok(e instanceof EmailError, String(e));
        assert.deepEqual([e.code, e.retryable, e.outcomeUnknown, e.smtpCode], ['unavailable', true, false, 451]);
        return true;
      });
    } finally {
      sink.rejectData = undefined;
    }
  });

  test('wrong credentials are a configuration problem', async () => {
    const wrong = new SmtpEmail({ url: sink.url({ user: 'recaudo', pass: 'mala' }), from: FROM, logger });
    try {
      await assert.rejects(wrong.send({ to: 'ana@example.co', subject: 'a', text: 'b' }), (e: unknown) => {
        assert.ok(e instanceof EmailError, String(e));
        assert.equal(e.code, 'configuration');
        assert.equal(e.retryable, true);
        return true;
      });
    } finally {
      await wrong.close();
    }
  });

  test('a server that cannot be reached: retryable, known not sent', async () => {
    const closed = net.createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as net.AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const down = new SmtpEmail({ url: `smtp://127.0.0.1:${port}`, from: FROM, logger });
    try {
      await assert.rejects(down.send({ to: 'ana@example.co', subject: 'a', text: 'b' }), (e: unknown) => {
        assert.ok(e instanceof EmailError, String(e));
        assert.deepEqual([e.code, e.retryable, e.outcomeUnknown], ['unavailable', true, false]);
        return true;
      });
    } finally {
      await down.close();
    }
  });

  test('a server that never greets times out (timeouts can be set in SMTP_URL)', async () => {
    const mute = await startSmtpSink();
    mute.silent = true;
    const slow = new SmtpEmail({ url: `${mute.url()}?greetingTimeout=150`, from: FROM, logger });
    const started = Date.now();
    try {
      await assert.rejects(slow.send({ to: 'ana@example.co', subject: 'a', text: 'b' }), (e: unknown) => {
        assert.ok(e instanceof EmailError, String(e));
        assert.deepEqual([e.code, e.retryable, e.outcomeUnknown], ['unavailable', true, false]);
        return true;
      });
      assert.ok(Date.now() - started < 3_000);
    } finally {
      await slow.close();
      await mute.close();
    }
  });

  test('a connection lost after the message was handed over leaves the outcome unknown', () => {
    const e = smtpError(Object.assign(new Error('Connection closed unexpectedly'), { code: 'ECONNECTION', command: 'DATA' }));
    assert.deepEqual([e.code, e.retryable, e.outcomeUnknown], ['unavailable', true, true]);
  });
});

describe('sandbox e-mail adapter', () => {
  test('records every message in memory', async () => {
    const rail = new SandboxEmail({ from: FROM, logger });
    const result = await rail.send({ to: ['Ana Peña <ana@example.co>', 'luis@example.co'], ...spanish, fromName: 'Tienda Ñandú', reference: 'r1' });
    assert.match(result.messageId, /^<[^<>@\s]+@recaudo\.local>$/);
    assert.equal(rail.sent.length, 1);
    const [m] = rail.sent;
    assert.equal(m.messageId, result.messageId);
    assert.deepEqual(m.from, { name: 'Tienda Ñandú', address: 'no-reply@recaudo.local' });
    assert.deepEqual(m.to, [
      { name: 'Ana Peña', address: 'ana@example.co' },
      { name: '', address: 'luis@example.co' },
    ]);
    assert.equal(m.subject, spanish.subject);
    assert.equal(m.text, spanish.text);
    assert.equal(m.html, spanish.html);
    assert.equal(m.reference, 'r1');
    assert.equal(rail.to('ANA@example.co').length, 1);
    assert.equal(rail.to('otro@example.co').length, 0);
    await assert.rejects(rail.send({ to: 'no-es-correo', subject: 'a', text: 'b' }), EmailError);
    rail.clear();
    assert.equal(rail.sent.length, 0);
  });

  test('keeps only the most recent messages', async () => {
    const rail = new SandboxEmail({ from: FROM, logger, keep: 2 });
    for (const subject of ['uno', 'dos', 'tres']) await rail.send({ to: 'ana@example.co', subject, text: 'x' });
    assert.deepEqual(
      rail.sent.map((m) => m.subject),
      ['dos', 'tres'],
    );
  });

  test('refuses a sender that is not an address', () => {
    assert.throws(() => new SandboxEmail({ from: 'Recaudo', logger }), /SMTP_FROM/);
    assert.throws(() => new SmtpEmail({ url: 'smtp://127.0.0.1:25', from: 'nadie', logger }), /SMTP_FROM/);
  });
});
