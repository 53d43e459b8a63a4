import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { sql, type ControlledTransaction, type Transaction } from 'kysely';
import { ENGINE, createHarness, eventually, type Company, type Harness } from '../../../test/harness.ts';
import type { DB } from '../../platform/db/schema.ts';
import { ApiError } from '../../platform/errors/api-error.ts';
import { rollUp } from './roll-up.ts';
import { auditLedger, getBalances, holdPayout, recordCollection, recordRefund, type LedgerScope } from './service.ts';

/**
 * The hot accounts of a company (docs/ledger.md "Hot accounts: credits without a lock") on
 * PostgreSQL, with transactions held open by hand on separate connections: collections of one
 * company never wait for each other; a debit waits only for other debits of the same account,
 * counts every credit committed before it got the lock, and never takes a balance below zero.
 *
 * PGlite has one session and kysely's PGliteDialect runs one transaction at a time, so a second
 * transaction cannot even start while one is held open: these tests skip there (the property test
 * roll-up.property.test.ts runs on both engines).
 */

const SKIP = ENGINE === 'pglite' && 'PGlite runs one transaction at a time: nothing can run concurrently';
/** A statement that waits this long for a lock fails the test (the claim is that it never waits). */
const NO_WAIT = sql`SET LOCAL lock_timeout = '3s'`;

describe(`ledger hot accounts (${ENGINE})`, { skip: SKIP }, () => {
  let h: Harness;
  before(async () => {
    h = await createHarness();
    // The balance notices stay open for the whole file (no job runs): every posting only joins
    // the company's notice, so what is measured here is the ledger's own locking.
    h.clock.freeze();
  });
  after(() => h.close());

  const db = () => h.runtime.deps.database.db;
  const scope = (co: Company): LedgerScope => ({ companyId: co.company.id, environment: 'test', deps: h.runtime.deps });
  const src = () => ({ type: 'test', id: randomUUID() });
  const available = async (co: Company) => (await getBalances(db(), scope(co))).find((b) => b.currency === 'COP')!.available;
  const isInsufficient = (e: unknown) => e instanceof ApiError && e.def.codeName === 'insufficient_balance';

  /** A transaction that must never wait for a lock (it fails after 3 s if it does). */
  const unblocked = <T>(fn: (trx: Transaction<DB>) => Promise<T>) =>
    db()
      .transaction()
      .execute(async (trx) => {
        await NO_WAIT.execute(trx);
        return fn(trx);
      });

  async function held(): Promise<{ trx: ControlledTransaction<DB>; pid: number }> {
    const trx = await db().startTransaction().execute();
    const { rows } = await sql<{ pid: number }>`SELECT pg_backend_pid() AS pid`.execute(trx);
    return { trx, pid: Number(rows[0].pid) };
  }

  /** Waits until some session is blocked by the session `pid` (pg_blocking_pids). */
  const blockedBy = (pid: number) =>
    eventually(
      async () =>
        (await sql<{ n: number }>`SELECT count(*)::int AS n FROM pg_stat_activity WHERE ${pid}::int = ANY(pg_blocking_pids(pid))`.execute(db()))
          .rows[0].n > 0,
    );

  test('a collection held open does not block other collections of the same company (plain, pending, with splits)', async () => {
    const co = await h.company('Caliente SAS');
    const partner = await h.company('Socio Caliente SAS');
    // Accounts and the balance notices exist (the first postings of a company create them).
    await db()
      .transaction()
      .execute((trx) =>
        recordCollection(trx, scope(co), {
          currency: 'COP',
          amount: 1_00n,
          source: src(),
          splits: [{ walletCompanyId: partner.company.id, amount: 1n }],
        }),
      );
    await db()
      .transaction()
      .execute((trx) => recordCollection(trx, scope(co), { currency: 'COP', amount: 1_00n, source: src(), pending: true }));
    const start = await available(co);

    const a = await held();
    try {
      await recordCollection(a.trx, scope(co), {
        currency: 'COP',
        amount: 500_00n,
        source: src(),
        splits: [{ walletCompanyId: partner.company.id, amount: 100_00n }],
      });
      // Meanwhile, on other connections: each commits while `a` holds its writes uncommitted.
      await unblocked((trx) => recordCollection(trx, scope(co), { currency: 'COP', amount: 20_00n, source: src() }));
      await unblocked((trx) => recordCollection(trx, scope(co), { currency: 'COP', amount: 3_00n, source: src(), pending: true }));
      await unblocked((trx) =>
        recordCollection(trx, scope(co), {
          currency: 'COP',
          amount: 10_00n,
          source: src(),
          splits: [{ walletCompanyId: partner.company.id, amount: 4_00n }],
        }),
      );
      await Promise.all(
        Array.from({ length: 8 }, () => unblocked((trx) => recordCollection(trx, scope(co), { currency: 'COP', amount: 1_00n, source: src() }))),
      );
      // Readers see the committed ones, exactly, and nothing of `a`.
      const res = await co.req({ url: '/v1/balances' });
      assert.deepEqual(res.body.data, [{ currency: 'COP', available: Number(start + 20_00n + 6_00n + 8_00n) / 100, pending: 1 + 3, held: 0 }]);
      await a.trx.commit().execute();
    } catch (error) {
      await a.trx.rollback().execute();
      throw error;
    }
    assert.equal(await available(co), start + 400_00n + 20_00n + 6_00n + 8_00n);
    assert.deepEqual(await auditLedger(db(), [co.company.id, partner.company.id]), { unbalanced: [], mismatched: [], negative: [] });
  });

  test('a debit waiting for another counts the credits committed while it waited; racing debits never go below zero', async () => {
    const co = await h.company('Piso SAS');
    await db()
      .transaction()
      .execute((trx) => recordCollection(trx, scope(co), { currency: 'COP', amount: 100_00n, source: src() }));
    // d1 takes everything and holds the account's lock.
    const d1 = await held();
    let d2: Promise<unknown> | undefined;
    try {
      await recordRefund(d1.trx, scope(co), { currency: 'COP', amount: 100_00n, source: src() });
      // d2 needs 70.00 that does not exist yet: it queues behind d1 for the account's lock.
      d2 = db()
        .transaction()
        .execute((trx) => recordRefund(trx, scope(co), { currency: 'COP', amount: 70_00n, source: src() }));
      d2.catch(() => {});
      await blockedBy(d1.pid);
      // Credits are not held up by the debits' lock; they commit while d2 waits.
      await unblocked((trx) => recordCollection(trx, scope(co), { currency: 'COP', amount: 30_00n, source: src() }));
      await unblocked((trx) => recordCollection(trx, scope(co), { currency: 'COP', amount: 40_00n, source: src() }));
      await d1.trx.commit().execute();
    } catch (error) {
      await d1.trx.rollback().execute();
      throw error;
    }
    // d2 folded the two credits after it got the lock: exactly enough.
    await d2;
    assert.equal(await available(co), 0n);
    await assert.rejects(
      db()
        .transaction()
        .execute((trx) => recordRefund(trx, scope(co), { currency: 'COP', amount: 1n, source: src() })),
      isInsufficient,
    );

    // An uncommitted credit is no money yet: a debit that needs it is refused, not made to wait.
    const c = await held();
    try {
      await recordCollection(c.trx, scope(co), { currency: 'COP', amount: 50_00n, source: src() });
      await assert.rejects(
        unblocked((trx) => recordRefund(trx, scope(co), { currency: 'COP', amount: 50_00n, source: src() })),
        isInsufficient,
      );
      await c.trx.commit().execute();
    } catch (error) {
      await c.trx.rollback().execute();
      throw error;
    }
    await db()
      .transaction()
      .execute((trx) => recordRefund(trx, scope(co), { currency: 'COP', amount: 50_00n, source: src() }));
    assert.equal(await available(co), 0n);
    assert.deepEqual(await auditLedger(db(), [co.company.id]), { unbalanced: [], mismatched: [], negative: [] });
  });

  test('many credits, debits, holds, roll-ups and audits at once: never below zero, the balance is the sum of what passed', async () => {
    const co = await h.company('Carrera SAS');
    const initial = 50_00n;
    await db()
      .transaction()
      .execute((trx) => recordCollection(trx, scope(co), { currency: 'COP', amount: initial, source: src() }));
    let credited = 0n;
    let debited = 0n;
    const audits: unknown[] = [];
    const work: Promise<unknown>[] = [];
    for (let i = 0; i < 90; i++) {
      const amount = BigInt(1 + ((i * 37) % 23)) * 1_00n;
      switch (i % 6) {
        case 0:
        case 3:
          work.push(
            db()
              .transaction()
              .execute((trx) => recordCollection(trx, scope(co), { currency: 'COP', amount, source: src() }))
              .then(() => (credited += amount)),
          );
          break;
        case 1:
          work.push(
            db()
              .transaction()
              .execute((trx) => recordRefund(trx, scope(co), { currency: 'COP', amount, source: src() }))
              .then(
                () => (debited += amount),
                (e) => assert.ok(isInsufficient(e), String(e)),
              ),
          );
          break;
        case 2:
          work.push(
            db()
              .transaction()
              .execute((trx) => holdPayout(trx, scope(co), { currency: 'COP', amount, source: src(), from: { kind: 'company_available' } }))
              .then(
                () => (debited += amount),
                (e) => assert.ok(isInsufficient(e), String(e)),
              ),
          );
          break;
        case 4:
          work.push(rollUp(db(), scope(co), { now: h.clock.now() }));
          break;
        case 5:
          // Each check is one statement on one snapshot: exact even while everything moves.
          work.push(auditLedger(db(), [co.company.id]).then((a) => audits.push(a)));
          break;
      }
    }
    await Promise.all(work);
    for (const a of audits) assert.deepEqual(a, { unbalanced: [], mismatched: [], negative: [] });
    assert.ok(debited > 0n, 'some debits passed');
    const [cop] = await getBalances(db(), scope(co));
    assert.equal(cop.available, initial + credited - debited);
    await rollUp(db(), scope(co), { now: h.clock.now() });
    const rows = await db()
      .selectFrom('ledger_account_balances')
      .select(['kind', 'balance', 'rolled_up_balance'])
      .where('company_id', '=', co.company.id)
      .execute();
    for (const r of rows) assert.equal(r.balance, r.rolled_up_balance, `${r.kind}: everything rolled up`);
    assert.deepEqual(await auditLedger(db(), [co.company.id]), { unbalanced: [], mismatched: [], negative: [] });
  });
});
