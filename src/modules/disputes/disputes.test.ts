import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHarness, expectError, expectValidation, type Company, type Harness } from '../../../test/harness.ts';
import { installFakeLiveConnector } from '../../../test/fakes/live-connectors.ts';
import { balance, chargeBody, chargeEvents, payer, runChargeJobs } from '../../../test/support/charges.ts';
import { createPayment, eventTypes, paymentEvents } from '../../../test/support/payments.ts';
import { auditLedger, postTransaction } from '../ledger/service.ts';
import { closeDisputeFromRail, openDisputeFromRail } from './service.ts';

/** Balances in cents (the API answers pesos). */
async function cents(co: Company): Promise<{ available: number; held: number }> {
  const res = await co.req({ url: '/v1/balances' });
  const cop = res.body.data.find((b: { currency: string }) => b.currency === 'COP');
  return { available: Math.round(cop.available * 100), held: Math.round(cop.held * 100) };
}

describe('disputes', () => {
  let h: Harness;
  let co: Company;
  let other: Company;
  let p: { customer: string; card: string; account: string };
  const paidCharge = async (extra: Record<string, unknown> = {}, c: Company = co, env: 'test' | 'live' = 'test') => {
    const res = await c.req({ url: '/v1/charges', env, body: chargeBody(p.customer, { card_id: p.card }, { amount: 20000, ...extra }) });
    assert.equal(res.body.status, 'paid', res.raw);
    return res.body;
  };
  const audit = async () =>
    assert.deepEqual(await auditLedger(h.runtime.deps.database.db, [co.company.id]), { unbalanced: [], mismatched: [], negative: [] });

  before(async () => {
    h = await createHarness({ SANDBOX_CHARGE_DELAY_MS: '2000' });
    co = await h.company('Disputas SAS');
    installFakeLiveConnector(h.runtime.deps, { companyId: co.company.id });
    other = await h.company('Ajena SAS');
    p = await payer(h, co);
  });
  after(() => h.close());

  test('a charge dispute holds the amount (charge.disputed, the charge stays paid); won releases it', async () => {
    const charge = await paidCharge({ test_scenario: 'refundable' });
    const before = await cents(co);
    const res = await co.req({ url: `/v1/charges/${charge.payment_intent_id}/dispute`, body: { reason: 'fraudulent' } });
    assert.equal(res.status, 200, res.raw);
    const d = res.body;
    assert.match(d.id, /^dp_[0-9a-z]{26}$/);
    assert.deepEqual(
      { ...d, id: undefined, created_at: undefined, updated_at: undefined },
      {
        id: undefined,
        object: 'dispute',
        status: 'needs_response',
        amount: 20000,
        currency: 'COP',
        reason: 'fraudulent',
        charge_id: charge.id,
        payment_id: null,
        payment_intent_id: charge.payment_intent_id,
        rail: 'card',
        network_reference: `sbx_dp_${charge.id}`,
        is_test: true,
        created_at: undefined,
        updated_at: undefined,
        closed_at: null,
      },
    );
    assert.deepEqual(await cents(co), { available: before.available - 2_000_000, held: before.held + 2_000_000 }, 'held, not gone');
    const now = (await co.req({ url: `/v1/charges/${charge.id}` })).body;
    assert.equal(now.status, 'paid', "SPEC.md's charge states are kept");
    assert.equal(now.disputed, true);
    assert.equal(now.dispute_id, d.id);
    const disputed = (await chargeEvents(h, co, charge.id)).filter((e) => e.type === 'charge.disputed');
    assert.equal(disputed.length, 1);
    assert.equal(disputed[0].data.dispute_id, d.id);
    // Asking again answers the same dispute; nothing moves twice.
    const again = await co.req({ url: `/v1/charges/${charge.id}/dispute`, body: {} });
    assert.equal(again.body.id, d.id);
    assert.equal((await chargeEvents(h, co, charge.id)).filter((e) => e.type === 'charge.disputed').length, 1);
    assert.equal((await cents(co)).held, before.held + 2_000_000);
    // A disputed charge is not refunded (the network decides where the money goes).
    const refund = await co.req({ url: `/v1/charges/${charge.id}/refund`, body: {} });
    expectError(refund, 422, 'charge_refunded', 10805);
    assert.match(refund.body.message, /disputed/);
    // Reads.
    assert.deepEqual((await co.req({ url: `/v1/disputes/${d.id}` })).body, d);
    const list = await co.req({ url: `/v1/disputes?filter[charge_id]=${charge.id}` });
    assert.deepEqual(
      list.body.data.map((x: any) => x.id),
      [d.id],
    );
    assert.equal((await co.req({ url: '/v1/disputes?filter[status]=nope' })).body.total, 0);
    assert.equal((await co.req({ url: '/v1/disputes?filter[amount]=1' })).status, 400);

    const won = await co.req({ url: `/v1/disputes/${d.id}/resolve`, body: { outcome: 'won' } });
    assert.equal(won.status, 200, won.raw);
    assert.equal(won.body.status, 'won');
    assert.ok(won.body.closed_at);
    assert.deepEqual(await cents(co), before, 'the hold came back to available');
    const closedAgain = await co.req({ url: `/v1/disputes/${d.id}/resolve`, body: { outcome: 'lost' } });
    expectError(closedAgain, 422);
    assert.equal(closedAgain.body.code, undefined);
    assert.deepEqual(await cents(co), before, 'nothing moved');
    expectValidation(await co.req({ url: `/v1/disputes/${d.id}/resolve`, body: { outcome: 'maybe' } }), 'outcome');
    await audit();
  });

  test('lost: the held amount leaves for good; a part of the charge may be disputed', async () => {
    const charge = await paidCharge();
    const before = await cents(co);
    expectValidation(await co.req({ url: `/v1/charges/${charge.id}/dispute`, body: { amount: 20000.01 } }), 'amount');
    expectValidation(await co.req({ url: `/v1/charges/${charge.id}/dispute`, body: { amount: 0 } }), 'amount');
    expectValidation(await co.req({ url: `/v1/charges/${charge.id}/dispute`, body: { reason: 'bored' } }), 'reason');
    const d = (await co.req({ url: `/v1/charges/${charge.id}/dispute`, body: { amount: 5000.5, reason: 'product_not_received' } })).body;
    assert.equal(d.amount, 5000.5);
    assert.deepEqual(await cents(co), { available: before.available - 500_050, held: before.held + 500_050 });
    const lost = await co.req({ url: `/v1/disputes/${d.id}/resolve`, body: { outcome: 'lost' } });
    assert.equal(lost.body.status, 'lost', lost.raw);
    assert.deepEqual(await cents(co), { available: before.available - 500_050, held: before.held });
    assert.equal((await co.req({ url: `/v1/charges/${charge.id}` })).body.status, 'paid');
    await audit();
  });

  test('refused: not paid (10807), a refund in progress or done, another company, live objects (403), a short balance', async () => {
    const processing = (await co.req({ url: '/v1/charges', body: chargeBody(p.customer, { account_id: p.account }) })).body;
    assert.equal(processing.status, 'processing');
    expectError(await co.req({ url: `/v1/charges/${processing.id}/dispute`, body: {} }), 422, 'charge_is_not_paid', 10807);
    const refunded = await paidCharge({ test_scenario: 'refundable' });
    assert.equal((await co.req({ url: `/v1/charges/${refunded.id}/refund`, body: {} })).body.status, 'refunded');
    expectError(await co.req({ url: `/v1/charges/${refunded.id}/dispute`, body: {} }), 422, 'charge_is_not_paid', 10807);
    const mine = await paidCharge();
    expectError(await other.req({ url: `/v1/charges/${mine.id}/dispute`, body: {} }), 404, 'record_not_found');
    expectError(await co.req({ url: '/v1/disputes/dp_nope' }), 404, 'record_not_found');
    expectError(await co.req({ url: `/v1/charges/${mine.id}/dispute`, env: 'live', body: {} }), 404, 'environment_key_mismatch');
    // A live charge (through the stand-in connector) with a live key: 403, as /resolve.
    const lp = await payer(h, co, 'live');
    const liveCharge = await co.req({ url: '/v1/charges', env: 'live', body: chargeBody(lp.customer, { card_id: lp.card }, { amount: 1000 }) });
    assert.equal(liveCharge.body.status, 'paid', liveCharge.raw);
    expectError(await co.req({ url: `/v1/charges/${liveCharge.body.id}/dispute`, env: 'live', body: {} }), 403);
    const livePayment = await createPayment(co, { amount: 1000 }, 'live');
    expectError(await co.req({ url: `/v1/payments/${livePayment.id}/dispute`, env: 'live', body: {} }), 403);

    // The company's available balance cannot cover the amount: 422 insufficient_balance, nothing recorded.
    const fresh = await h.company('Sin saldo SAS');
    const q = await payer(h, fresh);
    const c = (await fresh.req({ url: '/v1/charges', body: chargeBody(q.customer, { card_id: q.card }, { amount: 10000 }) })).body;
    await h.runtime.deps.database.db.transaction().execute((trx) =>
      postTransaction(
        trx,
        { companyId: fresh.company.id, environment: 'test', deps: h.runtime.deps },
        {
          kind: 'payout',
          currency: 'COP',
          source: { type: 'test', id: c.id },
          entries: [
            { account: { kind: 'company_available' }, amount: -9000_00n },
            { account: { kind: 'external_clearing' }, amount: 9000_00n },
          ],
        },
      ),
    );
    expectError(await fresh.req({ url: `/v1/charges/${c.id}/dispute`, body: {} }), 422, 'insufficient_balance');
    assert.equal((await fresh.req({ url: `/v1/charges/${c.id}` })).body.disputed, false);
    assert.equal((await fresh.req({ url: '/v1/disputes' })).body.total, 0);
    assert.equal((await chargeEvents(h, fresh, c.id)).filter((e) => e.type === 'charge.disputed').length, 0);
  });

  test('a payment dispute: approved → disputed (payment.disputed); lost → refunded (payment.refunded), the money out once', async () => {
    const payment = await createPayment(co, { amount: 50000 });
    expectValidation(await co.req({ url: `/v1/payments/${payment.id}/dispute`, body: {} }), 'status');
    assert.equal((await co.req({ url: `/v1/payments/${payment.id}/resolve`, body: { action: 'approve' } })).body.status, 'approved');
    const before = await cents(co);
    const res = await co.req({ url: `/v1/payments/${payment.id}/dispute`, body: { reason: 'unrecognized' } });
    assert.equal(res.status, 200, res.raw);
    assert.equal(res.body.payment_id, payment.id);
    assert.equal(res.body.charge_id, null);
    assert.match(res.body.payment_intent_id, /^pi_/);
    assert.equal(res.body.amount, 50000);
    assert.equal((await co.req({ url: `/v1/payments/${payment.id}` })).body.status, 'disputed');
    assert.deepEqual(await cents(co), { available: before.available - 5_000_000, held: before.held + 5_000_000 });
    // Disputed: no update, no refund (SPEC.md's rules for a disputed payment).
    expectError(
      await co.req({ method: 'PUT', url: `/v1/payments/${payment.id}`, body: { title: 'Otra factura' } }),
      422,
      'cant_update_payment',
      15007,
    );
    assert.equal((await co.req({ url: `/v1/payments/${payment.id}/dispute`, body: {} })).body.id, res.body.id, 'asking again: the same dispute');
    const lost = await co.req({ url: `/v1/disputes/${res.body.id}/resolve`, body: { outcome: 'lost' } });
    assert.equal(lost.body.status, 'lost', lost.raw);
    assert.equal((await co.req({ url: `/v1/payments/${payment.id}` })).body.status, 'refunded');
    assert.deepEqual(await cents(co), { available: before.available - 5_000_000, held: before.held }, 'out once, from the hold');
    const types = await eventTypes(h, co, payment.id);
    assert.equal(types.filter((t) => t === 'payment.disputed').length, 1);
    assert.equal(types.filter((t) => t === 'payment.refunded').length, 1);
    const disputedEvent = (await paymentEvents(h, co, payment.id)).find((e) => e.type === 'payment.disputed')!;
    assert.equal(disputedEvent.data.status, 'disputed');
    await audit();
  });

  test('a payment dispute won: back to approved, the hold released; the rail entry is idempotent', async () => {
    const payment = await createPayment(co, { amount: 30000 });
    await co.req({ url: `/v1/payments/${payment.id}/resolve`, body: { action: 'approve' } });
    const intent = (await co.req({ url: `/v1/payments/${payment.id}/intents` })).body.data[0];
    const before = await cents(co);
    // The rail's entry, as a connector's inbound event calls it: twice, one dispute.
    const scope = { companyId: co.company.id, environment: 'test' as const };
    const report = { rail: 'card', railDisputeId: 'net-77', reference: intent.id, amount: 3_000_000n, currency: 'COP', reason: 'duplicate' as const };
    const first = await openDisputeFromRail(h.runtime.deps, scope, report);
    const second = await openDisputeFromRail(h.runtime.deps, scope, report);
    assert.equal(second.id, first.id);
    assert.equal((await eventTypes(h, co, payment.id)).filter((t) => t === 'payment.disputed').length, 1);
    assert.deepEqual(await cents(co), { available: before.available - 3_000_000, held: before.held + 3_000_000 });
    await closeDisputeFromRail(h.runtime.deps, scope, { rail: 'card', railDisputeId: 'net-77', outcome: 'won' });
    await closeDisputeFromRail(h.runtime.deps, scope, { rail: 'card', railDisputeId: 'net-77', outcome: 'won' });
    assert.equal((await co.req({ url: `/v1/payments/${payment.id}` })).body.status, 'approved');
    assert.deepEqual(await cents(co), before);
    assert.equal((await co.req({ url: `/v1/disputes/${first.id}` })).body.status, 'won');
    await assert.rejects(
      closeDisputeFromRail(h.runtime.deps, scope, { rail: 'card', railDisputeId: 'net-77', outcome: 'lost' }),
      /already won|not_resolvable|resolv/i,
    );
    await audit();
  });

  test('charges and a rail that settled them: an account debit is disputed on the account_debit rail', async () => {
    const c = (await co.req({ url: '/v1/charges', body: chargeBody(p.customer, { account_id: p.account }, { amount: 3000 }) })).body;
    h.clock.advance(2000);
    await runChargeJobs(h, [c.id]);
    const d = await co.req({ url: `/v1/charges/${c.id}/dispute`, body: {} });
    assert.equal(d.status, 200, d.raw);
    assert.equal(d.body.rail, 'account_debit');
    assert.equal(d.body.reason, 'general');
    assert.equal((await balance(co)).available >= 0, true);
  });
});
