import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { createHarness, ENGINE, type Company, type Harness } from '../../../test/harness.ts';
import { balance, chargeBody, chargeEvents, payer, runChargeJobs } from '../../../test/support/charges.ts';

/**
 * 50 simultaneous refunds of one charge: exactly one refund and one ledger reversal; the others
 * are 10805. On PostgreSQL the requests really run in parallel (a pool of connections); the
 * embedded engine serialises them.
 */
describe(`50 parallel refunds of one charge (${ENGINE})`, () => {
  let h: Harness;
  let co: Company;
  before(async () => {
    h = await createHarness();
    co = await h.company('Reembolsos SAS');
  });
  after(() => h.close());

  for (const method of ['card', 'account'] as const) {
    test(`${method === 'card' ? 'a card' : 'an account'} charge: one refund, one reversal, one event; 49 × 10805`, async () => {
      const p = await payer(h, co);
      const created = await co.req({
        url: '/v1/charges',
        body: chargeBody(p.customer, method === 'card' ? { card_id: p.card } : { account_id: p.account }, {
          amount: 77000,
          test_scenario: 'refundable',
        }),
      });
      assert.equal(created.status, 200, created.raw);
      let charge = created.body;
      if (method === 'account') {
        // The sandbox bank settles it (resolve would make it a simulated outcome, refused with 10806).
        h.clock.advance(h.config.sandboxChargeDelayMs);
        await runChargeJobs(h, [charge.id]);
        charge = (await co.req({ url: `/v1/charges/${charge.id}` })).body;
      }
      assert.equal(charge.status, 'paid');
      const before = await balance(co);

      const results = await Promise.all(
        Array.from({ length: 50 }, (_, i) => co.req({ url: `/v1/charges/${i % 2 ? charge.id : charge.payment_intent_id}/refund`, body: {} })),
      );
      const ok = results.filter((r) => r.status === 200);
      const refused = results.filter((r) => r.status !== 200);
      assert.equal(ok.length, 1, results.map((r) => r.status).join(','));
      assert.equal(ok[0].body.status, 'refunded');
      for (const r of refused) {
        assert.equal(r.status, 422, r.raw);
        assert.equal(r.body.code, 10805, r.raw);
        assert.equal(r.body.code_name, 'charge_refunded');
      }

      const db = h.runtime.deps.database.db;
      const refunds = await db.selectFrom('charge_refunds').selectAll().where('charge_id', '=', charge.id).execute();
      assert.equal(refunds.length, 1);
      assert.equal(refunds[0].status, 'succeeded');
      const collection = await db
        .selectFrom('ledger_transactions')
        .select('id')
        .where('company_id', '=', co.company.id)
        .where('kind', '=', 'collection')
        .where('source_type', '=', 'charge')
        .where('source_id', '=', charge.id)
        .execute();
      assert.equal(collection.length, 1, 'one collection');
      const reversals = await db
        .selectFrom('ledger_transactions')
        .select('id')
        .where('kind', '=', 'reversal')
        .where('source_id', '=', collection[0].id)
        .execute();
      assert.equal(reversals.length, 1, 'one ledger reversal');
      const entries = await db
        .selectFrom('ledger_entries')
        .select(sql<string>`sum(amount)`.as('sum'))
        .where('transaction_id', '=', reversals[0].id)
        .executeTakeFirstOrThrow();
      assert.equal(BigInt(entries.sum), 0n, 'the reversal is balanced');
      assert.equal((await balance(co)).available, before.available - 77000, 'the money left once');
      assert.deepEqual((await chargeEvents(h, co, charge.id)).filter((e) => e.type === 'charge.refunded').length, 1);
      // No idempotency claim was left in progress.
      const stuck = await db
        .selectFrom('idempotency_keys')
        .select('key')
        .where('company_id', '=', co.company.id)
        .where('status_code', 'is', null)
        .execute();
      assert.deepEqual(stuck, []);
    });
  }
});
