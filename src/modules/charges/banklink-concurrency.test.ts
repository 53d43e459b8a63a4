import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHarness, ENGINE, type Company, type Harness } from '../../../test/harness.ts';
import { createCustomer } from '../../../test/support/cards.ts';
import { banklinkBody, chargeEvents } from '../../../test/support/charges.ts';

/**
 * 50 simultaneous identical banklink creates (each with its own x-idempotency value, different
 * external_id and reference): exactly one charge, 49 × 429 15005 naming it. On PostgreSQL the
 * requests really run in parallel (a pool of connections) and the advisory lock serialises the
 * check and the insert; the embedded engine serialises transactions.
 */
describe(`50 parallel identical banklink creates (${ENGINE})`, () => {
  let h: Harness;
  let co: Company;
  before(async () => {
    h = await createHarness();
    co = await h.company('Transferencias SAS');
  });
  after(() => h.close());

  test('one created, 49 × 429 banklink_payment_duplicate with the created one as previous_payment_id', async () => {
    const customer = await createCustomer(co);
    const results = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        co.req({ url: '/v1/charges/banklink', body: banklinkBody(customer, { amount: 64000, external_id: `pedido-${i}`, reference: `REF-${i}` }) }),
      ),
    );
    const created = results.filter((r) => r.status === 200);
    const refused = results.filter((r) => r.status !== 200);
    assert.equal(created.length, 1, results.map((r) => r.status).join(','));
    const charge = created[0].body;
    assert.equal(charge.status, 'processing');
    assert.equal(refused.length, 49);
    for (const r of refused) {
      assert.equal(r.status, 429, r.raw);
      assert.equal(r.body.code, 15005, r.raw);
      assert.equal(r.body.code_name, 'banklink_payment_duplicate');
      assert.equal(r.body.previous_payment_id, charge.id);
      assert.equal(r.body.previous_payment_created_at, charge.created_at);
      assert.ok(Number.isInteger(r.body.time_elapsed_seconds) && r.body.time_elapsed_seconds >= 0 && r.body.time_elapsed_seconds < 120);
    }

    const db = h.runtime.deps.database.db;
    const rows = await db.selectFrom('charges').select('id').where('company_id', '=', co.company.id).where('customer_id', '=', customer).execute();
    assert.deepEqual(
      rows.map((r) => r.id),
      [charge.id],
      'exactly one charge',
    );
    const intents = await db
      .selectFrom('payment_intents')
      .select('id')
      .where('company_id', '=', co.company.id)
      .where('method', '=', 'banklink')
      .execute();
    assert.equal(intents.length, 1, 'one intent');
    assert.deepEqual(
      (await chargeEvents(h, co, charge.id)).map((e) => e.type),
      ['charge.created', 'charge.processing'],
    );
    const events = await db.selectFrom('events').select('id').where('company_id', '=', co.company.id).where('type', '=', 'charge.created').execute();
    assert.equal(events.length, 1, 'one charge.created');
    // No idempotency claim was left in progress.
    const stuck = await db
      .selectFrom('idempotency_keys')
      .select('key')
      .where('company_id', '=', co.company.id)
      .where('status_code', 'is', null)
      .execute();
    assert.deepEqual(stuck, []);
  });

  test('50 parallel creates for 5 customers: one charge per customer', async () => {
    const customers = await Promise.all(Array.from({ length: 5 }, () => createCustomer(co)));
    const results = await Promise.all(
      Array.from({ length: 50 }, (_, i) => co.req({ url: '/v1/charges/banklink', body: banklinkBody(customers[i % 5], { amount: 72000 }) })),
    );
    assert.equal(results.filter((r) => r.status === 200).length, 5, results.map((r) => r.status).join(','));
    assert.equal(results.filter((r) => r.status === 429).length, 45);
    const byCustomer = new Set(results.filter((r) => r.status === 200).map((r) => r.body.customer_id));
    assert.equal(byCustomer.size, 5);
  });
});
