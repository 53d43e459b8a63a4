import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { sql } from 'kysely';
import { createHarness, expectError, expectValidation, send, type Company, type Harness } from '../../../test/harness.ts';
import { FakeWhatsAppGraph } from '../../../test/fakes/whatsapp-graph.ts';
import { createPayment } from '../../../test/support/payments.ts';
import { runSendMessage, SEND_MESSAGE_JOB } from '../payments/messages.ts';

/**
 * The WhatsApp Business Cloud API connector (docs/whatsapp.md) against a local fake of Meta's Graph
 * API that enforces its contract: settings, the webhook's verification and signature, a live
 * payment link as an approved template, statuses and replies, refusals, rate limits and a lost
 * answer (never sent twice).
 */
describe('WhatsApp connector', () => {
  let h: Harness;
  let co: Company;
  let graph: FakeWhatsAppGraph;
  let base: string;
  let eventsPath: string;
  const VERIFY = 'mi-token-de-verificacion';

  before(async () => {
    graph = await new FakeWhatsAppGraph().start();
    h = await createHarness({ WHATSAPP_GRAPH_URL: graph.url, WHATSAPP_GRAPH_VERSION: graph.version, CONNECTOR_SETTINGS_TTL_MS: '0' });
    co = await h.company('Tienda Mensajes SAS');
    await h.app.listen({ port: 0, host: '127.0.0.1' });
    base = `http://127.0.0.1:${(h.app.server.address() as AddressInfo).port}`;
  });
  after(async () => {
    await h.close();
    await graph.close();
  });

  const put = (body: Record<string, unknown>, env: 'test' | 'live' = 'live') => co.req({ method: 'PUT', url: '/v1/connectors/whatsapp', body, env });
  const fullSettings = () => ({
    phone_number_id: graph.phoneNumberId,
    access_token: graph.accessToken,
    app_secret: graph.appSecret,
    verify_token: VERIFY,
    templates: { payment_link: 'recaudo_cobro', login_code: 'recaudo_codigo' },
  });

  /** Runs the payment's due send jobs once, as a worker would (retry times come from the job's backoff). */
  async function runSends(paymentId: string): Promise<void> {
    const db = h.runtime.deps.database.db;
    const jobs = await db
      .selectFrom('jobs')
      .select(['id', 'payload', 'attempts'])
      .where('kind', '=', SEND_MESSAGE_JOB)
      .where(sql<string>`payload->>'payment_id'`, '=', paymentId)
      .execute();
    for (const job of jobs) {
      const attempts = job.attempts + 1;
      await db.updateTable('jobs').set({ attempts }).where('id', '=', job.id).execute();
      try {
        await runSendMessage(h.runtime.deps, job.payload, { id: job.id, attempts });
        await db.deleteFrom('jobs').where('id', '=', job.id).execute();
      } catch {
        /* retried: the job stays */
      }
    }
  }
  const messageOf = async (paymentId: string) =>
    h.runtime.deps.database.db.selectFrom('payment_messages').selectAll().where('payment_id', '=', paymentId).executeTakeFirstOrThrow();
  const eventsOf = async (paymentId: string) =>
    (
      await h.runtime.deps.database.db
        .selectFrom('events')
        .select(['type', 'data'])
        .where(sql<string>`data->>'id'`, '=', paymentId)
        .where('type', 'like', 'payment.message.%')
        .orderBy('created_at')
        .orderBy('id')
        .execute()
    ).map((e) => ({ type: e.type, data: e.data as any }));

  test('settings: the first PUT needs the number and the three secrets; secrets write-only and sealed; events_url; test keys stay on the sandbox', async () => {
    expectError(await co.req({ url: '/v1/connectors/whatsapp', env: 'live' }), 404, 'record_not_found');
    const missing = await put({ phone_number_id: graph.phoneNumberId });
    expectValidation(missing, 'access_token');
    assert.deepEqual(Object.keys(missing.body.errors).sort(), ['access_token', 'app_secret', 'verify_token']);
    expectValidation(await put({ ...fullSettings(), phone_number_id: '+57 300 999 8877' }), 'phone_number_id');
    expectValidation(await put({ ...fullSettings(), templates: { payment_link: 'Cobro Mensual' } }), 'templates.payment_link');
    expectValidation(await put({ ...fullSettings(), templates: { welcome: 'x' } }), 'templates');

    const saved = await put(fullSettings());
    assert.equal(saved.status, 200, saved.raw);
    assert.equal(saved.body.phone_number_id, graph.phoneNumberId);
    assert.deepEqual(saved.body.access_token, { set: true, last4: graph.accessToken.slice(-4) });
    assert.deepEqual(saved.body.templates, { payment_link: 'recaudo_cobro', reminder: null, receipt: null, login_code: 'recaudo_codigo' });
    assert.equal(saved.body.language, 'es');
    assert.equal(saved.body.sends, true);
    eventsPath = new URL(saved.body.events_url).pathname;
    assert.match(eventsPath, /^\/v1\/rails\/whatsapp\/events\/wet_[A-Za-z0-9_-]{32}$/);
    graph.callbackUrl = `${base}${eventsPath}`;
    assert.ok(!saved.raw.includes(graph.accessToken) && !saved.raw.includes(graph.appSecret) && !saved.raw.includes(VERIFY), 'no secret answered');
    const stored = await h.runtime.deps.database.db.selectFrom('whatsapp_connectors').selectAll().execute();
    const text = JSON.stringify(stored);
    assert.ok(!text.includes(graph.accessToken) && !text.includes(graph.appSecret) && !text.includes(VERIFY), 'sealed at rest');
    assert.deepEqual((await co.req({ url: '/v1/connectors/whatsapp', env: 'live' })).body, saved.body);
    // A partial PUT keeps the rest.
    const renamed = await put({ templates: { receipt: 'recaudo_recibo' } });
    assert.equal(renamed.body.templates.payment_link, 'recaudo_cobro');
    assert.equal(renamed.body.templates.receipt, 'recaudo_recibo');
    // The test environment has its own, and never sends through Meta (it has no sandbox).
    const testSide = await put(fullSettings(), 'test');
    assert.equal(testSide.status, 200, testSide.raw);
    assert.equal(testSide.body.sends, false);
    expectError(await co.req({ url: '/v1/connectors/whatsapp', key: co.publishable_keys.live }), 404, 'record_not_found');
  });

  test('webhook verification: the verify token answers the challenge as text; anything else 403; an unknown URL 404', async () => {
    const ok = await fetch(`${base}${eventsPath}?hub.mode=subscribe&hub.verify_token=${VERIFY}&hub.challenge=1158201444`);
    assert.equal(ok.status, 200);
    assert.equal(await ok.text(), '1158201444');
    assert.equal((await fetch(`${base}${eventsPath}?hub.mode=subscribe&hub.verify_token=otro&hub.challenge=1`)).status, 403);
    assert.equal((await fetch(`${base}${eventsPath}?hub.mode=unsubscribe&hub.verify_token=${VERIFY}&hub.challenge=1`)).status, 403);
    assert.equal((await fetch(`${base}/v1/rails/whatsapp/events/wet_${'x'.repeat(32)}?hub.mode=subscribe`)).status, 404);
  });

  test('a live payment link goes out as the approved template; delivered and a reply come back signed; a bad signature changes nothing', async () => {
    const p = await createPayment(co, { phone: '+573001234567', title: 'Factura de abril', amount: 85000 }, 'live');
    assert.deepEqual(p.message, { status: 'pending', remarks: null });
    await runSends(p.id);
    assert.equal(graph.sent.length, 1);
    const [sent] = graph.sent;
    const row = await messageOf(p.id);
    assert.equal(sent.to, '573001234567', 'E.164 without +');
    assert.equal(sent.template, 'recaudo_cobro');
    assert.equal(sent.language, 'es');
    assert.equal(sent.reference, row.id, 'our message id rides along (biz_opaque_callback_data)');
    assert.deepEqual(sent.params.slice(0, 2), ['Tienda Mensajes SAS', 'Factura de abril']);
    assert.match(sent.params[2], /85\.000/);
    assert.equal(sent.params[3], p.payment_link);
    assert.deepEqual([row.status, row.provider_message_id], ['sent', sent.id]);

    const forged = await graph.notify(graph.statusNotification(sent, 'delivered'), { secret: 'not-the-app-secret' });
    assert.equal(forged.status, 401);
    assert.equal((await messageOf(p.id)).status, 'sent', 'nothing changed');

    assert.equal((await graph.notify(graph.statusNotification(sent, 'sent'))).status, 200);
    assert.equal((await graph.notify(graph.statusNotification(sent, 'delivered'))).status, 200);
    assert.equal((await graph.notify(graph.statusNotification(sent, 'read'))).status, 200, 'read after delivered: nothing new');
    assert.equal((await messageOf(p.id)).status, 'delivered');
    assert.equal((await graph.notify(graph.replyNotification(sent, 'Ya pagué, gracias ✅'))).status, 200);
    const done = await messageOf(p.id);
    assert.deepEqual([done.status, done.reply_text], ['replied', 'Ya pagué, gracias ✅']);
    assert.deepEqual(
      (await eventsOf(p.id)).map((e) => e.type),
      ['payment.message.delivered', 'payment.message.replied'],
    );
    assert.deepEqual((await co.req({ url: `/v1/payments/${p.id}`, env: 'live' })).body.message, { status: 'replied', remarks: null });
  });

  test('a failed status, an expired token, a template not approved: failed with the reason; a rate limit is retried', async () => {
    const a = await createPayment(co, { phone: '+573001110001' }, 'live');
    await runSends(a.id);
    const sentA = graph.sent.at(-1)!;
    await graph.notify(graph.statusNotification(sentA, 'failed', { code: 131026, title: 'Message undeliverable' }));
    const failed = await messageOf(a.id);
    assert.equal(failed.status, 'failed');
    assert.match(failed.error!, /undeliverable \(131026\)/);
    assert.deepEqual((await co.req({ url: `/v1/payments/${a.id}`, env: 'live' })).body.message.status, 'failed');

    graph.expiredToken = true;
    const b = await createPayment(co, { phone: '+573001110002' }, 'live');
    await runSends(b.id);
    graph.expiredToken = false;
    const refused = await messageOf(b.id);
    assert.equal(refused.status, 'failed');
    assert.match(refused.error!, /access token was refused.*\(190\)/);

    await put({ templates: { payment_link: 'recaudo_pendiente' } });
    const c = await createPayment(co, { phone: '+573001110003' }, 'live');
    await runSends(c.id);
    assert.match((await messageOf(c.id)).error!, /132001/);
    await put({ templates: { payment_link: 'recaudo_cobro' } });

    graph.rateLimitNext(1);
    const d = await createPayment(co, { phone: '+573001110004' }, 'live');
    const before = graph.sent.length;
    await runSends(d.id);
    const waiting = await messageOf(d.id);
    assert.deepEqual([waiting.status, waiting.attempts], ['pending', 1]);
    assert.match(waiting.error!, /130429/);
    await runSends(d.id);
    assert.equal((await messageOf(d.id)).status, 'sent');
    assert.equal(graph.sent.length, before + 1, 'one message: the refused try sent nothing');
  });

  test('a lost answer is never sent again: handed over without its id, settled by the report that echoes our reference', async () => {
    graph.loseNextAnswer();
    const p = await createPayment(co, { phone: '+573001110005' }, 'live');
    const before = graph.sent.length;
    await runSends(p.id);
    await runSends(p.id);
    assert.equal(graph.sent.length, before + 1, 'Meta got it once');
    const row = await messageOf(p.id);
    assert.equal(row.status, 'sent');
    assert.equal(row.provider_message_id, null);
    assert.match(row.error!, /outcome unknown/);
    const jobs = await h.runtime.deps.database.db
      .selectFrom('jobs')
      .select('id')
      .where('kind', '=', SEND_MESSAGE_JOB)
      .where(sql<string>`payload->>'payment_id'`, '=', p.id)
      .execute();
    assert.equal(jobs.length, 0, 'nothing left to retry');
    await graph.notify(graph.statusNotification(graph.sent.at(-1)!, 'delivered'));
    assert.equal((await messageOf(p.id)).status, 'delivered');
  });

  test('DELETE: live messages by phone are refused again (channel_not_configured)', async () => {
    assert.equal((await co.req({ method: 'DELETE', url: '/v1/connectors/whatsapp', env: 'live' })).status, 204);
    const p = await createPayment(co, { phone: '+573001110006' }, 'live');
    assert.deepEqual(p.message, { status: 'failed', remarks: 'channel_not_configured' });
    expectError(await send(h.app, { method: 'DELETE', url: '/v1/connectors/whatsapp', key: co.keys.live }), 404, 'record_not_found');
  });
});
