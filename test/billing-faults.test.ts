// Issue "Recurring billing": two workers bill subscription cycles while they are killed with
// SIGKILL, on PostgreSQL only. Every cycle must end with exactly one payment (request) or one
// charge (auto_debit): never none, never two. Prints one `FAULT-SUMMARY {...}` line.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  approvingCardBody,
  call,
  Cluster,
  createFaultDatabase,
  ok,
  report,
  ServiceProcess,
  SKIP_UNLESS_POSTGRES,
  sleep,
  until,
  type FaultDatabase,
} from './fault-harness.ts';

const SUBSCRIPTIONS = 60;

describe('billing faults: two workers and SIGKILL during cycle billing (PostgreSQL)', { skip: SKIP_UNLESS_POSTGRES }, () => {
  let db: FaultDatabase;
  let cluster: Cluster;
  let worker2: ServiceProcess;
  let key = '';
  let companyId = '';

  before(async () => {
    db = await createFaultDatabase();
    cluster = new Cluster(db);
    // A short lease: a killed worker's job is taken over quickly by the other one.
    await cluster.start({ apis: 1, env: { JOBS_LEASE_MS: '1500' } });
    worker2 = new ServiceProcess('worker2', 'worker', cluster.env, undefined, (exit) => cluster.exits.push(exit));
    worker2.start();
    await worker2.waitReady();
    ({ companyId, key } = cluster.createCompany('Facturación recurrente'));
  });

  after(async () => {
    await worker2?.kill('SIGKILL').catch(() => {});
    await cluster?.stop();
    await db?.drop();
  });

  test('every cycle billed exactly once: one payment or one charge, across kills of either worker', { timeout: 300_000 }, async () => {
    const api = cluster.apis[0];
    const post = async (url: string, body: unknown) => {
      let last;
      for (let i = 0; i < 20; i++) {
        last = await call(api, key, 'POST', url, { body, idem: `${url}-${JSON.stringify(body)}` });
        if (ok(last)) return last.body;
        await sleep(250);
      }
      throw new Error(`POST ${url}: ${last?.status} ${JSON.stringify(last?.body)}`);
    };
    const workers = [cluster.worker, worker2];
    let kills = 0;
    let killing = true;
    // The killer: every 700 ms one worker (in turn) gets SIGKILL and is started again.
    const killer = (async () => {
      for (let i = 0; killing; i++) {
        await sleep(700);
        const w = workers[i % 2];
        if (!w.alive) continue;
        await w.kill('SIGKILL');
        kills++;
        w.start();
      }
    })();

    const subs: { id: string; mode: string }[] = [];
    for (let i = 0; i < SUBSCRIPTIONS; i++) {
      const customer = await post('/v1/customers', {
        first_name: `Cliente ${i}`,
        last_name: 'Prueba',
        email: `c${i}@example.com`,
        phone: `+5730012${String(i).padStart(5, '0')}`,
      });
      const autoDebit = i % 2 === 0;
      if (autoDebit) await post('/v1/cards', approvingCardBody(customer.id));
      const sub = await post('/v1/subscriptions', {
        customer_id: customer.id,
        name: `Cuota ${i}`,
        amount_in_cents: 1_000_000 + i,
        cicle_frequency: 'monthly',
        payment_mode: autoDebit ? 'auto_debit' : 'request',
      });
      subs.push({ id: sub.id, mode: sub.payment_mode });
    }
    await sleep(3_000);
    killing = false;
    await killer;
    for (const w of workers) if (!w.alive) w.start();
    await Promise.all(workers.map((w) => w.waitReady()));

    // Every subscription gets its first cycle billed and (auto_debit) charged.
    const settled = await until(
      async () => {
        const [row] = await db.query<{ billed: string; charged: string }>(
          `SELECT (SELECT count(*) FROM subscription_cycles WHERE company_id = $1 AND cycle = 1) AS billed,
                  (SELECT count(*) FROM charges WHERE company_id = $1 AND status IN ('paid', 'failed')) AS charged`,
          [companyId],
        );
        return Number(row.billed) === SUBSCRIPTIONS && Number(row.charged) >= SUBSCRIPTIONS / 2;
      },
      120_000,
      500,
    );
    const payments = await db.query<{ subscription_id: string; n: string }>(
      `SELECT subscription_id, count(*) AS n FROM payments WHERE company_id = $1 AND subscription_id IS NOT NULL GROUP BY 1`,
      [companyId],
    );
    const charges = await db.query<{ sub: string; n: string }>(
      `SELECT split_part(external_id, '-', 1) AS sub, count(*) AS n FROM charges WHERE company_id = $1 AND external_id LIKE 'sub_%' GROUP BY 1`,
      [companyId],
    );
    const paymentsBySub = new Map(payments.map((p) => [p.subscription_id, Number(p.n)]));
    const chargesBySub = new Map(charges.map((c) => [c.sub, Number(c.n)]));
    const wrong = subs.filter((s) =>
      s.mode === 'request' ? paymentsBySub.get(s.id) !== 1 || chargesBySub.has(s.id) : chargesBySub.get(s.id) !== 1 || paymentsBySub.has(s.id),
    );
    const unexpected = [...cluster.unexpectedExits, ...worker2.exits.filter((e) => !e.expected)];
    report('billing-sigkill', {
      subscriptions: SUBSCRIPTIONS,
      kills,
      payments: payments.reduce((n, p) => n + Number(p.n), 0),
      charges: charges.reduce((n, c) => n + Number(c.n), 0),
      wrong: wrong.length,
      settled: !!settled,
    });
    assert.ok(settled, 'every first cycle billed and charged within two minutes');
    assert.ok(kills >= 5, `workers were killed during billing (${kills} kills)`);
    assert.deepEqual(
      wrong.map((s) => `${s.id} ${s.mode}: ${paymentsBySub.get(s.id) ?? 0} payments, ${chargesBySub.get(s.id) ?? 0} charges`),
      [],
    );
    assert.deepEqual(unexpected, [], 'no process exit we did not cause');
  });
});
