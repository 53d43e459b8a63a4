import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { ENGINE, createHarness, type Company, type Harness } from '../../../test/harness.ts';
import { createCustomer } from '../../../test/support/cards.ts';
import { BALANCE_NOTICE_JOB } from './balance-notices.ts';
import { sendBalanceNotice } from './balance-events.ts';
import { auditLedger, depositToCustomerWallet, holdPayout, recordCollection, recordRefund, type LedgerScope } from './service.ts';

/**
 * balance.updated (docs/ledger.md "balance.updated"): every change of a company's figures
 * (available, pending, held) is followed by the event with the new figures, a burst by one event
 * per second at most, per company, environment and currency. Time moves through the harness clock;
 * the jobs of this file's companies are run by hand (the shared PostgreSQL queue holds other files').
 */

type Env = 'test' | 'live';

describe('balance.updated', () => {
  let h: Harness;
  const mine: Company[] = [];
  const company = async (name: string) => {
    const c = await h.company(name);
    mine.push(c);
    return c;
  };
  const scope = (co: Company, environment: Env = 'test'): LedgerScope => ({ companyId: co.company.id, environment, deps: h.runtime.deps });
  const db = () => h.runtime.deps.database.db;

  const collect = (
    co: Company,
    minor: bigint,
    opts: { env?: Env; currency?: string; pending?: boolean; splits?: { walletCompanyId: string; amount: bigint }[] } = {},
  ) =>
    db()
      .transaction()
      .execute((trx) =>
        recordCollection(trx, scope(co, opts.env), {
          currency: opts.currency ?? 'COP',
          amount: minor,
          source: { type: 'test', id: randomUUID() },
          pending: opts.pending,
          splits: opts.splits,
        }),
      );

  /** The due balance jobs of this file's companies, run as the worker would (until none is due). */
  async function runDue(): Promise<number> {
    let ran = 0;
    for (;;) {
      const jobs = await db()
        .selectFrom('jobs')
        .select(['id', 'payload'])
        .where('kind', '=', BALANCE_NOTICE_JOB)
        .where(
          sql<string>`payload->>'company_id'`,
          'in',
          mine.map((c) => c.company.id),
        )
        .where('run_at', '<=', h.clock.now())
        .orderBy('run_at')
        .execute();
      if (jobs.length === 0) return ran;
      for (const job of jobs) {
        await db().deleteFrom('jobs').where('id', '=', job.id).execute();
        await sendBalanceNotice(h.runtime.deps, job.payload as Record<string, unknown>);
        ran++;
      }
    }
  }

  const pendingJobs = async (co: Company) =>
    (
      await db()
        .selectFrom('jobs')
        .select('id')
        .where('kind', '=', BALANCE_NOTICE_JOB)
        .where(sql<string>`payload->>'company_id'`, '=', co.company.id)
        .execute()
    ).length;

  async function events(co: Company, env?: Env) {
    const rows = await db()
      .selectFrom('events')
      .select(['id', 'data', 'environment', 'created_at', 'payload'])
      .where('company_id', '=', co.company.id)
      .where('type', '=', 'balance.updated')
      .$if(!!env, (q) => q.where('environment', '=', env!))
      .orderBy('created_at')
      .orderBy('id')
      .execute();
    return rows.map((r) => ({
      ...r,
      data: r.data as unknown as { currency: string; available: number; pending: number; held: number },
      payload: (typeof r.payload === 'string' ? JSON.parse(r.payload) : r.payload) as { event: string; is_test: boolean },
    }));
  }

  async function figures(co: Company, currency = 'COP', env: Env = 'test') {
    const res = await co.req({ url: '/v1/balances', env });
    assert.equal(res.status, 200, res.raw);
    return res.body.data.find((b: { currency: string }) => b.currency === currency);
  }

  before(async () => {
    h = await createHarness();
    h.clock.freeze();
  });
  after(() => h.close());

  test('a burst of postings emits one event a second later, with the figures after the burst', async () => {
    const co = await company('Ráfaga SAS');
    const customer = await createCustomer(co, 'test', 'Ana');
    for (let i = 0; i < 10; i++) await collect(co, 1_000_00n);
    await collect(co, 500_00n, { pending: true });
    for (let i = 0; i < 3; i++) {
      const res = await co.req({ url: `/v1/customers/${customer}/transactions`, body: { amount: 100 } });
      assert.equal(res.status, 200, res.raw);
    }
    await db()
      .transaction()
      .execute((trx) => recordRefund(trx, scope(co), { currency: 'COP', amount: 50_00n, source: { type: 'test', id: randomUUID() } }));
    assert.equal(await pendingJobs(co), 1, 'one job for the whole burst');
    assert.equal(await runDue(), 0, 'not due yet');
    h.clock.advance(999);
    assert.equal(await runDue(), 0, 'not due before a second');
    assert.deepEqual(await events(co), []);
    h.clock.advance(1);
    assert.equal(await runDue(), 1);
    const sent = await events(co);
    assert.equal(sent.length, 1);
    assert.deepEqual(sent[0].data, { currency: 'COP', available: 9650, pending: 500, held: 0 });
    assert.deepEqual(sent[0].data, await figures(co), 'the figures of GET /balances');
    assert.equal(sent[0].payload.event, 'balance.updated');
    assert.equal(sent[0].environment, 'test');
    // Quiet: nothing more, however long we wait.
    h.clock.advance(60_000);
    assert.equal(await runDue(), 0);
    assert.equal((await events(co)).length, 1);
  });

  test('a change right after an event waits for its own second: at most one event per second', async () => {
    const co = await company('Segundo SAS');
    await collect(co, 1_000_00n);
    h.clock.advance(1000);
    await runDue();
    assert.equal((await events(co)).length, 1);
    await collect(co, 2_000_00n);
    h.clock.advance(500);
    await collect(co, 3_000_00n);
    assert.equal(await runDue(), 0);
    h.clock.advance(500);
    assert.equal(await runDue(), 1);
    const sent = await events(co);
    assert.equal(sent.length, 2);
    assert.equal(sent[1].data.available, 6000);
    assert.ok(new Date(sent[1].created_at).getTime() - new Date(sent[0].created_at).getTime() >= 1000);
    // A notice due while the last event is less than a second old (clocks of two workers apart):
    // the job comes back when the second is over instead of emitting.
    await collect(co, 1_00n);
    await db().updateTable('balance_notices').set({ due_at: h.clock.now() }).where('company_id', '=', co.company.id).execute();
    await db()
      .updateTable('jobs')
      .set({ run_at: h.clock.now() })
      .where('kind', '=', BALANCE_NOTICE_JOB)
      .where(sql<string>`payload->>'company_id'`, '=', co.company.id)
      .execute();
    assert.equal(await runDue(), 1);
    assert.equal((await events(co)).length, 2, 'held back');
    assert.equal(await pendingJobs(co), 1, 'rescheduled');
    h.clock.advance(1000);
    assert.equal(await runDue(), 1);
    assert.equal((await events(co)).length, 3);
    assert.equal((await events(co))[2].data.available, 6001);
  });

  test('every figure counts: pending, held, a split into another company, a deposit into a customer wallet; not the clearing alone', async () => {
    const co = await company('Figuras SAS');
    const partner = await company('Socio SAS');
    const customer = await createCustomer(co, 'test', 'Beto');
    await collect(co, 10_000_00n, { splits: [{ walletCompanyId: partner.company.id, amount: 2_500_00n }] });
    h.clock.advance(1000);
    await runDue();
    assert.deepEqual(
      (await events(co)).map((e) => e.data),
      [{ currency: 'COP', available: 7500, pending: 0, held: 0 }],
    );
    assert.deepEqual(
      (await events(partner)).map((e) => e.data),
      [{ currency: 'COP', available: 2500, pending: 0, held: 0 }],
      'the receiving company hears of its wallet',
    );
    await db()
      .transaction()
      .execute((trx) =>
        holdPayout(trx, scope(co), {
          currency: 'COP',
          amount: 1_000_00n,
          source: { type: 'test', id: randomUUID() },
          from: { kind: 'company_available' },
        }),
      );
    h.clock.advance(1000);
    await runDue();
    assert.deepEqual((await events(co)).at(-1)!.data, { currency: 'COP', available: 6500, pending: 0, held: 1000 });
    await db()
      .transaction()
      .execute((trx) =>
        depositToCustomerWallet(trx, scope(co), {
          currency: 'COP',
          amount: 500_00n,
          source: { type: 'test', id: randomUUID() },
          customerId: customer,
        }),
      );
    h.clock.advance(1000);
    await runDue();
    assert.deepEqual((await events(co)).at(-1)!.data, { currency: 'COP', available: 6000, pending: 0, held: 1000 });
    assert.equal((await events(partner)).length, 1, 'no news for the partner');
    assert.deepEqual(await auditLedger(db(), [co.company.id, partner.company.id]), { unbalanced: [], mismatched: [], negative: [] });
  });

  test('per environment and per currency; a refused or rolled-back posting is no change', async () => {
    const co = await company('Monedas SAS');
    await collect(co, 10_00n, { currency: 'USD' });
    await collect(co, 7_000_00n, { env: 'live' });
    h.clock.advance(1000);
    assert.equal(await runDue(), 2);
    assert.deepEqual(
      (await events(co, 'test')).map((e) => e.data),
      [{ currency: 'USD', available: 10, pending: 0, held: 0 }],
    );
    const live = await events(co, 'live');
    assert.deepEqual(
      live.map((e) => e.data),
      [{ currency: 'COP', available: 7000, pending: 0, held: 0 }],
    );
    assert.equal(live[0].payload.is_test, false);
    // Refused (insufficient): nothing posted, no notice.
    const customer = await createCustomer(co, 'test', 'Carla');
    const refused = await co.req({ url: `/v1/customers/${customer}/transactions`, body: { amount: 1 } });
    assert.equal(refused.status, 422, refused.raw);
    // Rolled back after posting: the notice goes with it.
    await assert.rejects(
      db()
        .transaction()
        .execute(async (trx) => {
          await recordCollection(trx, scope(co), { currency: 'COP', amount: 1_00n, source: { type: 'test', id: randomUUID() } });
          throw new Error('rollback');
        }),
      /rollback/,
    );
    assert.equal(await pendingJobs(co), 0);
    assert.equal((await db().selectFrom('balance_notices').select('currency').where('company_id', '=', co.company.id).execute()).length, 0);
    h.clock.advance(5000);
    assert.equal(await runDue(), 0);
    assert.equal((await events(co)).length, 2);
  });

  test('webhooks subscribe to balance.updated and get it', async () => {
    const co = await company('Suscrita SAS');
    const hook = await co.req({ url: '/v1/webhooks', body: { name: 'Saldos', url: 'http://localhost:9/hook', events: ['balance.updated'] } });
    assert.equal(hook.status, 200, hook.raw);
    await collect(co, 1_00n);
    h.clock.advance(1000);
    await runDue();
    const [event] = await events(co);
    const deliveries = await db()
      .selectFrom('webhook_deliveries')
      .select('event_id')
      .where('company_id', '=', co.company.id)
      .where('webhook_id', '=', hook.body.data.id)
      .execute();
    assert.deepEqual(
      deliveries.map((d) => d.event_id),
      [event.id],
    );
  });

  test(`parallel postings while the job runs: each window gets one event and the last event has the final figures (${ENGINE})`, async () => {
    const co = await company('Paralela SAS');
    const customer = await createCustomer(co, 'test', 'Dora');
    await collect(co, 100_000_00n);
    let expected = 100_000_00n;
    for (let round = 0; round < 3; round++) {
      h.clock.advance(1000);
      // Postings and the due job at the same time: the job's figures either include a posting or
      // that posting opened (or joined) the next notice.
      const work: Promise<unknown>[] = [runDue()];
      for (let i = 0; i < 15; i++) {
        if (i % 3 === 0) work.push(co.req({ url: `/v1/customers/${customer}/transactions`, body: { amount: 10 } }));
        else work.push(collect(co, 1_00n));
        expected += i % 3 === 0 ? -10_00n : 1_00n;
      }
      await Promise.all(work);
    }
    h.clock.advance(1000);
    await runDue();
    h.clock.advance(1000);
    await runDue();
    assert.equal(await pendingJobs(co), 0);
    const sent = await events(co);
    assert.ok(sent.length >= 2 && sent.length <= 5, `one event per window (${sent.length})`);
    for (let i = 1; i < sent.length; i++)
      assert.ok(new Date(sent[i].created_at).getTime() - new Date(sent[i - 1].created_at).getTime() >= 1000, 'a second apart at least');
    assert.equal(sent.at(-1)!.data.available * 100, Number(expected));
    assert.deepEqual(sent.at(-1)!.data, await figures(co));
  });
});
