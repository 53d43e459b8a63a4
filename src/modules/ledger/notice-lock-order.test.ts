import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { sql, type ControlledTransaction } from 'kysely';
import { ENGINE, createHarness, eventually, type Company, type Harness } from '../../../test/harness.ts';
import type { Executor } from '../../platform/db/database.ts';
import type { DB } from '../../platform/db/schema.ts';
import { chargeSource, postChargeRefund } from '../charges/ledger.ts';
import {
  LedgerError,
  auditLedger,
  findTransaction,
  getBalances,
  postTogether,
  recordCollection,
  recordRefund,
  reverse,
  type LedgerScope,
  type LedgerSource,
} from './service.ts';

/**
 * The lock order of a database transaction that posts (docs/ledger.md "Lock order"): account rows
 * first, balance notices last. A charge refund with a split posts two reversals in one database
 * transaction; the first credits the company's available balance (unrolled: no lock), the second
 * debits it (lock). When each posting opened its notices as it went, the refund opened the
 * company's notice before it locked the account, while a refund of the same company did the
 * opposite: PostgreSQL broke the cycle with 40P01 (a 503). Found by an independent review.
 */

const SKIP = ENGINE === 'pglite' && 'PGlite runs one transaction at a time: nothing can run concurrently';

describe(`ledger lock order: accounts, then notices (${ENGINE})`, () => {
  let h: Harness;
  before(async () => {
    h = await createHarness();
    h.clock.freeze();
  });
  after(() => h.close());

  const db = () => h.runtime.deps.database.db;
  const scope = (co: Company): LedgerScope => ({ companyId: co.company.id, environment: 'test', deps: h.runtime.deps });

  async function held(): Promise<{ trx: ControlledTransaction<DB>; pid: number }> {
    const trx = await db().startTransaction().execute();
    const { rows } = await sql<{ pid: number }>`SELECT pg_backend_pid() AS pid`.execute(trx);
    return { trx, pid: Number(rows[0].pid) };
  }
  /** Whether session `waiter` is blocked by session `holder` right now. */
  const blocks = async (holder: number, waiter: number) =>
    (
      await sql<{
        n: number;
      }>`SELECT count(*)::int AS n FROM pg_stat_activity WHERE pid = ${waiter}::int AND ${holder}::int = ANY(pg_blocking_pids(pid))`.execute(db())
    ).rows[0].n > 0;

  test('a charge refund with a split, paused between its reversals, and a refund of the same company: both commit', { skip: SKIP }, async () => {
    const co = await h.company('Orden SAS');
    const partner = await h.company('Socio Orden SAS');
    const charge = { id: `ch_${randomUUID()}` };
    await db()
      .transaction()
      .execute((trx) =>
        recordCollection(trx, scope(co), {
          currency: 'COP',
          amount: 100_00n,
          source: chargeSource(charge),
          splits: [{ walletCompanyId: partner.company.id, amount: 10_00n }],
        }),
      );
    await db()
      .transaction()
      .execute((trx) => recordCollection(trx, scope(co), { currency: 'COP', amount: 50_00n, source: { type: 'test', id: randomUUID() } }));
    // A quiet second: no notice open, so the next posting of each company opens one (an
    // uncommitted row others wait for) rather than only share-locking a committed one.
    await db().deleteFrom('balance_notices').where('company_id', 'in', [co.company.id, partner.company.id]).execute();
    const collection = (await findTransaction(db(), scope(co), { kind: 'collection', source: chargeSource(charge) }))!;

    // t0 pauses the charge refund between its two reversals: an uncommitted stand-in for the
    // reversal of the collection, which the refund's own reversal waits for on the (kind, source)
    // unique index — after the split's reversal, before it locks the company's available account.
    const t0 = await held();
    const t1 = await held();
    const t2 = await held();
    let err1: unknown;
    let err2: unknown;
    let t2done = false;
    let wentThrough = false;
    try {
      await sql`INSERT INTO ledger_transactions (company_id, environment, id, kind, currency, source_type, source_id, created_at)
                VALUES (${co.company.id}, 'test', ${`ltx_stand_in_${randomUUID()}`}, 'reversal', 'COP', 'ledger_transaction', ${collection.id}, ${h.clock.now()})`.execute(
        t0.trx,
      );
      const refund = postChargeRefund(t1.trx, scope(co), charge).catch((e) => (err1 = e));
      await eventually(() => blocks(t0.pid, t1.pid));
      // The split is reversed (the partner's wallet is locked by t1), the collection not yet.
      const refundOfCompany = recordRefund(t2.trx, scope(co), { currency: 'COP', amount: 1_00n, source: { type: 'test', id: randomUUID() } })
        .then(() => t2.trx.commit().execute())
        .then(() => (t2done = true))
        .catch((e) => (err2 = e));
      // Either the refund of the company went through (it locked the account, then opened the
      // notice, and committed) or it waits for t1 — on the notice t1 opened before its last lock.
      await eventually(async () => t2done || err2 !== undefined || (await blocks(t1.pid, t2.pid)));
      wentThrough = t2done;
      await t0.trx.rollback().execute();
      await Promise.all([refund, refundOfCompany]);
      if (err1 === undefined) await t1.trx.commit().execute();
    } finally {
      await t0.trx
        .rollback()
        .execute()
        .catch(() => {});
      await t1.trx
        .rollback()
        .execute()
        .catch(() => {});
      await t2.trx
        .rollback()
        .execute()
        .catch(() => {});
    }
    assert.equal(err1, undefined, `the charge refund failed: ${String(err1)}`);
    assert.equal(err2, undefined, `the refund of the company failed: ${String(err2)}`);
    assert.ok(wentThrough, 'the refund of the company waited for the paused charge refund');
    // 150 collected, 10 split, 1 refunded; the charge refund takes the split back and gives 100 back.
    assert.equal((await getBalances(db(), scope(co)))[0].available, 150_00n - 1_00n - 100_00n);
    assert.equal((await getBalances(db(), scope(partner)))[0].available, 0n);
    assert.deepEqual(await auditLedger(db(), [co.company.id, partner.company.id]), { unbalanced: [], mismatched: [], negative: [] });
  });

  test('two ledger calls in one transaction: a debit after notices is refused; inside postTogether the notices come last', async () => {
    const co = await h.company('Juntos SAS');
    const partner = await h.company('Socio Juntos SAS');
    const charge = { id: `ch_${randomUUID()}` };
    const collect = (source: LedgerSource) =>
      db()
        .transaction()
        .execute((trx) =>
          recordCollection(trx, scope(co), {
            currency: 'COP',
            amount: 100_00n,
            source,
            splits: [{ walletCompanyId: partner.company.id, amount: 10_00n }],
          }),
        );
    await collect(chargeSource(charge));
    await db().deleteFrom('balance_notices').where('company_id', 'in', [co.company.id, partner.company.id]).execute();
    const open = (executor: Executor) =>
      executor.selectFrom('balance_notices').select('company_id').where('company_id', 'in', [co.company.id, partner.company.id]).execute();

    // The reversals as two separate calls: the first takes the notices, the second would then lock
    // the company's available account — the order that deadlocked. Refused, nothing kept.
    await assert.rejects(
      db()
        .transaction()
        .execute(async (trx) => {
          const split = (await findTransaction(trx, scope(co), { kind: 'split', source: chargeSource(charge) }))!;
          await reverse(trx, scope(co), { transactionId: split.id });
          assert.equal((await open(trx)).length, 2, 'a call outside postTogether takes its notices at its end');
          await reverse(trx, scope(co), { kind: 'collection', source: chargeSource(charge) });
        }),
      (e: unknown) => e instanceof LedgerError && /locks accounts after an earlier ledger call/.test(e.message),
    );
    assert.equal((await open(db())).length, 0);

    // Together: no notice until the last posting, then one per company.
    await db()
      .transaction()
      .execute((trx) =>
        postTogether(trx, scope(co), async () => {
          const split = (await findTransaction(trx, scope(co), { kind: 'split', source: chargeSource(charge) }))!;
          await reverse(trx, scope(co), { transactionId: split.id });
          assert.equal((await open(trx)).length, 0, 'no notice inside postTogether');
          await postTogether(trx, scope(co), () => reverse(trx, scope(co), { kind: 'collection', source: chargeSource(charge) }));
          assert.equal((await open(trx)).length, 0, 'a nested postTogether leaves the notices to the outer one');
        }),
      );
    assert.deepEqual((await open(db())).map((n) => n.company_id).sort(), [co.company.id, partner.company.id].sort());
    assert.equal((await getBalances(db(), scope(co)))[0].available, 0n);
    assert.equal((await getBalances(db(), scope(partner)))[0].available, 0n);

    // A credit after notices takes no lock: allowed outside postTogether (a collection and its split).
    await db()
      .transaction()
      .execute(async (trx) => {
        await recordCollection(trx, scope(co), { currency: 'COP', amount: 5_00n, source: { type: 'test', id: randomUUID() } });
        await recordCollection(trx, scope(co), { currency: 'COP', amount: 5_00n, source: { type: 'test', id: randomUUID() } });
      });
    // And the charge refund itself posts together.
    const again = { id: `ch_${randomUUID()}` };
    await collect(chargeSource(again));
    await db().deleteFrom('balance_notices').where('company_id', 'in', [co.company.id, partner.company.id]).execute();
    await db()
      .transaction()
      .execute(async (trx) => {
        await postChargeRefund(trx, scope(co), again);
        assert.equal((await open(trx)).length, 2);
      });
    assert.equal((await getBalances(db(), scope(co)))[0].available, 10_00n);
    assert.deepEqual(await auditLedger(db(), [co.company.id, partner.company.id]), { unbalanced: [], mismatched: [], negative: [] });
  });
});
