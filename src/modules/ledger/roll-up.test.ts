import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { Writable } from 'node:stream';
import pino from 'pino';
import { ENGINE, createHarness, type Company, type Harness } from '../../../test/harness.ts';
import { runRollUp } from './balance-events.ts';
import { rollUp } from './roll-up.ts';
import { auditLedger, companyAvailableBalance, recordCollection, recordRefund, type LedgerScope } from './service.ts';

/**
 * The roll-up with a broken account (roll-up.ts foldLocked): an account whose unrolled rows sum
 * below what its cached part holds — which only a bug can make — is left unrolled and reported;
 * the company's other accounts fold in the same roll-up, and the job logs it and succeeds. Before,
 * one statement folded every account and the CHECK on the broken one failed the whole roll-up,
 * every time.
 */

describe(`ledger roll-up with a broken account (${ENGINE})`, () => {
  let h: Harness;
  const lines: Record<string, unknown>[] = [];
  before(async () => {
    const stream = new Writable({
      write(chunk, _enc, cb) {
        for (const l of String(chunk).split('\n')) if (l.trim()) lines.push(JSON.parse(l));
        cb();
      },
    });
    h = await createHarness({}, { logger: pino({ level: 'info' }, stream) });
    h.clock.freeze();
  });
  after(() => h.close());

  const db = () => h.runtime.deps.database.db;
  const scope = (co: Company): LedgerScope => ({ companyId: co.company.id, environment: 'test', deps: h.runtime.deps });
  const unrolled = async (co: Company) =>
    (
      await db()
        .selectFrom('ledger_unrolled_entries as u')
        .innerJoin('ledger_accounts as a', 'a.id', 'u.account_id')
        .select(['a.kind', 'u.amount'])
        .where('u.company_id', '=', co.company.id)
        .orderBy('u.amount')
        .execute()
    ).map((r) => [r.kind, BigInt(r.amount)]);

  test('an account whose fold would go below zero is left out and logged; the others fold and stay usable', async () => {
    const co = await h.company('Roto SAS');
    const collect = (amount: bigint, pending = false) =>
      db()
        .transaction()
        .execute((trx) => recordCollection(trx, scope(co), { currency: 'COP', amount, source: { type: 'test', id: randomUUID() }, pending }));
    await collect(100_00n);
    await collect(30_00n, true);
    const pending = await db()
      .selectFrom('ledger_accounts')
      .select('id')
      .where('company_id', '=', co.company.id)
      .where('kind', '=', 'company_pending')
      .executeTakeFirstOrThrow();
    // The trace of a bug: an unrolled debit of the pending account larger than what it holds.
    const broken = { company_id: co.company.id, environment: 'test' as const, account_id: pending.id, entry_id: 'len_broken', amount: -50_00n };
    await db().insertInto('ledger_unrolled_entries').values(broken).execute();

    const result = await rollUp(db(), scope(co), { now: h.clock.now() });
    assert.deepEqual(result.skipped, [{ accountId: pending.id, rolledUp: 0n, unrolled: -20_00n }]);
    assert.deepEqual(
      { accounts: result.accounts, entries: result.entries },
      { accounts: 2, entries: 3 },
      'available (one credit) and clearing (two) folded',
    );
    assert.deepEqual(await unrolled(co), [
      ['company_pending', -50_00n],
      ['company_pending', 30_00n],
    ]);
    // The available balance, folded, still pays a refund (a debit folds and checks its account).
    await db()
      .transaction()
      .execute((trx) => recordRefund(trx, scope(co), { currency: 'COP', amount: 10_00n, source: { type: 'test', id: randomUUID() } }));
    assert.equal(await companyAvailableBalance(db(), scope(co)), 90_00n);

    // The job: logs the account and succeeds (the clearing credit of the refund folds).
    await runRollUp(h.runtime.deps, { company_id: co.company.id, environment: 'test', currency: 'COP' });
    const logged = lines.filter((l) => l.accountId === pending.id);
    assert.equal(logged.length, 1);
    assert.equal(logged[0].level, 50, 'an error');
    assert.match(String(logged[0].msg), /left an account unrolled/);
    assert.deepEqual(await unrolled(co), [
      ['company_pending', -50_00n],
      ['company_pending', 30_00n],
    ]);
    assert.deepEqual((await auditLedger(db(), [co.company.id])).negative, [pending.id], 'the audit shows the broken account');

    // Repaired (the stray row gone), it folds like any other.
    await db().deleteFrom('ledger_unrolled_entries').where('company_id', '=', co.company.id).where('entry_id', '=', 'len_broken').execute();
    const again = await rollUp(db(), scope(co), { now: h.clock.now() });
    assert.deepEqual(again, { accounts: 1, entries: 1, skipped: [] });
    assert.deepEqual(await unrolled(co), []);
    assert.deepEqual(await auditLedger(db(), [co.company.id]), { unbalanced: [], mismatched: [], negative: [] });
  });
});
