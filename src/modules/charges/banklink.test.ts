import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHarness, expectError, expectValidation, type Company, type Harness } from '../../../test/harness.ts';
import { installFakeLiveConnector } from '../../../test/fakes/live-connectors.ts';
import { expectScoped } from '../../../test/auth-matrix.ts';
import { createCustomer } from '../../../test/support/cards.ts';
import { getPage, postForm, tokenOf } from '../../../test/support/pages.ts';
import { PLATFORM_BANK_ID } from '../banks/catalogue.ts';
import type { BanklinkPort } from '../../rails/index.ts';
import {
  BANCOLOMBIA,
  balance,
  banklinkBody,
  chargeEvents,
  COOPCENTRAL,
  DAVIPLATA,
  redirectUrl,
  runChargeJobs,
  runExpireJobs,
} from '../../../test/support/charges.ts';

/** POST /v1/charges/banklink and its sandbox bank page (docs/charges.md "Banklink"). */
describe('banklink charges', () => {
  let h: Harness;
  let co: Company;
  let other: Company;
  const create = (body: Record<string, unknown>, c: Company = co, env: 'test' | 'live' = 'test') => c.req({ url: '/v1/charges/banklink', body, env });
  const pathOf = (url: string) => new URL(url).pathname;

  before(async () => {
    h = await createHarness({ CHARGE_RECONCILE_DELAY_MS: '30000' });
    co = await h.company('Tienda Andina SAS');
    // Live calls in these tests run through a stand-in connector (without one: rail_not_configured, test/live-money.test.ts).
    installFakeLiveConnector(h.runtime.deps, { companyId: co.company.id });
    other = await h.company('Otra SAS');
  });
  after(() => h.close());

  test('a banklink charge answers processing with the bank page url; created and processing events; an intent', async () => {
    const customer = await createCustomer(co);
    const res = await create(banklinkBody(customer, { metadata: { pedido: '77' } }));
    assert.equal(res.status, 200, res.raw);
    const c = res.body;
    assert.match(c.id, /^ch_[0-9a-z]{26}$/);
    assert.equal(c.status, 'processing');
    assert.equal(c.payment_method_type, 'banklink');
    assert.equal(c.amount, 125000);
    assert.equal(c.currency, 'COP');
    assert.equal(c.customer_id, customer);
    assert.equal(c.bank_id, BANCOLOMBIA);
    assert.equal(c.redirect_url, redirectUrl);
    assert.equal(c.external_id, 'pedido-77');
    assert.equal(c.reference, 'FAC-2025-0077');
    assert.equal(c.title, 'Pago FAC-2025-0077');
    assert.deepEqual(c.metadata, { pedido: '77' });
    assert.equal(c.url, `http://recaudo.test/pay/${c.id}`);
    assert.equal(c.qr, null);
    assert.equal(c.account_id, null);
    assert.equal(c.card_id, null);
    assert.equal(c.network_id, `sbx_banklink_${c.id}`);
    assert.equal(new Date(c.expires_at).getTime() - new Date(c.created_at).getTime(), 30 * 60_000);
    assert.deepEqual(
      (await chargeEvents(h, co, c.id)).map((e) => `${e.type}:${e.data.status}`),
      ['charge.created:created', 'charge.processing:processing'],
    );
    const intent = await co.req({ url: `/v1/payment-intents/${c.id}` });
    assert.equal(intent.body.method, 'banklink');
    assert.equal(intent.body.status, 'in_progress');
    assert.deepEqual((await co.req({ url: `/v1/charges/${c.id}` })).body, c);
    const listed = await co.req({ url: '/v1/charges?filter[payment_method_type]=banklink&filter[customer_id]=' + customer });
    assert.deepEqual(
      listed.body.data.map((x: { id: string }) => x.id),
      [c.id],
    );
    // The outcome was saved: no reconcile job is left.
    assert.equal(await runChargeJobs(h, [c.id]), 0);
  });

  test('every rule of the request: amount ≥ 1000 and within the company maximum, a banklink bank, a customer, an http(s) redirect_url', async () => {
    const customer = await createCustomer(co);
    expectValidation(await create(banklinkBody(customer, { amount: 999.99 })), 'amount');
    expectValidation(await create(banklinkBody(customer, { amount: '12.345' })), 'amount');
    expectValidation(await create(banklinkBody(customer, { bank_id: COOPCENTRAL })), 'bank_id');
    expectValidation(await create(banklinkBody(customer, { bank_id: PLATFORM_BANK_ID })), 'bank_id');
    expectValidation(await create(banklinkBody(customer, { bank_id: '01a1ffd1-03aa-73c7-a9ea-9767dccc73e5' })), 'bank_id');
    expectValidation(await create(banklinkBody(customer, { bank_id: 'nequi' })), 'bank_id');
    expectValidation(await create(banklinkBody(customer, { redirect_url: 'tienda.example.com/gracias' })), 'redirect_url');
    expectValidation(await create(banklinkBody(customer, { redirect_url: 'javascript:alert(1)' })), 'redirect_url');
    expectValidation(await create(banklinkBody(customer, { redirect_url: undefined })), 'redirect_url');
    expectValidation(await create(banklinkBody(customer, { amount: undefined })), 'amount');
    expectValidation(await create(banklinkBody(await createCustomer(other))), 'customer_id');
    expectValidation(await create(banklinkBody(await createCustomer(co, 'live'))), 'customer_id');
    const all = await create({ amount: 10, bank_id: COOPCENTRAL, customer_id: '01a1ffd1-03aa-73c7-a9ea-9767dccc73e5', redirect_url: redirectUrl });
    expectValidation(all, 'amount', 'bank_id', 'customer_id');

    await h.runtime.deps.database.db.updateTable('companies').set({ max_transaction_cop: 1_000_000n }).where('id', '=', co.company.id).execute();
    try {
      expectValidation(await create(banklinkBody(customer, { amount: 1_000_000.01 })), 'amount');
      const atMax = await create(banklinkBody(customer, { amount: 1_000_000 }));
      assert.equal(atMax.status, 200, atMax.raw);
    } finally {
      await h.runtime.deps.database.db.updateTable('companies').set({ max_transaction_cop: 500_000_000n }).where('id', '=', co.company.id).execute();
    }
    const minimum = await create(banklinkBody(customer, { amount: 1000, bank_id: DAVIPLATA }));
    assert.equal(minimum.status, 200, minimum.raw);
    assert.equal(minimum.body.title, 'Pago FAC-2025-0077');
    const plain = await create({ amount: 2000, bank_id: BANCOLOMBIA, customer_id: customer, redirect_url: 'http://localhost:8080/vuelta' });
    assert.equal(plain.status, 200, plain.raw);
    assert.equal(plain.body.title, 'Pago por transferencia bancaria');
    assert.equal(plain.body.external_id, null);
  });

  test('same customer, bank and amount within 2 minutes: 429 15005 with the previous charge, whatever external_id and reference say', async (t) => {
    h.clock.freeze();
    t.after(() => h.clock.unfreeze());
    const customer = await createCustomer(co);
    const first = await create(banklinkBody(customer, { amount: 50000 }));
    assert.equal(first.status, 200, first.raw);

    h.clock.advance(30_000);
    const dup = await create(banklinkBody(customer, { amount: 50000, external_id: 'otro-pedido', reference: 'OTRA-REF' }));
    expectError(dup, 429, 'banklink_payment_duplicate', 15005);
    assert.equal(dup.body.previous_payment_id, first.body.id);
    assert.equal(dup.body.previous_payment_created_at, first.body.created_at);
    assert.equal(dup.body.time_elapsed_seconds, 30);
    assert.equal(dup.headers['retry-after'], '90');
    const again = await create(banklinkBody(customer, { amount: '50000.00' }));
    expectError(again, 429, 'banklink_payment_duplicate', 15005);

    // Another amount, another bank or another customer is another payment.
    assert.equal((await create(banklinkBody(customer, { amount: 50001 }))).status, 200);
    assert.equal((await create(banklinkBody(customer, { amount: 50000, bank_id: DAVIPLATA }))).status, 200);
    assert.equal((await create(banklinkBody(await createCustomer(co), { amount: 50000 }))).status, 200);
    // The other environment and another company have their own windows.
    assert.equal((await create(banklinkBody(await createCustomer(co, 'live'), { amount: 50000 }), co, 'live')).status, 200);

    // A failed (cancelled) charge still counts: the window is about creation.
    assert.equal((await co.req({ url: `/v1/charges/${first.body.id}/cancel`, body: {} })).body.status, 'failed');
    h.clock.advance(89_000);
    const last = await create(banklinkBody(customer, { amount: 50000 }));
    expectError(last, 429, 'banklink_payment_duplicate', 15005);
    assert.equal(last.body.time_elapsed_seconds, 119);
    h.clock.advance(1_000);
    const later = await create(banklinkBody(customer, { amount: 50000 }));
    assert.equal(later.status, 200, later.raw);
    // ...and the new one opens a new window.
    expectError(await create(banklinkBody(customer, { amount: 50000 })), 429, 'banklink_payment_duplicate', 15005);
    // A refused duplicate recorded nothing: the first, the one at Daviplata, the one after the window.
    const listed = await co.req({ url: `/v1/charges?filter[customer_id]=${customer}&filter[amount]=50000` });
    assert.equal(listed.body.total, 3);
  });

  test('the same x-idempotency replays the first answer instead of answering 15005', async () => {
    const customer = await createCustomer(co);
    const first = await co.req({ url: '/v1/charges/banklink', body: banklinkBody(customer), idem: 'banklink-idem-1' });
    const replay = await co.req({ url: '/v1/charges/banklink', body: banklinkBody(customer), idem: 'banklink-idem-1' });
    assert.equal(replay.status, 200, replay.raw);
    assert.deepEqual(replay.body, first.body);
    expectError(await co.req({ url: '/v1/charges/banklink', body: banklinkBody(customer), idem: false }), 409, 'idempotency_error', 10003);
  });

  test('the sandbox bank: Aprobar pays it and sends the payer to redirect_url with charge_id; the ledger collects', async () => {
    const customer = await createCustomer(co);
    const before = await balance(co);
    const c = (await create(banklinkBody(customer, { amount: 88000 }))).body;
    const page = await getPage(h, pathOf(c.url));
    assert.equal(page.status, 200, page.body.slice(0, 300));
    assert.match(page.body, /Banco de pruebas/);
    assert.match(page.body, /Bancolombia · Pagos en línea/);
    assert.match(page.body, /Autoriza el pago/);
    assert.match(page.body, /Tienda Andina SAS/);
    assert.match(page.body, /\$ 88\.000/);
    assert.match(page.body, new RegExp(c.id));
    assert.match(String(page.headers['content-security-policy']), /form-action 'self' https:\/\/tienda\.example\.com/);

    const answer = await postForm(h, pathOf(c.url), { token: tokenOf(page.body), action: 'approve' });
    assert.equal(answer.status, 303);
    assert.equal(answer.location, `https://tienda.example.com/gracias?pedido=77&charge_id=${c.id}`);
    const paid = (await co.req({ url: `/v1/charges/${c.id}` })).body;
    assert.equal(paid.status, 'paid');
    assert.ok(paid.paid_at);
    assert.equal((await balance(co)).available, before.available + 88000);
    assert.deepEqual(
      (await chargeEvents(h, co, c.id)).map((e) => e.type),
      ['charge.created', 'charge.processing', 'charge.paid'],
    );
    assert.equal((await co.req({ url: `/v1/payment-intents/${c.id}` })).body.status, 'approved');

    // Coming back: the final page, with the way back to the merchant; a repeated answer changes nothing.
    const final = await getPage(h, pathOf(c.url));
    assert.match(final.body, /Pago recibido/);
    assert.match(final.body, /Volver al comercio/);
    assert.match(final.body, /charge_id=/);
    const repeat = await postForm(h, pathOf(c.url), { token: tokenOf(page.body), action: 'reject' });
    assert.equal(repeat.status, 303);
    assert.equal(repeat.location, `/pay/${c.id}`);
    assert.equal((await co.req({ url: `/v1/charges/${c.id}` })).body.status, 'paid');
    assert.equal((await chargeEvents(h, co, c.id)).length, 3);
  });

  test('Rechazar fails it (TRANSACTION_REJECTED) and also returns the payer; forms need their token', async () => {
    const customer = await createCustomer(co);
    const c = (await create(banklinkBody(customer, { amount: 91000 }))).body;
    const page = await getPage(h, pathOf(c.url));
    const forged = await postForm(h, pathOf(c.url), { token: 'x.y', action: 'approve' });
    assert.equal(forged.status, 403);
    assert.match(forged.body, /ya no es válida/);
    const otherToken = await postForm(h, pathOf(c.url), { action: 'approve' });
    assert.equal(otherToken.status, 403);
    assert.equal((await co.req({ url: `/v1/charges/${c.id}` })).body.status, 'processing');

    const answer = await postForm(h, pathOf(c.url), { token: tokenOf(page.body), action: 'reject' });
    assert.equal(answer.status, 303);
    assert.equal(answer.location, `https://tienda.example.com/gracias?pedido=77&charge_id=${c.id}`);
    const failed = (await co.req({ url: `/v1/charges/${c.id}` })).body;
    assert.equal(failed.status, 'failed');
    assert.equal(failed.remarks, 'TRANSACTION_REJECTED');
    assert.deepEqual(
      (await chargeEvents(h, co, c.id)).map((e) => e.type),
      ['charge.created', 'charge.processing', 'charge.failed'],
    );
    const final = await getPage(h, pathOf(c.url));
    assert.match(final.body, /Tu pago no fue aprobado/);
    assert.match(final.body, /La entidad financiera rechazó la transacción/);
  });

  test('an open charge expires after 30 minutes (EXPIRED, charge.failed), by the job or when the page is opened late', async () => {
    const customer = await createCustomer(co);
    const byJob = (await create(banklinkBody(customer, { amount: 3000 }))).body;
    const byPage = (await create(banklinkBody(customer, { amount: 4000 }))).body;
    h.clock.advance(29 * 60_000);
    assert.equal(await runExpireJobs(h, [byJob.id, byPage.id]), 0, 'not due yet');
    h.clock.advance(60_000);
    const late = await getPage(h, pathOf(byPage.url));
    assert.match(late.body, /Este pago venció/);
    assert.equal(await runExpireJobs(h, [byJob.id, byPage.id]), 2);
    for (const id of [byJob.id, byPage.id]) {
      const c = (await co.req({ url: `/v1/charges/${id}` })).body;
      assert.equal(c.status, 'failed');
      assert.equal(c.remarks, 'EXPIRED');
      assert.deepEqual(
        (await chargeEvents(h, co, id)).map((e) => e.type),
        ['charge.created', 'charge.processing', 'charge.failed'],
      );
      assert.equal((await co.req({ url: `/v1/payment-intents/${id}` })).body.status, 'declined');
    }
  });

  test('cancel, resolve and refund work on banklink charges as on any charge', async () => {
    const customer = await createCustomer(co);
    const cancelled = (await create(banklinkBody(customer, { amount: 5000 }))).body;
    const res = await co.req({ url: `/v1/charges/${cancelled.id}/cancel`, body: {} });
    assert.equal(res.body.status, 'failed');
    assert.equal(res.body.remarks, 'CANCELLED');
    assert.match((await getPage(h, pathOf(cancelled.url))).body, /Este cobro fue cancelado/);
    // The cancel's job withdraws the bank session at the banklink rail (not the debit rail).
    const withdrawn: string[] = [];
    const sandbox = h.runtime.deps.rails.sandbox;
    const real = sandbox.banklink;
    sandbox.banklink = Object.assign(Object.create(real) as BanklinkPort, { cancel: async (reference: string) => void withdrawn.push(reference) });
    try {
      assert.equal(await runChargeJobs(h, [cancelled.id]), 1);
    } finally {
      sandbox.banklink = real;
    }
    assert.deepEqual(withdrawn, [cancelled.id]);

    const resolved = (await create(banklinkBody(customer, { amount: 6000 }))).body;
    assert.equal((await co.req({ url: `/v1/charges/${resolved.id}/resolve`, body: { action: 'approve' } })).body.status, 'paid');

    const paid = (await create(banklinkBody(customer, { amount: 7000 }))).body;
    const page = await getPage(h, pathOf(paid.url));
    await postForm(h, pathOf(paid.url), { token: tokenOf(page.body), action: 'approve' });
    assert.equal((await co.req({ url: `/v1/charges/${paid.id}` })).body.status, 'paid');
    // SPEC.md: a test charge cannot be refunded (refunds are tested with POST /charges test_scenario refundable).
    expectError(await co.req({ url: `/v1/charges/${paid.id}/refund`, body: {} }), 422, 'charge_is_test', 10806);
  });

  test('a rail that does not answer leaves the charge created; the reconciler registers it', async () => {
    const customer = await createCustomer(co);
    const sandbox = h.runtime.deps.rails.sandbox;
    const real = sandbox.banklink;
    sandbox.banklink = Object.assign(Object.create(real) as BanklinkPort, {
      open: async () => {
        throw new Error('bank unreachable');
      },
    });
    let c;
    try {
      c = (await create(banklinkBody(customer, { amount: 9100 }))).body;
    } finally {
      sandbox.banklink = real;
    }
    assert.equal(c.status, 'created');
    assert.equal(c.network_id, null);
    h.clock.advance(30_000);
    assert.equal(await runChargeJobs(h, [c.id]), 1);
    const after = (await co.req({ url: `/v1/charges/${c.id}` })).body;
    assert.equal(after.status, 'processing');
    assert.equal(after.network_id, `sbx_banklink_${c.id}`);
  });

  test('scoping: another company sees nothing, the live key gets environment_key_mismatch; live pages do not simulate a bank', async () => {
    const customer = await createCustomer(co);
    const c = (await create(banklinkBody(customer, { amount: 9300 }))).body;
    await expectScoped(co, other, { url: `/v1/charges/${c.id}` });

    const liveCustomer = await createCustomer(co, 'live');
    const live = await create(banklinkBody(liveCustomer, { amount: 9400 }), co, 'live');
    assert.equal(live.status, 200, live.raw);
    assert.equal(live.body.is_test, false);
    const page = await getPage(h, pathOf(live.body.url));
    assert.equal(page.status, 200);
    assert.match(page.body, /no disponible todavía/);
    assert.doesNotMatch(page.body, /Aprobar/);
    assert.equal((await getPage(h, '/pay/ch_01m800jmks947bdw72bbhg5694')).status, 404);
  });
});
