// Fault test of cash-outs (issue 14), on PostgreSQL only: two API processes and a worker run as
// real child processes; cash-outs are created under load with remembered idempotency keys while
// each API process in turn is killed with SIGKILL. Every key that got no 2xx is retried with the
// same key and body. Then: one cash-out per key, every cash-out final, the ledger audits clean,
// nothing held any more, and the money that left is exactly the completed cash-outs (no double
// payout, no lost hold). Prints one line `FAULT-SUMMARY {...}`.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  approvingCardBody,
  call,
  Cluster,
  createFaultDatabase,
  idOf,
  Load,
  ok,
  report,
  retryUnacknowledged,
  SKIP_UNLESS_POSTGRES,
  until,
  type Answer,
  type FaultDatabase,
} from './fault-harness.ts';
import { bankId } from '../src/modules/banks/catalogue.ts';

describe('cash-out fault test: SIGKILL of API processes with cash-outs in flight (issue 14)', { skip: SKIP_UNLESS_POSTGRES }, () => {
  let db: FaultDatabase;
  let cluster: Cluster;
  let key = '';
  let companyId = '';
  let customerId = '';
  let accountId = '';

  async function postOk(url: string, body: unknown, idem: string): Promise<Answer> {
    let last: Answer | undefined;
    await until(
      async () => {
        const target = cluster.aliveApis()[0];
        last = await call(target, key, 'POST', url, { body, idem, timeoutMs: 20_000 });
        return ok(last);
      },
      60_000,
      500,
    );
    if (!last || !ok(last)) throw new Error(`POST ${url}: ${last?.status} ${JSON.stringify(last?.body)}`);
    return last;
  }

  before(
    async () => {
      db = await createFaultDatabase();
      cluster = new Cluster(db);
      await cluster.start({ env: { SANDBOX_CASHOUT_DELAY_MS: '300' } });
      const company = cluster.createCompany('Dispersiones Fallas SAS');
      key = company.key;
      companyId = company.companyId;
      customerId = idOf(await postOk('/v1/customers', { first_name: 'Ana', last_name: 'Fallas', email: 'ana@fallas.test' }, 'setup-customer'))!;
      const card = await postOk('/v1/cards', approvingCardBody(customerId), 'setup-card');
      // 2,000,000 pesos collected: enough for far fewer cash-outs than the load sends.
      for (let i = 0; i < 4; i++) {
        const paid = await postOk(
          '/v1/charges',
          { amount: 500000, title: 'Fondeo de prueba', customer_id: customerId, card_id: idOf(card) },
          `fund-${i}`,
        );
        assert.equal(paid.body.status, 'paid');
      }
      accountId = idOf(
        await postOk(
          '/v1/accounts',
          { subtype: 'SAVINGS', bank_id: bankId('1007'), account_number: '1234567890', authorization: true, customer_id: customerId },
          'setup-account',
        ),
      )!;
      const active = await until(
        async () => (await db.query(`SELECT status FROM accounts WHERE id = $1`, [accountId]))[0]?.status === 'ACTIVE',
        30_000,
        200,
      );
      assert.ok(active, 'the sandbox bank confirmed the account');
    },
    { timeout: 240_000 },
  );

  after(
    async () => {
      await cluster?.stop();
      await db?.drop();
    },
    { timeout: 60_000 },
  );

  test('one cash-out per key, all final, nothing held, the money out equals the completed cash-outs', { timeout: 300_000 }, async () => {
    const load = new Load(cluster, key, 'CO', [
      {
        kind: 'cashout',
        url: '/v1/cashouts',
        body: (k) => ({ amount: 1000, customer_id: customerId, account_id: accountId, external_id: k.slice(0, 100) }),
        concurrency: 3,
      },
    ]);
    load.start();
    const kills: string[] = [];
    try {
      for (const victim of cluster.apis) {
        const acked = load.records().filter((r) => r.acked).length;
        await until(() => load.records().filter((r) => r.acked).length >= acked + 15, 30_000, 20);
        await victim.kill('SIGKILL');
        kills.push(victim.name);
        victim.start();
        await victim.waitReady();
      }
    } finally {
      await load.stop();
    }
    const records = load.records();
    // A key may end 422 10501 once the balance is spent: a final answer, not retried.
    const retry = await retryUnacknowledged(cluster, key, records, { deadline: Date.now() + 90_000 });
    const settled = await until(
      async () =>
        Number(
          (await db.query(`SELECT count(*) AS n FROM cashouts WHERE company_id = $1 AND status IN ('created', 'processing')`, [companyId]))[0].n,
        ) === 0,
      90_000,
      500,
    );
    const rows = await db.query<{ idempotency_key: string; status: string; amount: string }>(
      `SELECT idempotency_key, status, amount FROM cashouts WHERE company_id = $1`,
      [companyId],
    );
    const perKey = new Map<string, number>();
    for (const r of rows) perKey.set(r.idempotency_key, (perKey.get(r.idempotency_key) ?? 0) + 1);
    const twins = [...perKey.values()].filter((n) => n > 1).length;
    const accounts = await db.query<{ kind: string; balance: string }>(
      `SELECT kind, balance FROM ledger_account_balances WHERE company_id = $1 AND environment = 'test' AND currency = 'COP'`,
      [companyId],
    );
    const bal = (kind: string) => BigInt(accounts.find((a) => a.kind === kind)?.balance ?? '0');
    const completed = rows.filter((r) => r.status === 'completed').reduce((s, r) => s + BigInt(r.amount), 0n);
    const payouts = await db.query<{ n: string }>(`SELECT count(*) AS n FROM ledger_transactions WHERE company_id = $1 AND kind = 'payout'`, [
      companyId,
    ]);
    const unbalanced = await db.query(
      `SELECT t.id FROM ledger_transactions t JOIN ledger_entries e ON e.transaction_id = t.id WHERE t.company_id = $1 GROUP BY t.id HAVING sum(e.amount) <> 0`,
      [companyId],
    );
    const acknowledgedWithout = records.filter((r) => r.acked && !rows.some((row) => row.idempotency_key === r.key));
    const figures = {
      keys: records.length,
      killed: kills,
      retried: retry.retried,
      retry_statuses: retry.statuses,
      cashouts: rows.length,
      completed: rows.filter((r) => r.status === 'completed').length,
      twins,
      payout_postings: Number(payouts[0].n),
      held: bal('company_held').toString(),
      available: bal('company_available').toString(),
      unexpected_exits: cluster.unexpectedExits.length,
    };
    report('cashout-sigkill', figures);
    assert.ok(settled, 'every cash-out ends final');
    assert.equal(twins, 0, 'no key has two cash-outs');
    assert.deepEqual(
      acknowledgedWithout.map((r) => r.key),
      [],
      'every acknowledged key has its cash-out',
    );
    assert.equal(Number(payouts[0].n), rows.filter((r) => r.status === 'completed').length, 'one payout posting per completed cash-out');
    assert.equal(bal('company_held'), 0n, 'no hold left behind');
    assert.equal(bal('company_available'), 2_000_000_00n - completed, 'the money out is exactly the completed cash-outs');
    assert.deepEqual(unbalanced, []);
    assert.deepEqual(cluster.unexpectedExits, [], 'no process died but the ones killed');
    for (const r of retry.unresolved) assert.equal(r.answers.at(-1)?.body?.code, 10501, `${r.key}: ${JSON.stringify(r.answers.at(-1))}`);
  });
});
