import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { ENGINE, createHarness, expectError, expectValidation, type Company, type Harness } from '../../../test/harness.ts';
import { expectScoped } from '../../../test/auth-matrix.ts';
import type { BillerPort } from '../../rails/index.ts';
import { BILL_PENDING_SETTLE_MS } from '../../rails/sandbox-table.ts';
import { auditLedger, recordCollection } from '../ledger/service.ts';
import { runPayLink, runUtilityReconcile, UTILITY_LINK_JOB } from './service.ts';

/** Utilities, bill payments (docs/utilities.md): black-box HTTP tests on the sandbox biller. */
describe(`utilities (${ENGINE})`, () => {
  let h: Harness;
  let co: Company;
  const ENERGY = '7701001';

  before(async () => {
    h = await createHarness();
    co = await h.company('Pagos de Servicios SAS');
  });
  after(() => h.close());

  /** Money collected into the company's available balance. */
  async function fund(pesos: number, c: Company = co) {
    await h.runtime.deps.database.db
      .transaction()
      .execute((trx) =>
        recordCollection(
          trx,
          { companyId: c.company.id, environment: 'test', deps: h.runtime.deps },
          { currency: 'COP', amount: BigInt(Math.round(pesos * 100)), source: { type: 'test', id: randomUUID() } },
        ),
      );
  }
  const balances = async () => (await co.req({ url: '/v1/balances' })).body.data.find((b: { currency: string }) => b.currency === 'COP');
  const pay = (reference: string, extra: Record<string, unknown> = {}, idem?: string, env: 'test' | 'live' = 'test') =>
    co.req({ url: '/v1/utilities', body: { provider_id: ENERGY, reference, ...extra }, idem, env });
  const events = async (id: string) =>
    (
      await h.runtime.deps.database.db
        .selectFrom('events')
        .select(['type', 'data'])
        .where('company_id', '=', co.company.id)
        .where('type', 'like', 'utility.%')
        .orderBy('created_at')
        .execute()
    ).filter((e) => (e.data as { id: string }).id === id);
  const expectClean = async () =>
    assert.deepEqual(await auditLedger(h.runtime.deps.database.db, [co.company.id]), { unbalanced: [], mismatched: [], negative: [] });

  test('live keys: 422 10900 rail biller on every route that reaches the biller, nothing recorded', async () => {
    for (const res of [
      await co.req({ url: '/v1/utilities/providers', env: 'live' }),
      await co.req({ url: `/v1/utilities/providers/${ENERGY}/bills/111100005555`, env: 'live' }),
      await pay('111100005555', {}, undefined, 'live'),
      await co.req({ url: '/v1/utilities/payment-links', body: { provider_id: ENERGY, reference: '111100005555' }, env: 'live' }),
    ]) {
      expectError(res, 422, 'rail_not_configured', 10900);
      assert.equal(res.body.rail, 'biller');
    }
    assert.equal((await co.req({ url: '/v1/utilities', env: 'live' })).body.total, 0);
  });

  test('providers: the seeded Colombian billers in the list envelope, filter by category', async () => {
    const res = await co.req({ url: '/v1/utilities/providers' });
    assert.equal(res.status, 200, res.raw);
    assert.ok(res.body.total >= 8);
    const categories = new Set(res.body.data.map((p: { category: string }) => p.category));
    for (const c of ['energy', 'water', 'gas', 'telecom']) assert.ok(categories.has(c), c);
    for (const p of res.body.data) assert.ok(p.id && p.name && p.help_text);
    const water = await co.req({ url: '/v1/utilities/providers?filter[category]=water&per_page=1' });
    assert.equal(water.body.per_page, 1);
    assert.ok(water.body.data.every((p: { category: string }) => p.category === 'water'));
    assert.ok(water.body.next_page_url?.includes('filter%5Bcategory%5D=water'));
    expectError(await co.req({ url: '/v1/utilities/providers?filter[name]=x' }), 400);
  });

  test('bill inquiry: deterministic sandbox bills, not found, already paid', async () => {
    const bill = await co.req({ url: `/v1/utilities/providers/${ENERGY}/bills/111100005555` });
    assert.equal(bill.status, 200, bill.raw);
    assert.equal(bill.body.amount, 555500);
    assert.equal(bill.body.status, 'unpaid');
    assert.equal(bill.body.provider_id, ENERGY);
    assert.match(bill.body.due_date, /^\d{4}-\d{2}-20$/);
    assert.equal((await co.req({ url: `/v1/utilities/providers/${ENERGY}/bills/99990001` })).body.amount, 5000, 'at least COP 5,000');
    assert.equal((await co.req({ url: `/v1/utilities/providers/${ENERGY}/bills/55551111` })).body.status, 'paid');
    expectError(await co.req({ url: `/v1/utilities/providers/${ENERGY}/bills/55550404` }), 404, 'utility_bill_not_found', 11200);
    expectError(await co.req({ url: '/v1/utilities/providers/0000000/bills/111100005555' }), 404, 'record_not_found', 10002);
  });

  test('POST /utilities pays a bill from the balance: held, paid out, utility.paid; exactly once per x-idempotency', async () => {
    await fund(300000);
    const before = await balances();
    const idem = randomUUID();
    const res = await pay('20250012345', { metadata: { cuenta: 'hogar' } }, idem);
    assert.equal(res.status, 200, res.raw);
    const u = res.body;
    assert.match(u.id, /^util_/);
    assert.equal(u.status, 'paid');
    assert.equal(u.amount, 234500);
    assert.ok(u.paid_at);
    assert.deepEqual(u.metadata, { cuenta: 'hogar' });
    assert.equal(u.network_id, `sbx_bill_${u.id}`);
    const after = await balances();
    assert.equal(after.available, before.available - 234500);
    assert.equal(after.held, before.held);
    assert.deepEqual(
      (await events(u.id)).map((e) => e.type),
      ['utility.paid'],
    );
    const again = await pay('20250012345', { metadata: { cuenta: 'hogar' } }, idem);
    assert.equal(again.status, 200);
    assert.equal(again.headers['idempotent-replayed'], 'true');
    assert.equal(again.body.id, u.id);
    assert.equal((await balances()).available, after.available);
    expectError(await pay('20250012345'), 422, 'utility_bill_already_paid', 11201);
    assert.deepEqual((await co.req({ url: `/v1/utilities/${u.id}` })).body, u);
    await expectClean();
  });

  test('refusals change nothing: insufficient funds, bill not found, already paid at the biller, bad input', async () => {
    const before = await balances();
    expectError(await pay('77779999'), 422, 'insufficient_funds', 10501);
    expectError(await pay('77770404'), 404, 'utility_bill_not_found', 11200);
    expectError(await pay('77771111'), 422, 'utility_bill_already_paid', 11201);
    expectValidation(await pay('77770001', { provider_id: '0000000' }), 'provider_id');
    expectValidation(await pay('no spaces allowed'), 'reference');
    expectValidation(await co.req({ url: '/v1/utilities', body: { reference: '12345678' } }), 'provider_id');
    expectError(
      await co.req({ url: '/v1/utilities', body: { provider_id: ENERGY, reference: '77770001' }, idem: false }),
      409,
      'idempotency_error',
      10003,
    );
    assert.deepEqual(await balances(), before);
    const rows = await h.runtime.deps.database.db.selectFrom('utilities').select('reference').where('company_id', '=', co.company.id).execute();
    assert.ok(!rows.some((r) => r.reference.startsWith('7777')));
  });

  test('the biller rejects (…0000): rejected, money released, utility.rejected', async () => {
    await fund(10000);
    const before = await balances();
    const res = await pay('31230000');
    assert.equal(res.status, 200, res.raw);
    assert.equal(res.body.status, 'rejected');
    assert.equal(res.body.remarks, 'REJECTED_BY_BILLER');
    assert.deepEqual(await balances(), before);
    assert.deepEqual(
      (await events(res.body.id)).map((e) => e.type),
      ['utility.rejected'],
    );
    // A rejected payment does not block another try.
    assert.equal((await pay('31230000')).body.status, 'rejected');
    await expectClean();
  });

  test('a pending biller (…2222): processing with the money held, 409 for a second payment, paid by the reconciler', async () => {
    await fund(300000);
    const res = await pay('44442222');
    assert.equal(res.body.status, 'processing', res.raw);
    const held = await balances();
    assert.equal(held.held >= 222200, true);
    const second = await pay('44442222');
    expectError(second, 409, 'utility_in_progress', 11202);
    assert.equal(second.body.utility_id, res.body.id);
    await runUtilityReconcile(h.runtime.deps, { company_id: co.company.id, environment: 'test', utility_id: res.body.id });
    assert.equal((await co.req({ url: `/v1/utilities/${res.body.id}` })).body.status, 'processing', 'not yet');
    h.clock.advance(BILL_PENDING_SETTLE_MS);
    await runUtilityReconcile(h.runtime.deps, { company_id: co.company.id, environment: 'test', utility_id: res.body.id });
    const paid = (await co.req({ url: `/v1/utilities/${res.body.id}` })).body;
    assert.equal(paid.status, 'paid');
    assert.equal((await balances()).held, held.held - 222200);
    await runUtilityReconcile(h.runtime.deps, { company_id: co.company.id, environment: 'test', utility_id: res.body.id });
    assert.deepEqual(
      (await events(res.body.id)).map((e) => e.type),
      ['utility.paid'],
      'once',
    );
    await expectClean();
  });

  test('a biller without an answer: the utility stays created and held; the retry answers it; the reconciler settles it once', async () => {
    await fund(2000);
    const sandbox = h.runtime.deps.rails.sandbox;
    const real = sandbox.biller;
    const silent: BillerPort = {
      name: 'silent',
      providers: () => real.providers(),
      inquire: (p, r) => real.inquire(p, r),
      pay: () => Promise.reject(new Error('timeout')),
    };
    sandbox.biller = silent;
    const idem = randomUUID();
    let id: string;
    try {
      const res = await pay('66660020', {}, idem);
      assert.equal(res.body.status, 'created', res.raw);
      id = res.body.id;
      const retry = await pay('66660020', {}, idem);
      assert.equal(retry.status, 200, retry.raw);
      assert.equal(retry.body.id, id);
    } finally {
      sandbox.biller = real;
    }
    await runUtilityReconcile(h.runtime.deps, { company_id: co.company.id, environment: 'test', utility_id: id });
    assert.equal((await co.req({ url: `/v1/utilities/${id}` })).body.status, 'paid');
    const count = await h.runtime.deps.database.db
      .selectFrom('utilities')
      .select('id')
      .where('company_id', '=', co.company.id)
      .where('reference', '=', '66660020')
      .execute();
    assert.equal(count.length, 1);
    await expectClean();
  });

  test('a utility payment link: a payment that cannot be cancelled (15001); approved → the bill is paid from the balance', async () => {
    const res = await co.req({ url: '/v1/utilities/payment-links', body: { provider_id: '7702001', reference: '90001234', phone: '+573001234567' } });
    assert.equal(res.status, 200, res.raw);
    const link = res.body;
    assert.equal(link.amount, 123400);
    assert.match(link.url, new RegExp(`/pay/${link.payment_id}$`));
    const payment = (await co.req({ url: `/v1/payments/${link.payment_id}` })).body;
    assert.equal(payment.source, 'utility');
    assert.equal(payment.amount, 123400);
    expectError(await co.req({ method: 'DELETE', url: `/v1/payments/${link.payment_id}` }), 422, 'cant_cancel_payment', 15001);
    const ordinary = (await co.req({ url: '/v1/payments', body: { title: 'Factura normal', amount: 5000 } })).body;
    assert.equal((await co.req({ method: 'DELETE', url: `/v1/payments/${ordinary.id}` })).status, 200, 'other payments still cancel');

    const before = await balances();
    const approved = await co.req({ url: `/v1/payments/${link.payment_id}/resolve`, body: { action: 'approve' } });
    assert.equal(approved.body.status, 'approved', approved.raw);
    const jobs = await h.runtime.deps.database.db.selectFrom('jobs').select(['payload']).where('kind', '=', UTILITY_LINK_JOB).execute();
    const job = jobs.find((j) => (j.payload as { link_id: string }).link_id === link.id);
    assert.ok(job, 'the bill payment is queued with the approval');
    await runPayLink(h.runtime.deps, job!.payload as Record<string, unknown>);
    await runPayLink(h.runtime.deps, job!.payload as Record<string, unknown>);
    const list = (await co.req({ url: `/v1/utilities?filter[payment_id]=${link.payment_id}` })).body;
    assert.equal(list.total, 1, 'paid once');
    assert.equal(list.data[0].status, 'paid');
    assert.equal(list.data[0].link_id, link.id);
    assert.equal((await balances()).available, before.available, 'collected 123,400 and paid the bill with it');
    expectError(await co.req({ method: 'DELETE', url: `/v1/payments/${link.payment_id}` }), 422, 'cant_cancel_payment', 15001);
    expectError(
      await co.req({ url: '/v1/utilities/payment-links', body: { provider_id: '7702001', reference: '90001234' } }),
      422,
      'utility_bill_already_paid',
      11201,
    );
    expectValidation(
      await co.req({ url: '/v1/utilities/payment-links', body: { provider_id: '7702001', reference: '90001235', expiration_minutes: 10 } }),
      'expiration_minutes',
    );
    await expectClean();
  });

  test('a link whose bill cannot be paid when its payment is approved: utility.rejected, the money stays in the balance', async () => {
    const link = (await co.req({ url: '/v1/utilities/payment-links', body: { provider_id: '7703001', reference: '1200000' } })).body;
    assert.ok(link.id, JSON.stringify(link));
    await co.req({ url: `/v1/payments/${link.payment_id}/resolve`, body: { action: 'approve' } });
    await runPayLink(h.runtime.deps, { company_id: co.company.id, environment: 'test', link_id: link.id });
    const u = (await co.req({ url: `/v1/utilities?filter[payment_id]=${link.payment_id}` })).body.data[0];
    assert.equal(u.status, 'rejected');
    assert.equal(u.remarks, 'REJECTED_BY_BILLER');
    assert.deepEqual(
      (await events(u.id)).map((e) => e.type),
      ['utility.rejected'],
    );
    await expectClean();
  });

  test('lists and scoping', async () => {
    const list = await co.req({ url: '/v1/utilities?filter[status]=paid&sort=created_at' });
    assert.equal(list.status, 200, list.raw);
    assert.ok(list.body.data.length >= 2);
    assert.ok(list.body.data.every((u: { status: string }) => u.status === 'paid'));
    assert.equal((await co.req({ url: '/v1/utilities?filter[status]=nope' })).body.total, 0);
    expectError(await co.req({ url: '/v1/utilities?filter[amount]=1' }), 400);
    const other = await h.company('Otra SAS');
    await expectScoped(co, other, { url: `/v1/utilities/${list.body.data[0].id}` });
    expectError(await co.req({ url: '/v1/utilities/util_nope' }), 404, 'record_not_found', 10002);
  });
});
