// Graceful shutdown under load (issue 11 "What must hold": it completes within SHUTDOWN_TIMEOUT_MS,
// with in-flight requests answered). PostgreSQL only, like the other fault tests: an API process and
// a worker as child processes, a steady load of card charges and customers, a webhook receiver that
// accepts connections and never answers (deliveries stuck in flight), then SIGTERM to both.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { randomUUID } from 'node:crypto';
import {
  call,
  Cluster,
  createFaultDatabase,
  idOf,
  ok,
  report,
  SKIP_UNLESS_POSTGRES,
  until,
  type Answer,
  type FaultDatabase,
} from './fault-harness.ts';

const SHUTDOWN_TIMEOUT_MS = 4_000;
const CONCURRENCY = 32;

describe('graceful shutdown under load', { skip: SKIP_UNLESS_POSTGRES }, () => {
  let db: FaultDatabase;
  let cluster: Cluster;
  let silent: net.Server;
  const held: net.Socket[] = [];

  before(async () => {
    db = await createFaultDatabase();
    // A receiver that takes the connection and the request and never answers.
    silent = net.createServer((socket) => {
      held.push(socket);
      socket.on('error', () => {});
    });
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    cluster = new Cluster(db);
    await cluster.start({
      apis: 1,
      env: { SHUTDOWN_TIMEOUT_MS: String(SHUTDOWN_TIMEOUT_MS), WEBHOOK_TIMEOUT_MS: '60000', WEBHOOK_RETRY_SCHEDULE: '1s,2s' },
    });
  });
  after(async () => {
    await cluster?.stop();
    held.forEach((s) => s.destroy());
    silent?.close();
    await db?.drop();
  });

  test(
    `SIGTERM with ${CONCURRENCY} requests in flight and deliveries stuck: both processes exit 0 within the budget, every request sent is answered, every 2xx is durable`,
    { timeout: 180_000 },
    async () => {
      const api = cluster.apis[0];
      const { key } = cluster.createCompany('Apagado SAS');
      const port = (silent.address() as net.AddressInfo).port;
      const hook = await call(api, key, 'POST', '/v1/webhooks', {
        body: { name: 'Silencio', url: `http://127.0.0.1:${port}/hook`, events: ['charge.created', 'charge.paid'] },
      });
      assert.ok(ok(hook), JSON.stringify(hook.body));
      const customer = idOf(await call(api, key, 'POST', '/v1/customers', { body: { first_name: 'Ana', last_name: 'Gómez' } }))!;
      const year = String(new Date().getUTCFullYear() + 3);
      const card = idOf(
        await call(api, key, 'POST', '/v1/cards', {
          body: {
            card_number: '4242424242424242',
            expiration_month: '12',
            expiration_year: year,
            cvv: '123',
            holder_name: 'Ana Gómez',
            customer_id: customer,
            authorization: true,
          },
        }),
      )!;
      assert.ok(customer && card);

      let signalAt = 0;
      const sent: { startedAt: number; kind: string; answer?: Answer; key: string }[] = [];
      const loop = async (i: number) => {
        for (let n = 0; signalAt === 0 || Date.now() - signalAt < 200; n++) {
          const kind = (i + n) % 3 === 0 ? 'customer' : 'charge';
          const entry: (typeof sent)[number] = { startedAt: Date.now(), kind, key: randomUUID() };
          sent.push(entry);
          entry.answer =
            kind === 'charge'
              ? await call(api, key, 'POST', '/v1/charges', {
                  body: { amount: 150000, title: 'Cuota', customer_id: customer, card_id: card },
                  idem: entry.key,
                  timeoutMs: 20_000,
                })
              : await call(api, key, 'POST', '/v1/customers', { body: { first_name: `C${i}-${n}` }, idem: entry.key, timeoutMs: 20_000 });
          if (entry.answer.status === 0) break; // the server is gone
        }
      };
      const loops = Array.from({ length: CONCURRENCY }, (_, i) => loop(i));
      // Let the load and the stuck deliveries build up.
      await until(() => held.length >= 3 && sent.filter((s) => s.answer && ok(s.answer)).length >= 60, 30_000, 100);
      const inFlight = sent.filter((s) => !s.answer).length;
      signalAt = Date.now();
      const apiExit = new Promise<{ code: number | null; ms: number }>((resolve) =>
        api.proc!.once('exit', (code) => resolve({ code, ms: Date.now() - signalAt })),
      );
      const workerExit = new Promise<{ code: number | null; ms: number }>((resolve) =>
        cluster.worker.proc!.once('exit', (code) => resolve({ code, ms: Date.now() - signalAt })),
      );
      api.proc!.kill('SIGTERM');
      cluster.worker.proc!.kill('SIGTERM');
      const [a, w] = await Promise.all([apiExit, workerExit]);
      await Promise.all(loops);

      const before = sent.filter((s) => s.startedAt < signalAt);
      const unanswered = before.filter((s) => !s.answer || s.answer.status === 0);
      const statuses: Record<string, number> = {};
      for (const s of before) statuses[String(s.answer?.status ?? 'none')] = (statuses[String(s.answer?.status ?? 'none')] ?? 0) + 1;
      const bad = before.filter(
        (s) => s.answer && s.answer.status !== 0 && !ok(s.answer) && !(s.answer.status === 503 && s.answer.body?.code_name === 'service_unavailable'),
      );

      // Every 2xx is there after a restart; a retry of a charge key answers the same charge.
      await cluster.ensureRunning();
      const acknowledged = before.filter((s) => s.answer && ok(s.answer));
      const missing: string[] = [];
      for (const s of acknowledged) {
        const id = idOf(s.answer!)!;
        const got = await call(api, key, 'GET', s.kind === 'charge' ? `/v1/charges/${id}` : `/v1/customers/${id}`);
        if (got.status !== 200) missing.push(`${s.kind} ${id}: ${got.status}`);
      }
      const retried = acknowledged.filter((s) => s.kind === 'charge').slice(0, 10);
      for (const s of retried) {
        const again = await call(api, key, 'POST', '/v1/charges', {
          body: { amount: 150000, title: 'Cuota', customer_id: customer, card_id: card },
          idem: s.key,
        });
        assert.equal(idOf(again), idOf(s.answer!), 'the same key answers the same charge');
      }

      report('shutdown under load', {
        shutdown_timeout_ms: SHUTDOWN_TIMEOUT_MS,
        in_flight_at_sigterm: inFlight,
        deliveries_held_by_receiver: held.length,
        sent_before_sigterm: before.length,
        statuses,
        unanswered: unanswered.length,
        acknowledged: acknowledged.length,
        acknowledged_missing_after_restart: missing.length,
        api_exit: a,
        worker_exit: w,
      });
      assert.equal(a.code, 0, 'the API exits 0');
      assert.equal(w.code, 0, 'the worker exits 0');
      assert.ok(a.ms <= SHUTDOWN_TIMEOUT_MS + 1_500, `the API exited ${a.ms} ms after SIGTERM`);
      assert.ok(w.ms <= SHUTDOWN_TIMEOUT_MS + 1_500, `the worker exited ${w.ms} ms after SIGTERM`);
      assert.ok(inFlight > 0, 'requests were in flight at SIGTERM');
      assert.deepEqual(
        unanswered.map((s) => `${s.kind} ${s.answer?.error ?? 'no answer'}`),
        [],
        'every request sent before SIGTERM got an HTTP answer',
      );
      assert.deepEqual(
        bad.map((s) => `${s.kind} ${s.answer!.status} ${JSON.stringify(s.answer!.body).slice(0, 120)}`),
        [],
        'a 2xx or a coded 503',
      );
      assert.deepEqual(missing, [], 'every acknowledged resource is durable');
    },
  );
});
