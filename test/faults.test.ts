// The project's own fault tests (issue 11, "Money safety under faults"), on PostgreSQL only.
//
// Two API processes and one worker run as real child processes (the operator's start commands) on
// a database of their own; a company is created with the CLI; card charges and customers are
// loaded over real HTTP with remembered idempotency keys while processes are killed with SIGKILL,
// every session of that database is terminated, and the webhook receiver goes away. Afterwards
// every key that got no 2xx is retried with the same key and body, and the outcome is checked:
// exactly one charge per key, every acknowledged resource still there, every event delivered, no
// process exit we did not cause. Each scenario prints one line `FAULT-SUMMARY {...}` of figures.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  approvingCardBody,
  call,
  Cluster,
  createFaultDatabase,
  FaultReceiver,
  idOf,
  Load,
  ok,
  report,
  retryUnacknowledged,
  SKIP_UNLESS_POSTGRES,
  sleep,
  until,
  type Answer,
  type Exit,
  type FaultDatabase,
  type KeyRecord,
  type ServiceProcess,
} from './fault-harness.ts';

const SUBSCRIBED = ['charge.created', 'charge.processing', 'charge.paid', 'charge.failed'];
/** How long the receiver stays down in scenario E: a minute, as the issue says (the checks do not depend on it). */
const RECEIVER_DOWN_MS = Number(process.env.FAULT_RECEIVER_DOWN_MS || 60_000);

async function mapLimit<T, R>(items: T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      for (;;) {
        const i = next++;
        if (i >= items.length) return;
        out[i] = await fn(items[i]);
      }
    }),
  );
  return out;
}

const describeExits = (exits: Exit[]) =>
  exits.map((e) => `${e.process} exited (code ${e.code}, signal ${e.signal}); last output:\n    ${e.tail.join('\n    ') || '(none)'}`).join('\n');

describe('fault tests: two API processes and a worker on PostgreSQL (issue 11)', { skip: SKIP_UNLESS_POSTGRES }, () => {
  let db: FaultDatabase;
  let cluster: Cluster;
  const rx = new FaultReceiver();
  let companyKey = '';
  let companyId = '';
  let customerId = '';
  let cardId = '';
  /** Every charge key of every scenario (B, C, D, E), for the delivery checks. */
  const chargeIds = new Set<string>();

  const chargeBody = (key: string) => ({
    amount: 15000,
    title: 'Cuota fault test',
    customer_id: customerId,
    card_id: cardId,
    external_id: key.slice(0, 100),
  });
  const anyApi = (): ServiceProcess => {
    const alive = cluster.aliveApis();
    if (alive.length === 0) throw new Error('no API process is running');
    return alive[Math.floor(Math.random() * alive.length)];
  };

  /** A GET that must answer 2xx, retried briefly (a process may still be recovering). */
  async function getOk(url: string, timeoutMs = 20_000): Promise<Answer> {
    let last: Answer | undefined;
    await until(
      async () => {
        last = await call(anyApi(), companyKey, 'GET', url, { timeoutMs: 10_000 });
        return ok(last) || last.status === 404;
      },
      timeoutMs,
      250,
    );
    if (!last || !(ok(last) || last.status === 404)) throw new Error(`GET ${url}: ${last?.status} ${last?.error ?? JSON.stringify(last?.body)}`);
    return last;
  }

  /** A POST retried with the same key until 2xx (setup and scenario E). */
  async function postOk(url: string, body: unknown, key: string, timeoutMs = 60_000): Promise<Answer> {
    let last: Answer | undefined;
    await until(
      async () => {
        last = await call(anyApi(), companyKey, 'POST', url, { body, idem: key, timeoutMs: 30_000 });
        return ok(last);
      },
      timeoutMs,
      500,
    );
    if (!last || !ok(last)) throw new Error(`POST ${url} (${key}): ${last?.status} ${last?.error ?? JSON.stringify(last?.body)}`);
    return last;
  }

  /**
   * The exactly-once check of a set of charge keys: each key has one charge (filter[key]), and the
   * 2xx the key got (during the load or on retry) names that charge.
   */
  async function checkChargeKeys(records: KeyRecord[]) {
    const found = await mapLimit(records, 8, async (rec) => {
      const list = await getOk(`/v1/charges?filter[key]=${encodeURIComponent(rec.key)}&per_page=10`);
      const data: { id: string; status: string }[] = list.body?.data ?? [];
      return { rec, data };
    });
    const duplicates = found.filter((f) => f.data.length > 1);
    const lost = found.filter((f) => f.rec.acked && f.data.length === 0);
    const mismatched = found.filter((f) => f.rec.acked && f.data.length === 1 && idOf(f.rec.acked) !== f.data[0].id);
    const withoutCharge = found.filter((f) => !f.rec.acked && f.data.length === 0).length;
    for (const f of found) for (const c of f.data) chargeIds.add(c.id);
    // The database agrees: no key of this company has two charges.
    const twins = await db.query<{ idempotency_key: string; n: string }>(
      `SELECT idempotency_key, count(*) AS n FROM charges WHERE company_id = $1 AND idempotency_key = ANY($2) GROUP BY 1 HAVING count(*) > 1`,
      [companyId, records.map((r) => r.key)],
    );
    return { found, duplicates, lost, mismatched, withoutCharge, twins };
  }

  /** Waits until no charge of the company is created/processing (the reconciler settles them). */
  async function waitChargesFinal(timeoutMs: number): Promise<{ open: number; byStatus: Record<string, number> }> {
    const count = async () => {
      const rows = await db.query<{ status: string; n: string }>(`SELECT status, count(*) AS n FROM charges WHERE company_id = $1 GROUP BY 1`, [
        companyId,
      ]);
      return Object.fromEntries(rows.map((r) => [r.status, Number(r.n)])) as Record<string, number>;
    };
    let byStatus = await count();
    await until(
      async () => {
        byStatus = await count();
        return (byStatus.created ?? 0) + (byStatus.processing ?? 0) === 0;
      },
      timeoutMs,
      500,
    );
    return { open: (byStatus.created ?? 0) + (byStatus.processing ?? 0), byStatus };
  }

  /** The subscribed events of these charges that the receiver has not acknowledged. */
  async function undelivered(ids: string[]): Promise<{ expected: number; lost: { id: string; type: string; charge: string }[] }> {
    const rows = await db.query<{ id: string; type: string; charge: string }>(
      `SELECT id, type, data->>'id' AS charge FROM events WHERE company_id = $1 AND type = ANY($2) AND data->>'id' = ANY($3)`,
      [companyId, SUBSCRIBED, ids],
    );
    return { expected: rows.length, lost: rows.filter((r) => !rx.ids.has(r.id)) };
  }

  async function waitDelivered(ids: string[], timeoutMs: number) {
    let state = await undelivered(ids);
    await until(
      async () => {
        state = await undelivered(ids);
        return state.lost.length === 0;
      },
      timeoutMs,
      500,
    );
    return state;
  }

  const exitsSince = (mark: number) => cluster.exits.slice(mark).filter((e) => !e.expected);

  before(
    async () => {
      db = await createFaultDatabase();
      cluster = new Cluster(db);
      await cluster.start();
      await rx.start();
      const company = cluster.createCompany('Fault SAS');
      companyKey = company.key;
      companyId = company.companyId;
      const customer = await postOk('/v1/customers', { first_name: 'Ana', last_name: 'Fallas', email: 'ana.fallas@fault.test' }, 'setup-customer');
      customerId = idOf(customer)!;
      const card = await postOk('/v1/cards', approvingCardBody(customerId), 'setup-card');
      cardId = idOf(card)!;
      const hook = await postOk('/v1/webhooks', { name: 'fault receiver', url: rx.url, events: SUBSCRIBED }, 'setup-webhook');
      rx.secret = hook.body.data.secret;
      rx.token = hook.body.data.header;
      // One charge end to end before any fault: the set-up works.
      const first = await postOk('/v1/charges', chargeBody('setup-charge'), 'setup-charge');
      assert.equal(first.body.status, 'paid', JSON.stringify(first.body));
      chargeIds.add(idOf(first)!);
      const delivered = await waitDelivered([idOf(first)!], 30_000);
      assert.deepEqual(delivered.lost, [], 'the events of a charge reach the receiver before any fault');
    },
    { timeout: 240_000 },
  );

  after(
    async () => {
      await cluster?.stop();
      await rx.close();
      await db?.drop();
    },
    { timeout: 60_000 },
  );

  test(
    'B: SIGKILL of an API process with card charges in flight, then a retry of every unacknowledged key → one charge per key',
    { timeout: 240_000 },
    async () => {
      const restarted = await cluster.ensureRunning();
      const mark = cluster.exits.length;
      const load = new Load(cluster, companyKey, 'B', [{ kind: 'charge', url: '/v1/charges', body: chargeBody, concurrency: 4 }]);
      const kills: { process: string; inflight: number; waiting_on_final_save: number }[] = [];
      load.start();
      try {
        // Each API process in turn is killed while it has charges in flight, then started again. To
        // be sure some of them are past the early commit (claim and charge committed, rail called)
        // but before the final save, the final saves are held for a moment first: they all post to
        // the company's ledger accounts, which an observer session locks (the database is slow).
        for (const victim of cluster.apis) {
          const acked = load.records().filter((r) => r.acked).length;
          await until(() => load.records().filter((r) => r.acked).length >= acked + 25, 30_000, 20);
          const release = await db.holdLock(`SELECT id FROM ledger_accounts WHERE company_id = $1 FOR UPDATE`, [companyId]);
          let waiting = 0;
          try {
            await until(async () => (waiting = await db.lockWaiters()) >= 6, 4_000, 50);
            kills.push({ process: victim.name, inflight: load.inflight.get(victim.name) ?? 0, waiting_on_final_save: waiting });
            await victim.kill('SIGKILL');
          } finally {
            await release();
          }
          victim.start();
          await victim.waitReady();
        }
        // The steady load goes on for a moment on both restarted processes.
        const acked = load.records().filter((r) => r.acked).length;
        await until(() => load.records().filter((r) => r.acked).length >= acked + 20, 20_000, 20);
      } finally {
        await load.stop();
      }
      const records = load.records();
      const ackedDuringLoad = records.filter((r) => r.acked).length;
      const retry = await retryUnacknowledged(cluster, companyKey, records, { deadline: Date.now() + 90_000 });
      const check = await checkChargeKeys(records);
      const final = await waitChargesFinal(60_000);
      const exits = exitsSince(mark);
      const figures = {
        keys: records.length,
        acknowledged_during_load: ackedDuringLoad,
        killed: kills,
        retried_keys: retry.retried,
        retry_attempts: retry.attempts,
        retry_statuses: retry.statuses,
        retry_slowest_ms: retry.slowestMs,
        retried_unresolved: retry.unresolved.length,
        acknowledged_total: records.filter((r) => r.acked).length,
        charges_found: check.found.reduce((n, f) => n + f.data.length, 0),
        duplicates: check.duplicates.length,
        db_keys_with_two_charges: check.twins.length,
        lost: check.lost.length,
        answer_id_mismatch: check.mismatched.length,
        charges_not_final: final.open,
        charge_statuses: final.byStatus,
        unexpected_process_exits: exits.length,
        restarted_before: restarted,
      };
      report('B api-sigkill-retry', figures);

      assert.deepEqual(
        exits.map((e) => e.process),
        [],
        `no process exits but the ones killed:\n${describeExits(exits)}`,
      );
      assert.deepEqual(
        retry.unresolved.map((r) => ({
          key: r.key,
          answers: r.answers.slice(-3).map((a) => `${a.process} ${a.status || a.error} ${a.status ? JSON.stringify(a.body)?.slice(0, 160) : ''}`),
        })),
        [],
        'every unacknowledged key gets a 2xx when retried with the same key and body',
      );
      assert.deepEqual(
        check.duplicates.map((d) => ({ key: d.rec.key, charges: d.data.map((c) => `${c.id} ${c.status}`) })),
        [],
        'no key has two charges',
      );
      assert.deepEqual(check.twins, [], 'no key has two charges (database)');
      assert.deepEqual(
        check.lost.map((l) => l.rec.key),
        [],
        'every acknowledged key has its charge',
      );
      assert.deepEqual(
        check.mismatched.map((m) => ({ key: m.rec.key, answered: idOf(m.rec.acked!), found: m.data[0].id, onRetry: m.rec.ackedOnRetry })),
        [],
        'the 2xx a key got (first try or retry) names its one charge',
      );
      assert.equal(final.open, 0, `every charge ends paid or failed (${JSON.stringify(final.byStatus)})`);
    },
  );

  test(
    'B2: a charge answered 503 charge_persistence_lost (90005), retried with the same key → that one charge, 2xx',
    { timeout: 120_000 },
    async () => {
      const restarted = await cluster.ensureRunning();
      const mark = cluster.exits.length;
      // The sandbox trigger persistence_lost: the rail answers, the final save "fails", the answer is
      // 503 90005 and the charge exists. A client retries a 5xx with the same key and body.
      const records: KeyRecord[] = [];
      await Promise.all(
        cluster.aliveApis().flatMap((p) =>
          Array.from({ length: 5 }, async (_, i) => {
            const key = `B2-${p.name}-${i}-${Date.now()}`;
            const rec: KeyRecord = {
              key,
              kind: 'charge',
              url: '/v1/charges',
              body: { ...chargeBody(key), test_scenario: 'persistence_lost' },
              answers: [],
            };
            records.push(rec);
            const answer = await call(p, companyKey, 'POST', rec.url, { body: rec.body, idem: key });
            rec.answers.push(answer);
            if (ok(answer)) rec.acked = answer;
          }),
        ),
      );
      const firstStatuses = records.map((r) => r.answers[0].status || r.answers[0].error);
      // At most a few attempts each: on a build that runs the key again, every retry is a new charge.
      const retry = await retryUnacknowledged(cluster, companyKey, records, { deadline: Date.now() + 45_000, maxAttempts: 3 });
      const check = await checkChargeKeys(records);
      const final = await waitChargesFinal(60_000);
      const exits = exitsSince(mark);
      const figures = {
        keys: records.length,
        first_answers: firstStatuses.reduce<Record<string, number>>((m, s) => ((m[String(s)] = (m[String(s)] ?? 0) + 1), m), {}),
        retried_keys: retry.retried,
        retry_attempts: retry.attempts,
        retry_statuses: retry.statuses,
        retry_slowest_ms: retry.slowestMs,
        retried_unresolved: retry.unresolved.length,
        charges_found: check.found.reduce((n, f) => n + f.data.length, 0),
        duplicates: check.duplicates.length,
        lost: check.lost.length,
        answer_id_mismatch: check.mismatched.length,
        charges_not_final: final.open,
        unexpected_process_exits: exits.length,
        restarted_before: restarted,
      };
      report('B2 503-90005-retry', figures);

      assert.deepEqual(
        exits.map((e) => e.process),
        [],
        `no process exits:\n${describeExits(exits)}`,
      );
      assert.ok(
        firstStatuses.every((s) => s === 503),
        `the sandbox trigger answers 503 first (${firstStatuses.join(', ')})`,
      );
      assert.deepEqual(
        check.duplicates.map((d) => ({ key: d.rec.key, charges: d.data.length })),
        [],
        'a retry of a 503 never makes a second charge',
      );
      assert.deepEqual(
        retry.unresolved.map((r) => ({ key: r.key, answers: r.answers.map((a) => a.status || a.error) })),
        [],
        'the retry of a 503 answers 2xx (the one existing charge)',
      );
      assert.deepEqual(
        check.mismatched.map((m) => m.rec.key),
        [],
        'the retry answer names the one charge',
      );
      assert.equal(check.found.filter((f) => f.data.length === 0).length, 0, 'every 503 left its charge');
      assert.equal(final.open, 0, 'every charge ends paid or failed (the reconciler)');
    },
  );

  test(
    'C: SIGKILL of the worker during webhook delivery, then a new worker → every charge event delivered at least once',
    { timeout: 180_000 },
    async () => {
      const restarted = await cluster.ensureRunning();
      const mark = cluster.exits.length;
      rx.delayMs = 250; // deliveries stay in flight long enough to be cut
      const load = new Load(cluster, companyKey, 'C', [{ kind: 'charge', url: '/v1/charges', body: chargeBody, concurrency: 2 }]);
      const receivedBefore = rx.deliveries.length;
      load.start();
      let inflightAtKill = 0;
      let receivedAtKill = 0;
      try {
        await until(() => rx.deliveries.length >= receivedBefore + 20 && rx.inflight > 0, 60_000, 5);
        inflightAtKill = rx.inflight;
        receivedAtKill = rx.deliveries.length - receivedBefore;
        await cluster.worker.kill('SIGKILL');
        await sleep(1_000); // charges keep coming while no worker runs
      } finally {
        await load.stop();
      }
      rx.delayMs = 0;
      cluster.worker.start();
      await cluster.worker.waitReady();
      // Keys of C that got no answer are retried too, so that every charge of the scenario is known.
      const retry = await retryUnacknowledged(cluster, companyKey, load.records(), { deadline: Date.now() + 45_000 });
      const check = await checkChargeKeys(load.records());
      const final = await waitChargesFinal(60_000);
      const ids = [...chargeIds];
      const state = await waitDelivered(ids, 90_000);
      const unique = new Set(rx.deliveries.map((d) => d.id));
      const exits = exitsSince(mark);
      const failedDeliveries = await db.query<{ n: string }>(
        `SELECT count(*) AS n FROM webhook_deliveries WHERE company_id = $1 AND status = 'failed'`,
        [companyId],
      );
      const figures = {
        charges_tracked: ids.length,
        charges_in_c: load.records().length,
        deliveries_in_flight_at_kill: inflightAtKill,
        delivered_in_c_before_kill: receivedAtKill,
        events_expected: state.expected,
        events_delivered: state.expected - state.lost.length,
        lost_events: state.lost.length,
        receiver_requests: rx.deliveries.length,
        duplicate_deliveries: rx.deliveries.length - unique.size,
        bad_signatures: rx.deliveries.filter((d) => !d.validSignature).length,
        deliveries_failed: Number(failedDeliveries[0]?.n ?? 0),
        retried_keys: retry.retried,
        retried_unresolved: retry.unresolved.length,
        duplicates: check.duplicates.length,
        charges_not_final: final.open,
        unexpected_process_exits: exits.length,
        restarted_before: restarted,
      };
      report('C worker-sigkill-delivery', figures);

      assert.deepEqual(
        exits.map((e) => e.process),
        [],
        `no process exits but the one killed:\n${describeExits(exits)}`,
      );
      assert.ok(inflightAtKill > 0, 'the worker was killed with deliveries in flight');
      assert.deepEqual(
        state.lost.slice(0, 20),
        [],
        `every subscribed event of the charges is delivered (${state.lost.length} of ${state.expected} missing)`,
      );
      assert.equal(figures.bad_signatures, 0, 'every delivery is signed with the webhook secret');
      assert.equal(check.duplicates.length, 0, 'no key has two charges');
      assert.equal(final.open, 0, 'every charge ends paid or failed');
    },
  );

  test(
    'D: pg_terminate_backend of every session of the database under load → no process exits, all answer and write within 60 s, nothing acknowledged lost or duplicated',
    { timeout: 240_000 },
    async () => {
      const restarted = await cluster.ensureRunning();
      const mark = cluster.exits.length;
      const load = new Load(cluster, companyKey, 'D', [
        { kind: 'charge', url: '/v1/charges', body: chargeBody, concurrency: 3 },
        {
          kind: 'customer',
          url: '/v1/customers',
          body: (key) => ({ first_name: 'Cliente', last_name: 'Fallas', email: `${key.toLowerCase()}@fault.test` }),
          concurrency: 3,
        },
      ]);
      const terminated: number[] = [];
      load.start();
      let lastTermination = Date.now();
      try {
        // Waits for some more acknowledged writes; gives up at once when no API process runs any more.
        const progress = async (n: number) => {
          const acked = load.records().filter((r) => r.acked).length;
          await until(() => load.records().filter((r) => r.acked).length >= acked + n || cluster.aliveApis().length === 0, 10_000, 20);
        };
        for (let round = 0; round < 5 && cluster.aliveApis().length > 0; round++) {
          await progress(10);
          terminated.push(await db.terminateSessions());
          lastTermination = Date.now();
        }
        await progress(10); // load goes on after the last termination
      } finally {
        await load.stop();
      }
      // Twice more at rest: no request running, the worker idle between polls (its connections to
      // the receiver closed), as when a database fails over at night. A worker whose only ref'd
      // handles were its database sockets used to end here with code 0, saying nothing.
      for (let round = 0; round < 2 && cluster.worker.alive; round++) {
        await until(() => rx.inflight === 0, 10_000, 50);
        await sleep(2_500);
        terminated.push(await db.terminateSessions());
        lastTermination = Date.now();
      }
      await sleep(1_500);
      const unacknowledgedStatuses = load
        .records()
        .filter((r) => !r.acked)
        .map((r) => {
          const a = r.answers.at(-1);
          return a ? (a.status ? String(a.status) : `none:${a.error}`) : 'none';
        })
        .reduce<Record<string, number>>((m, k) => ((m[k] = (m[k] ?? 0) + 1), m), {});

      // Every API process answers /health and a new write within 60 s of the last termination.
      const recovery = await Promise.all(
        cluster.apis.map(async (p) => {
          let health: Answer | undefined;
          let write: Answer | undefined;
          const done = await until(
            async () => {
              if (!p.alive) return 'dead';
              health = await call(p, companyKey, 'GET', '/health', { timeoutMs: 5_000 });
              if (health.status !== 200) return false;
              write = await call(p, companyKey, 'POST', '/v1/customers', {
                body: { first_name: 'Nuevo', email: `after-${p.name}-${Date.now()}@fault.test` },
                timeoutMs: 10_000,
              });
              return ok(write) ? 'ok' : false;
            },
            Math.max(0, lastTermination + 60_000 - Date.now()),
            250,
          );
          return {
            process: p.name,
            outcome: done ?? 'timeout',
            ms: Date.now() - lastTermination,
            health: health?.status,
            write: write?.status ?? write?.error,
          };
        }),
      );
      // The worker keeps working: a new charge's events reach the receiver.
      let workerDelivers = 'dead';
      if (cluster.worker.alive && cluster.aliveApis().length) {
        const probe = await postOk('/v1/charges', chargeBody(`D-probe-${Date.now()}`), `D-probe-${Date.now()}`).catch(() => undefined);
        if (probe) {
          chargeIds.add(idOf(probe)!);
          const delivered = await waitDelivered([idOf(probe)!], Math.max(5_000, lastTermination + 60_000 - Date.now()));
          workerDelivers = delivered.lost.length === 0 ? 'ok' : cluster.worker.alive ? 'not delivered within 60 s' : 'dead';
        } else workerDelivers = 'could not create the probe charge';
      }
      const exits = exitsSince(mark);
      const processesAlive = cluster.all.map((p) => ({
        process: p.name,
        alive: p.alive,
        exitCode: p.proc?.exitCode ?? null,
        signal: p.proc?.signalCode ?? null,
      }));

      // From here on the checks need running processes: dead ones are started again (already counted).
      const restartedAfter = await cluster.ensureRunning();
      const records = load.records();
      const ackedDuringLoad = records.filter((r) => r.acked).length;
      const retry = await retryUnacknowledged(cluster, companyKey, records, { deadline: Date.now() + 60_000 });
      const charges = records.filter((r) => r.kind === 'charge');
      const customers = records.filter((r) => r.kind === 'customer');
      const check = await checkChargeKeys(charges);
      const chargeReads = await mapLimit(
        charges.filter((r) => r.acked),
        8,
        async (r) => ({ key: r.key, id: idOf(r.acked!)!, status: (await getOk(`/v1/charges/${idOf(r.acked!)}`)).status }),
      );
      const customerReads = await mapLimit(customers, 8, async (r) => {
        const list = await getOk(`/v1/customers?filter[email]=${encodeURIComponent(`${r.key.toLowerCase()}@fault.test`)}&per_page=10`);
        const read = r.acked ? (await getOk(`/v1/customers/${idOf(r.acked)}`)).status : undefined;
        return { key: r.key, acked: !!r.acked, id: r.acked ? idOf(r.acked) : undefined, read, count: (list.body?.data ?? []).length };
      });
      const final = await waitChargesFinal(60_000);
      const lostCharges = chargeReads.filter((r) => r.status !== 200);
      const lostCustomers = customerReads.filter((r) => r.acked && r.read !== 200);
      const duplicateCustomers = customerReads.filter((r) => r.count > 1);
      const figures = {
        sessions_terminated: terminated,
        keys: records.length,
        acknowledged_during_load: ackedDuringLoad,
        charges_acknowledged: charges.filter((r) => r.acked).length,
        customers_acknowledged: customers.filter((r) => r.acked).length,
        unacknowledged_statuses: unacknowledgedStatuses,
        retried_keys: retry.retried,
        retried_unresolved: retry.unresolved.length,
        retry_statuses: retry.statuses,
        retry_slowest_ms: retry.slowestMs,
        lost_charges: lostCharges.length,
        lost_customers: lostCustomers.length,
        duplicate_charges: check.duplicates.length + check.twins.length,
        duplicate_customers: duplicateCustomers.length,
        answer_id_mismatch: check.mismatched.length,
        charges_not_final: final.open,
        recovery,
        worker_delivers: workerDelivers,
        process_exits: exits.map((e) => ({ process: e.process, code: e.code, signal: e.signal })),
        processes_alive: processesAlive,
        restarted_before: restarted,
        restarted_after: restartedAfter,
      };
      report('D pg-terminate-backend', figures);

      assert.deepEqual(
        exits.map((e) => `${e.process} code=${e.code} signal=${e.signal}`),
        [],
        `no process exits when its database sessions are terminated:\n${describeExits(exits)}`,
      );
      assert.deepEqual(
        recovery.filter((r) => r.outcome !== 'ok'),
        [],
        'every API process answers /health 200 and a new write within 60 s',
      );
      assert.equal(workerDelivers, 'ok', 'the worker still delivers webhooks after its sessions were terminated');
      assert.deepEqual(lostCharges, [], 'every acknowledged charge is still readable');
      assert.deepEqual(lostCustomers, [], 'every acknowledged customer is still readable');
      assert.deepEqual(
        check.duplicates.map((d) => d.rec.key),
        [],
        'no charge key has two charges',
      );
      assert.deepEqual(check.twins, [], 'no charge key has two charges (database)');
      assert.deepEqual(duplicateCustomers, [], 'no customer key made two customers');
      assert.deepEqual(
        retry.unresolved.map(
          (r) =>
            `${r.key}: ${r.answers
              .slice(-2)
              .map((a) => a.status || a.error)
              .join(', ')}`,
        ),
        [],
        'every unacknowledged key gets a 2xx on retry',
      );
      assert.deepEqual(
        check.mismatched.map((m) => m.rec.key),
        [],
        'the 2xx a key got names its one charge',
      );
      assert.equal(final.open, 0, 'every charge ends paid or failed');
    },
  );

  test('E: the webhook receiver down for a while, then up again → every event delivered', { timeout: 180_000 }, async () => {
    const restarted = await cluster.ensureRunning();
    const mark = cluster.exits.length;
    await rx.down();
    const downAt = new Date();
    const ids: string[] = [];
    for (let i = 0; i < 15; i++) {
      const key = `E-${i}-${Date.now()}`;
      const answer = await postOk('/v1/charges', chargeBody(key), key);
      ids.push(idOf(answer)!);
      chargeIds.add(idOf(answer)!);
    }
    // Down for a while; meanwhile attempts fail (counted, not relied on).
    await sleep(Math.max(0, RECEIVER_DOWN_MS - (Date.now() - downAt.getTime())));
    const failedWhileDown = await db.query<{ n: string }>(
      `SELECT count(*) AS n FROM webhook_attempts WHERE company_id = $1 AND attempted_at >= $2 AND (status_code IS NULL OR status_code >= 300)`,
      [companyId, downAt],
    );
    const undeliveredAtUp = (await undelivered(ids)).lost.length;
    await rx.upAgain();
    const upAt = Date.now();
    const state = await waitDelivered(ids, 120_000);
    const deliveredMs = Date.now() - upAt;
    const failedDeliveries = await db.query<{ n: string }>(
      `SELECT count(*) AS n FROM webhook_deliveries WHERE company_id = $1 AND status = 'failed'`,
      [companyId],
    );
    const exits = exitsSince(mark);
    // Everything of every scenario is delivered by now.
    const all = await undelivered([...chargeIds]);
    const figures = {
      receiver_down_ms: Date.now() - downAt.getTime() - deliveredMs,
      charges: ids.length,
      events_expected: state.expected,
      undelivered_when_back_up: undeliveredAtUp,
      failed_attempts_while_down: Number(failedWhileDown[0]?.n ?? 0),
      lost_events: state.lost.length,
      delivered_after_up_ms: deliveredMs,
      deliveries_failed: Number(failedDeliveries[0]?.n ?? 0),
      all_scenarios_events_expected: all.expected,
      all_scenarios_lost_events: all.lost.length,
      duplicate_deliveries_all: rx.deliveries.length - new Set(rx.deliveries.map((d) => d.id)).size,
      unexpected_process_exits: exits.length,
      restarted_before: restarted,
    };
    report('E receiver-down', figures);

    assert.deepEqual(
      exits.map((e) => e.process),
      [],
      `no process exits:\n${describeExits(exits)}`,
    );
    assert.ok(undeliveredAtUp > 0, 'events were waiting while the receiver was down');
    assert.deepEqual(state.lost, [], 'every event is delivered once the receiver is back');
    assert.equal(figures.deliveries_failed, 0, 'no delivery gave up');
    assert.deepEqual(all.lost.slice(0, 20), [], `every event of every scenario's charges is delivered (${all.lost.length} missing)`);
  });
});
