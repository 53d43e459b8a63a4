import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { sql } from 'kysely';
import { createHarness, expectError, expectValidation, type Company, type Harness } from '../../../test/harness.ts';
import { expectScoped } from '../../../test/auth-matrix.ts';
import {
  campaignCompany,
  jpegBytes,
  mp4Bytes,
  nextDispatchAt,
  pngBytes,
  runDueDispatches,
  startMediaServer,
} from '../../../test/support/campaigns.ts';
import { MessagingError, type MessagingPort } from '../../rails/index.ts';
import { configureCampaigns } from './settings.ts';

type MediaServer = Awaited<ReturnType<typeof startMediaServer>>;

/** Tuesday 3 March 2026, 10:00 in Bogotá: inside the contact hours. */
const TUESDAY_10 = '2026-03-03T15:00:00.000Z';

/** Puts the harness clock at `iso` and stops it following real time. */
function setClock(h: Harness, iso: string): void {
  h.clock.freeze();
  h.clock.advance(new Date(iso).getTime() - h.clock.now().getTime());
}

function advance(h: Harness, ms: number): void {
  h.clock.advance(ms);
}

async function messages(h: Harness, campaignId: string) {
  return h.runtime.deps.database.db.selectFrom('campaign_messages').selectAll().where('campaign_id', '=', campaignId).orderBy('seq').execute();
}

async function campaignEvents(h: Harness, campaignId: string) {
  return h.runtime.deps.database.db
    .selectFrom('events')
    .select(['type', 'data'])
    .where('type', 'like', 'payment.message.%')
    .where(sql<string>`data->'message'->>'campaign_id'`, '=', campaignId)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
}

/** The sandbox messages of a campaign (by reference). */
async function sentFor(h: Harness, campaignId: string) {
  const ids = new Set((await messages(h, campaignId)).map((m) => m.id));
  return h.runtime.deps.rails.test.messaging.sent.filter((m) => ids.has(m.reference));
}

let phoneSeq = 0;
/** Distinct phones per test (the PostgreSQL database is shared; the sandbox outcome is "delivered"). */
function phones(n: number): string[] {
  return Array.from({ length: n }, () => `+5730${String(1_000_000 + process.pid * 997 + ++phoneSeq * 13).slice(-7)}2`);
}

describe('campaigns', () => {
  let h: Harness;
  let media: MediaServer;
  let co: Company;

  before(async () => {
    h = await createHarness();
    configureCampaigns(h.runtime.deps, { rate: { perSecond: 2, burst: 2 }, phoneGapMs: 6_000, mediaTimeoutMs: 400 });
    media = await startMediaServer();
    media.route('/ok.png', { body: pngBytes(800, 600), contentType: 'image/png' });
    media.route('/portrait.jpg', { body: jpegBytes(1080, 1920), contentType: 'image/jpeg' });
    media.route('/jpeg-named.png', { body: jpegBytes(1200, 900), contentType: 'image/png' });
    media.route('/html-named.png', { body: Buffer.from('<html><body>hello</body></html>'), contentType: 'image/png' });
    media.route('/clip.mp4', { body: mp4Bytes(4096), contentType: 'video/mp4' });
    media.route('/clip-as-image.png', { body: mp4Bytes(4096), contentType: 'image/png' });
    media.route('/small.png', { body: pngBytes(500, 500), contentType: 'image/png' });
    media.route('/long.jpg', { body: jpegBytes(2400, 1800), contentType: 'image/jpeg' });
    media.route('/ratio.png', { body: pngBytes(1000, 600), contentType: 'image/png' });
    media.route('/big.png', { body: Buffer.concat([pngBytes(800, 600), Buffer.alloc(2 * 1024 * 1024)]), contentType: 'image/png' });
    media.route('/big-chunked.jpg', { body: jpegBytes(800, 600, { padTo: 3 * 1024 * 1024 }), contentType: 'image/jpeg', chunked: true });
    media.route('/big.mp4', { body: mp4Bytes(16 * 1024 * 1024 + 1), contentType: 'video/mp4' });
    media.route('/hang.png', { hang: true });
    media.route('/moved.png', { status: 302, headers: { location: '/ok.png' } });
    media.route('/error.png', { status: 500, body: Buffer.from('oops') });
    co = await campaignCompany(h);
    setClock(h, TUESDAY_10);
  });
  after(async () => {
    await media.close();
    await h.close();
  });

  const body = (extra: Record<string, unknown> = {}) => ({
    template: 'cobro_factura',
    phones: phones(2),
    image_url: media.url('/ok.png'),
    optional_1: 'Este mes tienes 10 % de descuento.',
    ...extra,
  });

  describe('POST /v1/campaigns/import-messages: rules', () => {
    test('without the company feature: 403 without a code, before anything else', async () => {
      const plain = await h.company();
      const res = await plain.req({ url: '/v1/campaigns/import-messages', body: { nonsense: true } });
      expectError(res, 403, null);
      assert.equal(res.body.code, undefined);
      const live = await plain.req({ url: '/v1/campaigns/import-messages', body: body(), env: 'live' });
      expectError(live, 403, null);
    });

    test('x-idempotency is required like on every POST', async () => {
      const res = await co.req({ url: '/v1/campaigns/import-messages', body: body(), idem: false });
      expectError(res, 409, 'idempotency_error', 10003);
    });

    test('202 {id, status queued, recipients, rejected}; the template by id or by name; the media fetched once', async () => {
      const before = media.hits.get('/ok.png') ?? 0;
      const p = phones(3);
      const res = await co.req({
        url: '/v1/campaigns/import-messages',
        body: body({ phones: [p[0], p[1], 'not-a-phone', p[0], p[2], '3001234567'] }),
        idem: 'camp-once',
      });
      assert.equal(res.status, 202, res.raw);
      assert.match(res.body.id, /^camp_/);
      assert.deepEqual(Object.keys(res.body).sort(), ['id', 'recipients', 'rejected', 'status']);
      assert.equal(res.body.status, 'queued');
      assert.equal(res.body.recipients, 3);
      assert.deepEqual(
        res.body.rejected.map((r: { phone: string }) => r.phone),
        ['not-a-phone', '3001234567'],
      );
      assert.ok(res.body.rejected.every((r: { reason: string }) => /E\.164/.test(r.reason)));
      assert.equal((media.hits.get('/ok.png') ?? 0) - before, 1);
      // A replay answers the same without fetching again.
      const again = await co.req({
        url: '/v1/campaigns/import-messages',
        body: body({ phones: [p[0], p[1], 'not-a-phone', p[0], p[2], '3001234567'] }),
        idem: 'camp-once',
      });
      assert.equal(again.status, 202);
      assert.deepEqual(again.body, res.body);
      assert.equal((media.hits.get('/ok.png') ?? 0) - before, 1);

      const byId = await co.req({ url: '/v1/campaigns/import-messages', body: body({ template: 'tpl_cobro_general' }) });
      assert.equal(byId.status, 202, byId.raw);
      const got = await co.req({ url: `/v1/campaigns/${res.body.id}` });
      assert.equal(got.status, 200, got.raw);
      assert.equal(got.body.template_id, 'tpl_cobro_factura');
      assert.deepEqual(got.body.media, {
        url: media.url('/ok.png'),
        content_type: 'image/png',
        bytes: pngBytes(800, 600).length,
        width: 800,
        height: 600,
      });
      assert.equal(got.body.counts.queued, 3);
    });

    test('template unknown or not selectable: 422 on template', async () => {
      for (const template of ['nope', 'tpl_recordatorio_pago', 'recordatorio_pago', 'cobro_promocional']) {
        expectValidation(await co.req({ url: '/v1/campaigns/import-messages', body: body({ template }) }), 'template');
      }
    });

    test('phones: all invalid is 422; an empty list or a non-string is 422', async () => {
      expectValidation(await co.req({ url: '/v1/campaigns/import-messages', body: body({ phones: ['123', '+0573001234567'] }) }), 'phones');
      expectValidation(await co.req({ url: '/v1/campaigns/import-messages', body: body({ phones: [] }) }), 'phones');
      expectValidation(await co.req({ url: '/v1/campaigns/import-messages', body: body({ phones: [573001234567] }) }));
    });

    test('optional_1..3 in order without gaps: a gap is 422 on the field after it', async () => {
      expectValidation(await co.req({ url: '/v1/campaigns/import-messages', body: body({ optional_1: null, optional_2: 'b' }) }), 'optional_2');
      expectValidation(await co.req({ url: '/v1/campaigns/import-messages', body: body({ optional_2: '', optional_3: 'c' }) }), 'optional_3');
      const ok = await co.req({ url: '/v1/campaigns/import-messages', body: body({ optional_2: 'b', optional_3: 'c' }) });
      assert.equal(ok.status, 202, ok.raw);
    });

    test('the media field is required for the type', async () => {
      expectValidation(await co.req({ url: '/v1/campaigns/import-messages', body: body({ image_url: undefined }) }), 'image_url');
      expectValidation(await co.req({ url: '/v1/campaigns/import-messages', body: body({ type: 'video' }) }), 'video_url');
    });
  });

  describe('media rules, judged from the bytes', () => {
    const post = (extra: Record<string, unknown>) => co.req({ url: '/v1/campaigns/import-messages', body: body(extra) });
    const expectMediaError = (res: Awaited<ReturnType<typeof post>>, field: string, pattern: RegExp) => {
      expectValidation(res, field);
      assert.match(res.body.errors[field].join(' '), pattern, res.raw);
    };

    test('a JPEG (9:16 portrait) passes; a JPEG behind a .png name is a JPEG', async () => {
      const portrait = await post({ image_url: media.url('/portrait.jpg') });
      assert.equal(portrait.status, 202, portrait.raw);
      const named = await post({ image_url: media.url('/jpeg-named.png') });
      assert.equal(named.status, 202, named.raw);
      const got = await co.req({ url: `/v1/campaigns/${named.body.id}` });
      assert.equal(got.body.media.content_type, 'image/jpeg');
      assert.equal(got.body.media.width, 1200);
    });

    test('wrong type: HTML or an MP4 behind a .png name; a PNG as the video', async () => {
      expectMediaError(await post({ image_url: media.url('/html-named.png') }), 'image_url', /JPEG or PNG/);
      expectMediaError(await post({ image_url: media.url('/clip-as-image.png') }), 'image_url', /JPEG or PNG/);
      expectMediaError(await post({ type: 'video', video_url: media.url('/ok.png') }), 'video_url', /MP4/);
    });

    test('an MP4 video passes with type video', async () => {
      const res = await post({ type: 'video', video_url: media.url('/clip.mp4'), image_url: undefined });
      assert.equal(res.status, 202, res.raw);
      const got = await co.req({ url: `/v1/campaigns/${res.body.id}` });
      assert.equal(got.body.type, 'video');
      assert.equal(got.body.media.content_type, 'video/mp4');
      assert.equal(got.body.media.width, null);
    });

    test('too big: an image over 2 MB (declared or streamed without a length), a video over 16 MB', async () => {
      expectMediaError(await post({ image_url: media.url('/big.png') }), 'image_url', /at most 2 MB/);
      expectMediaError(await post({ image_url: media.url('/big-chunked.jpg') }), 'image_url', /at most 2 MB/);
      expectMediaError(await post({ type: 'video', video_url: media.url('/big.mp4') }), 'video_url', /at most 16 MB/);
    });

    test('too small, too long, a ratio not allowed', async () => {
      expectMediaError(await post({ image_url: media.url('/small.png') }), 'image_url', /short side must be at least 600/);
      expectMediaError(await post({ image_url: media.url('/long.jpg') }), 'image_url', /long side must be at most 2048/);
      expectMediaError(await post({ image_url: media.url('/ratio.png') }), 'image_url', /ratio of 4:3, 9:16, 2:3 or 1:1/);
    });

    test('a redirect is followed (and judged again)', async () => {
      const res = await post({ image_url: media.url('/moved.png') });
      assert.equal(res.status, 202, res.raw);
    });

    test('unreachable: no answer within the deadline, a 404, a 500, a refused connection → 422 media_unreachable (10012)', async () => {
      const started = Date.now();
      const hang = await post({ image_url: media.url('/hang.png') });
      expectError(hang, 422, 'media_unreachable', 10012);
      assert.ok(Date.now() - started < 5_000, 'the deadline held');
      assert.ok(hang.body.errors.image_url.length);
      expectError(await post({ image_url: media.url('/missing.png') }), 422, 'media_unreachable', 10012);
      expectError(await post({ image_url: media.url('/error.png') }), 422, 'media_unreachable', 10012);
      const closed = net.createServer();
      await new Promise<void>((done) => closed.listen(0, '127.0.0.1', done));
      const port = (closed.address() as net.AddressInfo).port;
      await new Promise<void>((done) => closed.close(() => done()));
      expectError(await post({ image_url: `http://127.0.0.1:${port}/a.png` }), 422, 'media_unreachable', 10012);
      // Nothing was recorded by any of them.
      const list = await co.req({ url: '/v1/campaigns?per_page=100' });
      assert.ok(list.body.data.every((c: { media: { url: string } }) => !/hang|missing|error/.test(c.media.url)));
    });

    test('a live key: https and public addresses only (the webhook URL rules)', async () => {
      const live = (extra: Record<string, unknown>) => co.req({ url: '/v1/campaigns/import-messages', body: body(extra), env: 'live' });
      expectMediaError(await live({ image_url: media.url('/ok.png') }), 'image_url', /https/);
      expectMediaError(await live({ image_url: 'https://127.0.0.1/a.png' }), 'image_url', /private|loopback/);
      expectMediaError(await live({ image_url: 'https://10.1.2.3/a.png' }), 'image_url', /private|loopback/);
      expectMediaError(await live({ image_url: 'https://localhost/a.png' }), 'image_url', /private|loopback/);
      expectMediaError(await live({ image_url: 'ftp://example.com/a.png' }), 'image_url', /http/);
    });
  });

  describe('sending: pacing, contact hours, events', () => {
    test('the token bucket: burst, then one message per interval; delivered / failed / replied events per message', async () => {
      setClock(h, TUESDAY_10);
      const p = phones(3);
      const failing = `+57300${String(process.pid).padStart(4, '0').slice(-4)}0000`;
      const replying = `+57301${String(process.pid).padStart(4, '0').slice(-4)}1111`;
      const c = await campaignCompany(h);
      const res = await c.req({ url: '/v1/campaigns/import-messages', body: body({ phones: [...p, failing, replying] }) });
      assert.equal(res.status, 202, res.raw);
      const id = res.body.id;
      const t0 = h.clock.now().getTime();

      await runDueDispatches(h, c);
      assert.equal((await sentFor(h, id)).length, 2, 'the burst');
      assert.equal((await nextDispatchAt(h, c))?.getTime(), t0 + 500);
      advance(h, 499);
      assert.equal(await runDueDispatches(h, c), 0);
      advance(h, 1);
      await runDueDispatches(h, c);
      assert.equal((await sentFor(h, id)).length, 3, 'one token per 500 ms');
      advance(h, 500);
      await runDueDispatches(h, c);
      advance(h, 500);
      await runDueDispatches(h, c);
      const sent = await sentFor(h, id);
      assert.equal(sent.length, 5);
      assert.deepEqual(sent.map((m) => m.to).sort(), [...p, failing, replying].sort());
      // First in, first out: the request's order, two in the burst then one per 500 ms.
      const rows = await messages(h, id);
      assert.deepEqual(
        rows.map((m) => m.recipient),
        [...p, failing, replying],
      );
      assert.deepEqual(
        rows.map((m) => new Date(m.sent_at!).getTime() - t0),
        [0, 0, 500, 1000, 1500],
      );
      assert.ok(sent.every((m) => m.template === 'cobro_factura'));
      assert.equal(sent[0].variables?.optional_1, 'Este mes tienes 10 % de descuento.');
      assert.equal(sent[0].variables?.image_url, media.url('/ok.png'));
      assert.match(sent[0].text, /Campañas SAS.*10 % de descuento/s);
      assert.equal(await nextDispatchAt(h, c), null, 'the sender is idle');

      const got = await c.req({ url: `/v1/campaigns/${id}` });
      assert.equal(got.body.status, 'completed');
      assert.deepEqual(got.body.counts, { queued: 0, sending: 0, sent: 0, delivered: 3, failed: 1, replied: 1, cancelled: 0 });
      const events = await campaignEvents(h, id);
      assert.deepEqual(events.map((e) => e.type).sort(), [
        'payment.message.delivered',
        'payment.message.delivered',
        'payment.message.delivered',
        'payment.message.failed',
        'payment.message.replied',
      ]);
      const failed = events.find((e) => e.type === 'payment.message.failed')!.data as any;
      assert.equal(failed.id, id);
      assert.equal(failed.message.recipient, failing);
      assert.equal(failed.message.kind, 'campaign');
      assert.equal(failed.message.error, 'unreachable');
      const replied = events.find((e) => e.type === 'payment.message.replied')!.data as any;
      assert.match(replied.message.reply_text, /Gracias/);

      // A repeated report moves nothing and emits nothing.
      const delivered = sent[0];
      await h.runtime.deps.rails.test.messaging.report(delivered.providerMessageId, 'delivered');
      assert.equal((await campaignEvents(h, id)).length, 5);
    });

    test('at least 6 s between two messages to the same phone, across campaigns', async () => {
      setClock(h, TUESDAY_10);
      const c = await campaignCompany(h);
      const [shared, other] = phones(2);
      const a = await c.req({ url: '/v1/campaigns/import-messages', body: body({ phones: [shared] }) });
      const b = await c.req({ url: '/v1/campaigns/import-messages', body: body({ phones: [shared, other] }) });
      const t0 = h.clock.now().getTime();
      await runDueDispatches(h, c);
      assert.equal((await sentFor(h, a.body.id)).length, 1);
      assert.deepEqual(
        (await sentFor(h, b.body.id)).map((m) => m.to),
        [other],
        'the other phone goes; the shared one waits',
      );
      // The burst is spent: the next run is at the next token, and finds only the held phone.
      assert.equal((await nextDispatchAt(h, c))?.getTime(), t0 + 500);
      advance(h, 500);
      await runDueDispatches(h, c);
      assert.equal((await sentFor(h, b.body.id)).length, 1);
      assert.equal((await nextDispatchAt(h, c))?.getTime(), t0 + 6_000, 'when the phone is free');
      advance(h, 5_499);
      await runDueDispatches(h, c);
      assert.equal((await sentFor(h, b.body.id)).length, 1);
      advance(h, 1);
      await runDueDispatches(h, c);
      const bSent = await sentFor(h, b.body.id);
      assert.equal(bSent.length, 2);
      const aSent = await sentFor(h, a.body.id);
      assert.ok(bSent.find((m) => m.to === shared)!.sentAt.getTime() - aSent[0].sentAt.getTime() >= 0, 'the sandbox saw both');
      const rows = [...(await messages(h, a.body.id)), ...(await messages(h, b.body.id))].filter((m) => m.recipient === shared);
      assert.equal(new Date(rows[1].sent_at!).getTime() - new Date(rows[0].sent_at!).getTime(), 6_000);
    });

    test('contact hours: a campaign made on a Sunday waits for Monday 07:00; a window that closes holds the rest', async () => {
      setClock(h, '2026-03-08T15:00:00.000Z'); // Sunday 10:00 Bogotá
      const c = await campaignCompany(h);
      const res = await c.req({ url: '/v1/campaigns/import-messages', body: body({ phones: phones(3) }) });
      assert.equal(res.status, 202, res.raw);
      assert.equal((await nextDispatchAt(h, c))?.toISOString(), '2026-03-09T12:00:00.000Z');
      assert.equal(await runDueDispatches(h, c), 0);
      assert.equal((await sentFor(h, res.body.id)).length, 0);

      setClock(h, '2026-03-07T19:59:59.600Z'); // Saturday 14:59:59.6 Bogotá (the window ends at 15:00)
      const d = await campaignCompany(h);
      const sat = await d.req({ url: '/v1/campaigns/import-messages', body: body({ phones: phones(3) }) });
      await runDueDispatches(h, d);
      assert.equal((await sentFor(h, sat.body.id)).length, 2);
      advance(h, 500); // 15:00:00.1: outside
      await runDueDispatches(h, d);
      assert.equal((await sentFor(h, sat.body.id)).length, 2, 'held');
      assert.equal((await nextDispatchAt(h, d))?.toISOString(), '2026-03-09T12:00:00.000Z', 'Monday 07:00');
      setClock(h, '2026-03-09T12:00:00.000Z');
      await runDueDispatches(h, d);
      assert.equal((await sentFor(h, sat.body.id)).length, 3);
      // Night: Tuesday 20:00 waits for Wednesday 07:00.
      setClock(h, '2026-03-11T01:00:00.000Z');
      const e = await campaignCompany(h);
      await e.req({ url: '/v1/campaigns/import-messages', body: body({ phones: phones(1) }) });
      assert.equal((await nextDispatchAt(h, e))?.toISOString(), '2026-03-11T12:00:00.000Z');
    });

    test('a refusal of the rail fails the message (payment.message.failed); a retryable error puts it back in the queue', async () => {
      setClock(h, TUESDAY_10);
      const c = await campaignCompany(h);
      let calls = 0;
      const flaky: MessagingPort = {
        provider: 'http',
        async send(m) {
          calls++;
          if (m.to.endsWith('2') && calls === 1) throw new MessagingError('provider_error', 'busy', true, false);
          throw new MessagingError('rejected', 'number blocked', false, false);
        },
        onStatus: () => () => {},
        receiveStatus: async () => ({ statusCode: 404, body: { error: 'not here' } }),
        close: async () => {},
      };
      const uninstall = h.runtime.deps.rails.installContact({ companyId: c.company.id, environment: 'test' }, { messaging: flaky });
      try {
        const res = await c.req({ url: '/v1/campaigns/import-messages', body: body({ phones: phones(1) }) });
        await runDueDispatches(h, c);
        let rows = await messages(h, res.body.id);
        assert.equal(rows[0].status, 'queued', 'a retryable error: back in the queue');
        assert.match(rows[0].error ?? '', /busy/);
        advance(h, 6_000);
        await runDueDispatches(h, c);
        rows = await messages(h, res.body.id);
        assert.equal(rows[0].status, 'failed');
        assert.equal(rows[0].attempts, 2);
        const events = await campaignEvents(h, res.body.id);
        assert.deepEqual(
          events.map((e) => e.type),
          ['payment.message.failed'],
        );
        assert.equal((await c.req({ url: `/v1/campaigns/${res.body.id}` })).body.status, 'completed');
      } finally {
        uninstall();
      }
    });
  });

  describe('reads and cancel', () => {
    test('list, get, messages; scoped to the company and environment', async () => {
      setClock(h, TUESDAY_10);
      const c = await campaignCompany(h);
      const other = await campaignCompany(h, 'Otra SAS');
      const first = await c.req({ url: '/v1/campaigns/import-messages', body: body({ phones: phones(3) }) });
      advance(h, 1); // newest first (the frozen clock would give both the same instant)
      const second = await c.req({ url: '/v1/campaigns/import-messages', body: body({ phones: phones(1) }) });
      const list = await c.req({ url: '/v1/campaigns' });
      assert.equal(list.status, 200, list.raw);
      assert.equal(list.body.total, 2);
      assert.deepEqual(
        list.body.data.map((x: { id: string }) => x.id),
        [second.body.id, first.body.id],
      );
      assert.ok('first_page_url' in list.body && 'per_page' in list.body);
      const filtered = await c.req({ url: `/v1/campaigns?filter[id]=${first.body.id}` });
      assert.equal(filtered.body.total, 1);
      expectError(await c.req({ url: '/v1/campaigns?filter[media_url]=x' }), 400, null);

      const msgs = await c.req({ url: `/v1/campaigns/${first.body.id}/messages?per_page=2` });
      assert.equal(msgs.status, 200, msgs.raw);
      assert.equal(msgs.body.total, 3);
      assert.equal(msgs.body.data.length, 2);
      assert.ok(msgs.body.data.every((m: { status: string; id: string }) => m.status === 'queued' && m.id.startsWith('cmsg_')));
      expectError(await c.req({ url: '/v1/campaigns/camp_nope' }), 404, 'record_not_found', 10002);
      await expectScoped(c, other, { url: `/v1/campaigns/${first.body.id}` });
      await expectScoped(c, other, { url: `/v1/campaigns/${first.body.id}/messages` });
      await expectScoped(c, other, { url: `/v1/campaigns/${first.body.id}/cancel`, body: {} });
    });

    test('cancel: messages not yet sent are cancelled, sent ones stay; again answers as is; a completed one is 422', async () => {
      setClock(h, TUESDAY_10);
      const c = await campaignCompany(h);
      const res = await c.req({ url: '/v1/campaigns/import-messages', body: body({ phones: phones(4) }) });
      await runDueDispatches(h, c); // the burst: two go
      const cancel = await c.req({ url: `/v1/campaigns/${res.body.id}/cancel`, body: {} });
      assert.equal(cancel.status, 200, cancel.raw);
      assert.equal(cancel.body.status, 'cancelled');
      assert.ok(cancel.body.cancelled_at);
      assert.equal(cancel.body.counts.cancelled, 2);
      assert.equal(cancel.body.counts.delivered, 2);
      advance(h, 10_000);
      await runDueDispatches(h, c);
      assert.equal((await sentFor(h, res.body.id)).length, 2, 'nothing more goes');
      const again = await c.req({ url: `/v1/campaigns/${res.body.id}/cancel`, body: {} });
      assert.equal(again.status, 200);
      assert.equal(again.body.status, 'cancelled');
      const filtered = await c.req({ url: `/v1/campaigns/${res.body.id}/messages?filter[status]=cancelled` });
      assert.equal(filtered.body.total, 2);

      const done = await c.req({ url: '/v1/campaigns/import-messages', body: body({ phones: phones(1) }) });
      advance(h, 1_000);
      await runDueDispatches(h, c);
      assert.equal((await c.req({ url: `/v1/campaigns/${done.body.id}` })).body.status, 'completed');
      expectError(await c.req({ url: `/v1/campaigns/${done.body.id}/cancel`, body: {} }), 422, 'campaign_not_cancellable', 10700);
    });
  });
});
