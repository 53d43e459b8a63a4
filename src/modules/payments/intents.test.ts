import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ENGINE, createHarness, expectError, expectValidation, type Company, type Harness } from '../../../test/harness.ts';
import { settleIntent, startIntent } from './intents.ts';
import { EXPIRY_RECHECK_MS, runExpiration } from './service.ts';
import { createPayment, eventTypes, forceStatus, paymentEvents, runDueExpirations, scopeOf } from '../../../test/support/payments.ts';

const HOUR = 3_600_000;

describe('payments: resolve (sandbox)', () => {
  let h: Harness;
  let co: Company;
  before(async () => {
    h = await createHarness();
    co = await h.company('Sandbox SAS');
  });
  after(() => h.close());

  const resolve = (id: string, body: Record<string, unknown>, env: 'test' | 'live' = 'test') =>
    co.req({ url: `/v1/payments/${id}/resolve`, body, env });

  test('approve: approved, payment.approved once, an intent records the outcome', async () => {
    const p = await createPayment(co, { amount: 80000 });
    const res = await resolve(p.id, { action: 'approve' });
    assert.equal(res.status, 200, res.raw);
    assert.equal(res.body.status, 'approved');
    assert.equal(res.body.amount_paid, 80000);
    assert.equal(res.body.amount_due, 0);
    assert.ok(res.body.paid_at);
    const events = await paymentEvents(h, co, p.id);
    assert.deepEqual(
      events.map((e) => e.type),
      ['payment.created', 'payment.approved'],
    );
    assert.deepEqual(events[1].data, res.body);
    const intents = await co.req({ url: `/v1/payments/${p.id}/intents` });
    assert.equal(intents.status, 200, intents.raw);
    assert.equal(intents.body.total, 1);
    const [intent] = intents.body.data;
    assert.match(intent.id, /^pi_[0-9a-z]{26}$/);
    assert.equal(intent.status, 'approved');
    assert.equal(intent.method, 'sandbox');
    assert.equal(intent.amount, 80000);
    assert.equal(intent.payment_id, p.id);
    assert.ok(intent.paid_at);
    assert.deepEqual((await co.req({ url: `/v1/payment-intents/${intent.id}` })).body, intent);
    // Not open any more: 422 without a code (SPEC.md "Errors without a code").
    const again = await resolve(p.id, { action: 'approve' });
    expectError(again, 422);
    assert.equal(again.body.code, undefined);
    assert.equal(again.body.code_name, undefined);
    assert.deepEqual(await eventTypes(h, co, p.id), ['payment.created', 'payment.approved']);
  });

  test('reject: declined with a documented reason, payment.rejected; a declined payment stays payable', async () => {
    const p = await createPayment(co);
    expectValidation(await resolve(p.id, { action: 'reject' }), 'remarks');
    expectValidation(await resolve(p.id, { action: 'reject', remarks: 'NO_ME_GUSTA' }), 'remarks');
    expectValidation(await resolve(p.id, { action: 'maybe' }), 'action');
    expectValidation(await resolve(p.id, {}), 'action');
    const res = await resolve(p.id, { action: 'reject', remarks: 'INSUFFICIENT_FUNDS' });
    assert.equal(res.status, 200, res.raw);
    assert.equal(res.body.status, 'declined');
    const intents = (await co.req({ url: `/v1/payments/${p.id}/intents` })).body.data;
    assert.equal(intents[0].status, 'declined');
    assert.equal(intents[0].remarks, 'INSUFFICIENT_FUNDS');
    const approved = await resolve(p.id, { action: 'approve' });
    assert.equal(approved.body.status, 'approved', 'from declined');
    assert.deepEqual(await eventTypes(h, co, p.id), ['payment.created', 'payment.rejected', 'payment.approved']);
    assert.equal((await co.req({ url: `/v1/payments/${p.id}/intents` })).body.total, 2);
  });

  test('an attempt in progress is settled by resolve', async () => {
    const p = await createPayment(co);
    const intent = await startIntent(scopeOf(h, co), p.id, { method: 'card', external_id: 'card-attempt-1' });
    assert.equal((await co.req({ url: `/v1/payments/${p.id}` })).body.status, 'in_progress');
    const res = await resolve(p.id, { action: 'reject', remarks: 'CARD_EXPIRED' });
    assert.equal(res.body.status, 'declined');
    const got = (await co.req({ url: `/v1/payment-intents/${intent.id}` })).body;
    assert.equal(got.status, 'declined');
    assert.equal(got.remarks, 'CARD_EXPIRED');
    assert.equal(got.external_id, 'card-attempt-1');
    assert.equal((await co.req({ url: `/v1/payments/${p.id}/intents` })).body.total, 1, 'no second intent');
  });

  test('live key or live payment → 403 without a code; closed states → 422 without a code', async () => {
    const live = await createPayment(co, {}, 'live');
    const forbidden = await resolve(live.id, { action: 'approve' }, 'live');
    expectError(forbidden, 403);
    assert.equal(forbidden.body.code, undefined);
    assert.equal(forbidden.body.code_name, undefined);
    assert.equal((await co.req({ url: `/v1/payments/${live.id}`, env: 'live' })).body.status, 'pending');
    for (const status of ['approved', 'paid_externally', 'cancelled', 'expired', 'refunded', 'disputed', 'partially_paid'] as const) {
      const p = await createPayment(co);
      await forceStatus(h, p.id, status);
      const res = await resolve(p.id, { action: 'approve' });
      expectError(res, 422);
      assert.equal(res.body.code, undefined, status);
    }
  });

  test('open-amount links resolve with an amount', async () => {
    const p = await createPayment(co, { amount: undefined, open_amount: true });
    expectValidation(await resolve(p.id, { action: 'approve' }), 'amount');
    expectValidation(await resolve(p.id, { action: 'approve', amount: 999 }), 'amount');
    const res = await resolve(p.id, { action: 'approve', amount: 25000 });
    assert.equal(res.status, 200, res.raw);
    assert.equal(res.body.status, 'approved');
    assert.equal(res.body.amount_paid, 25000);
  });
});

describe('payment intents: the service the payer pages and rails call', () => {
  let h: Harness;
  let co: Company;
  before(async () => {
    h = await createHarness();
    co = await h.company('Intentos SAS');
  });
  after(() => h.close());

  test('partial payments: partially_paid until the total, then approved', async () => {
    const scope = scopeOf(h, co);
    const p = await createPayment(co, {
      amount: 100000,
      partial_payment_config: { enabled: true, minimum_amount: 20000 },
      allows: ['card', 'banklink'],
    });
    await assert.rejects(startIntent(scope, p.id, { method: 'rtkey', amount: 30000_00n }), (e: any) => e.errors?.method?.length > 0);
    await assert.rejects(startIntent(scope, p.id, { method: 'card', amount: 19999_99n }), (e: any) => e.errors?.amount?.length > 0);
    await assert.rejects(startIntent(scope, p.id, { method: 'card', amount: 100000_01n }), (e: any) => e.errors?.amount?.length > 0);
    const first = await startIntent(scope, p.id, { method: 'card', amount: 30000_00n, network_id: 'net-1' });
    await assert.rejects(
      startIntent(scope, p.id, { method: 'card' }),
      (e: any) => e.def?.codeName === 'payment_charge_in_progress',
      'one attempt at a time',
    );
    await settleIntent(scope, first.id, { status: 'approved' });
    let got = (await co.req({ url: `/v1/payments/${p.id}` })).body;
    assert.equal(got.status, 'partially_paid');
    assert.equal(got.amount_paid, 30000);
    assert.equal(got.amount_due, 70000);
    assert.equal(got.paid_at, null);
    const declined = await startIntent(scope, p.id, { method: 'banklink', amount: 50000_00n });
    await settleIntent(scope, declined.id, { status: 'declined', remarks: 'RISK_CONTROL' });
    got = (await co.req({ url: `/v1/payments/${p.id}` })).body;
    assert.equal(got.status, 'partially_paid', 'a declined attempt after a partial payment leaves it partially paid');
    const rest = await startIntent(scope, p.id, { method: 'card' });
    assert.equal((await co.req({ url: `/v1/payment-intents/${rest.id}` })).body.amount, 70000, 'default: what is due');
    await settleIntent(scope, rest.id, { status: 'approved' });
    got = (await co.req({ url: `/v1/payments/${p.id}` })).body;
    assert.equal(got.status, 'approved');
    assert.equal(got.amount_paid, 100000);
    assert.deepEqual(await eventTypes(h, co, p.id), ['payment.created', 'payment.partially_paid', 'payment.rejected', 'payment.approved']);
    // A rail retrying a settlement gets the same answer; a contradicting one is refused.
    const same = await settleIntent(scope, rest.id, { status: 'approved' });
    assert.equal(same.status, 'approved');
    await assert.rejects(settleIntent(scope, rest.id, { status: 'declined', remarks: 'TIMEOUT' }), (e: any) => e.errors?.status?.length > 0);
    assert.deepEqual(await eventTypes(h, co, p.id), ['payment.created', 'payment.partially_paid', 'payment.rejected', 'payment.approved']);
    await assert.rejects(startIntent(scope, p.id, { method: 'card' }), (e: any) => e.def?.codeName === 'payment_already_paid');
  });

  test('fixed amounts take the full amount due; declines need a documented reason', async () => {
    const scope = scopeOf(h, co);
    const p = await createPayment(co, { amount: 50000 });
    await assert.rejects(startIntent(scope, p.id, { method: 'card', amount: 10000_00n }), (e: any) => e.errors?.amount?.length > 0);
    const i = await startIntent(scope, p.id, { method: 'walleta' });
    await assert.rejects(settleIntent(scope, i.id, { status: 'declined', remarks: 'porque sí' }), (e: any) => e.errors?.remarks?.length > 0);
    await settleIntent(scope, i.id, { status: 'declined', remarks: 'TIMEOUT' });
    assert.equal((await co.req({ url: `/v1/payments/${p.id}` })).body.status, 'declined');
    const cancelled = await createPayment(co);
    await co.req({ method: 'DELETE', url: `/v1/payments/${cancelled.id}` });
    await assert.rejects(startIntent(scope, cancelled.id, { method: 'card' }), (e: any) => e.def?.codeName === 'payment_cancelled');
    const expiring = await createPayment(co, { expires_at: new Date(h.clock.now().getTime() + HOUR).toISOString() });
    h.clock.advance(HOUR);
    await assert.rejects(
      startIntent(scope, expiring.id, { method: 'card' }),
      (e: any) => e.errors?.status?.length > 0,
      'past expires_at, even before the job ran',
    );
  });

  test('GET /payment-intents: filters, sorts, lookup by charge_id', async () => {
    const other = await h.company('Filtros SAS');
    const os = scopeOf(h, other);
    const a = await createPayment(other);
    const b = await createPayment(other);
    const ia = await startIntent(os, a.id, {
      method: 'card',
      external_id: 'ext-pi-a',
      network_id: 'net-a',
      charge_id: 'ch_01m7zx20s70qez4k542m909n4r',
    });
    h.clock.advance(1000);
    const ib = await startIntent(os, b.id, { method: 'card', external_id: 'ext-pi-b', network_id: 'net-b' });
    await settleIntent(os, ib.id, { status: 'approved' });
    const ids = async (q: string) => {
      const res = await other.req({ url: `/v1/payment-intents${q}` });
      assert.equal(res.status, 200, res.raw);
      return res.body.data.map((i: { id: string }) => i.id);
    };
    assert.deepEqual(await ids(''), [ib.id, ia.id]);
    assert.deepEqual(await ids(`?filter[id]=${ia.id}`), [ia.id]);
    assert.deepEqual(await ids('?filter[id]=nope'), []);
    assert.deepEqual(await ids('?filter[status]=approved'), [ib.id]);
    assert.deepEqual(await ids('?filter[status]=in_progress'), [ia.id]);
    assert.deepEqual(await ids('?filter[status]=weird'), []);
    assert.deepEqual(await ids('?filter[external_id]=ext-pi-a'), [ia.id]);
    assert.deepEqual(await ids('?filter[network_id]=net-b'), [ib.id]);
    assert.deepEqual(await ids('?sort=created_at'), [ia.id, ib.id]);
    assert.deepEqual(await ids('?sort=-paid_at'), [ib.id, ia.id]);
    expectError(await other.req({ url: '/v1/payment-intents?filter[payment_id]=x' }), 400);
    expectError(await other.req({ url: '/v1/payment-intents?sort=amount' }), 400);
    const byCharge = await other.req({ url: '/v1/payment-intents/ch_01m7zx20s70qez4k542m909n4r' });
    assert.equal(byCharge.status, 200, byCharge.raw);
    assert.equal(byCharge.body.id, ia.id);
    assert.equal(byCharge.body.charge_id, 'ch_01m7zx20s70qez4k542m909n4r');
    expectError(await other.req({ url: '/v1/payment-intents/pi_00000000000000000000000000' }), 404, 'record_not_found', 10002);
    expectError(await co.req({ url: `/v1/payment-intents/${ia.id}` }), 404, 'record_not_found', 10002);
    assert.equal(
      (await co.req({ url: '/v1/payment-intents' })).body.data.some((i: { id: string }) => i.id === ia.id),
      false,
      "another company's intents never show",
    );
    expectError(await other.req({ url: `/v1/payments/${a.id}/intents?filter[status]=x` }), 400);
  });
});

describe('payments: expiration', () => {
  let h: Harness;
  let co: Company;
  before(async () => {
    h = await createHarness();
    co = await h.company('Vence SAS');
  });
  after(() => h.close());

  test('pending → expired at expires_at (payment.expired once); paid or cancelled payments are left alone', async (t) => {
    h.clock.freeze();
    t.after(() => h.clock.unfreeze());
    const at = new Date(h.clock.now().getTime() + HOUR).toISOString();
    const p = await createPayment(co, { expires_at: at });
    const paid = await createPayment(co, { expires_at: at });
    await co.req({ url: `/v1/payments/${paid.id}/resolve`, body: { action: 'approve' } });
    const cancelled = await createPayment(co, { expires_at: at });
    await co.req({ method: 'DELETE', url: `/v1/payments/${cancelled.id}` });
    const ids = [p.id, paid.id, cancelled.id];
    h.clock.advance(HOUR - 1000);
    await runDueExpirations(h, ids);
    assert.equal((await co.req({ url: `/v1/payments/${p.id}` })).body.status, 'pending', 'not before its time');
    h.clock.advance(1000);
    await runDueExpirations(h, ids);
    assert.equal((await co.req({ url: `/v1/payments/${p.id}` })).body.status, 'expired');
    assert.deepEqual(await eventTypes(h, co, p.id), ['payment.created', 'payment.expired']);
    assert.equal((await co.req({ url: `/v1/payments/${paid.id}` })).body.status, 'approved');
    assert.equal((await co.req({ url: `/v1/payments/${cancelled.id}` })).body.status, 'cancelled');
    // A second run (redelivery, another worker) changes nothing and emits nothing.
    await runExpiration(h.runtime.deps, { company_id: co.company.id, environment: 'test', payment_id: p.id });
    assert.deepEqual(await eventTypes(h, co, p.id), ['payment.created', 'payment.expired']);
  });

  test('partially_paid → expired with payment.partial_expired; declined expires too', async () => {
    const scope = scopeOf(h, co);
    const at = new Date(h.clock.now().getTime() + HOUR).toISOString();
    const partial = await createPayment(co, { amount: 100000, partial_payment_config: { enabled: true }, expires_at: at });
    const i = await startIntent(scope, partial.id, { method: 'card', amount: 40000_00n });
    await settleIntent(scope, i.id, { status: 'approved' });
    const declined = await createPayment(co, { expires_at: at });
    await co.req({ url: `/v1/payments/${declined.id}/resolve`, body: { action: 'reject', remarks: 'TRANSACTION_REJECTED' } });
    h.clock.advance(HOUR);
    await runDueExpirations(h, [partial.id, declined.id]);
    assert.equal((await co.req({ url: `/v1/payments/${partial.id}` })).body.status, 'expired');
    assert.deepEqual(await eventTypes(h, co, partial.id), ['payment.created', 'payment.partially_paid', 'payment.partial_expired']);
    assert.deepEqual(await eventTypes(h, co, declined.id), ['payment.created', 'payment.rejected', 'payment.expired']);
    expectError(
      await co.req({ method: 'PUT', url: `/v1/payments/${partial.id}`, body: { title: 'Nuevo título' } }),
      422,
      'cant_update_payment',
      15007,
    );
    expectError(await co.req({ url: `/v1/payments/${partial.id}`, body: {} }), 422, 'cant_retry_payment', 15002);
  });

  test('an attempt in progress at expires_at delays the expiration; a later expires_at moves it', async () => {
    const scope = scopeOf(h, co);
    const p = await createPayment(co, { expires_at: new Date(h.clock.now().getTime() + HOUR).toISOString() });
    const i = await startIntent(scope, p.id, { method: 'card' });
    const moved = await createPayment(co, { expires_at: new Date(h.clock.now().getTime() + HOUR).toISOString() });
    const later = new Date(h.clock.now().getTime() + 3 * HOUR).toISOString();
    const put = await co.req({ method: 'PUT', url: `/v1/payments/${moved.id}`, body: { expires_at: later } });
    assert.equal(put.status, 200, put.raw);
    h.clock.advance(HOUR);
    await runDueExpirations(h, [p.id, moved.id]);
    assert.equal((await co.req({ url: `/v1/payments/${p.id}` })).body.status, 'in_progress');
    assert.equal((await co.req({ url: `/v1/payments/${moved.id}` })).body.status, 'pending', 'the old job finds a later expires_at');
    await settleIntent(scope, i.id, { status: 'declined', remarks: 'CANCELLED_BY_PAYER' });
    h.clock.advance(EXPIRY_RECHECK_MS);
    await runDueExpirations(h, [p.id, moved.id]);
    assert.equal((await co.req({ url: `/v1/payments/${p.id}` })).body.status, 'expired');
    h.clock.advance(2 * HOUR);
    await runDueExpirations(h, [p.id, moved.id]);
    assert.equal((await co.req({ url: `/v1/payments/${moved.id}` })).body.status, 'expired');
    assert.deepEqual(await eventTypes(h, co, moved.id), ['payment.created', 'payment.expired']);
    if (ENGINE === 'pglite') {
      const left = await h.runtime.deps.database.db.selectFrom('jobs').select('id').where('kind', '=', 'payments.expire').execute();
      assert.equal(left.length, 0, 'every expiration job ran and was removed');
    }
  });
});
