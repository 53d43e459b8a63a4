import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHarness, expectError, expectValidation, send, type Company, type Harness } from '../../../test/harness.ts';
import { FakeWompi } from '../../../test/fakes/wompi-server.ts';
import { cardBody, createCustomer } from '../../../test/support/cards.ts';
import { balance, BANCOLOMBIA, chargeEvents, runChargeJobs, pseCustomer } from '../../../test/support/charges.ts';
import { EXPIRE_JOB } from '../charges/jobs.ts';
import { WompiClient } from '../../rails/connectors/wompi/client.ts';

/**
 * The Wompi connector held to Wompi as it is today (issue 28; PRODUCT.md "Live money you can
 * trust"), each case written to fail on the connector as it was: the acceptance path, both
 * single-use contract tokens, recurrent saved-card charges, the PSE phone, consent through the
 * API, refusals that are final, charges never expired without asking the provider, refunds that
 * end, and test environments that never reach production.
 */

describe('wompi conformance', () => {
  let fake: FakeWompi;
  let sandboxFake: FakeWompi;
  let h: Harness;
  let co: Company;

  before(async () => {
    fake = await new FakeWompi({
      publicKey: 'pub_prod_conform01',
      privateKey: 'prv_prod_conform01',
      eventsSecret: 'prod_events_conform01',
      integritySecret: 'prod_integrity_conform01',
    }).start();
    sandboxFake = await new FakeWompi({
      publicKey: 'pub_test_conform01',
      privateKey: 'prv_test_conform01',
      eventsSecret: 'test_events_conform01',
      integritySecret: 'test_integrity_conform01',
    }).start();
    h = await createHarness({
      WOMPI_PRODUCTION_URL: fake.url,
      WOMPI_SANDBOX_URL: sandboxFake.url,
      CONNECTOR_POLL_AFTER_MS: '60000',
      CONNECTOR_SETTINGS_TTL_MS: '0',
      // A create the provider never answers (the late-approval case) gives up after this.
      RAIL_CALL_TIMEOUT_MS: '1500',
    });
    fake.now = () => h.clock.now();
    co = await h.company('Tienda Conforme SAS');
    const res = await co.req({
      method: 'PUT',
      url: '/v1/connectors/wompi',
      env: 'live',
      body: { public_key: fake.publicKey, private_key: fake.privateKey, events_secret: fake.eventsSecret, integrity_secret: fake.integritySecret },
    });
    assert.equal(res.status, 200, res.raw);
    const url = new URL(res.body.events_url).pathname;
    fake.deliver = async (event) => (await send(h.app, { method: 'POST', url, body: event, idem: false })).status;
  });
  after(async () => {
    await h.close();
    await fake.close();
    await sandboxFake.close();
  });

  const txOf = (reference: string) => [...fake.transactions.values()].find((t) => t.reference === reference)!;
  const charge = async (id: string) => (await co.req({ url: `/v1/charges/${id}`, env: 'live' })).body;
  const sent = (operation: string) => fake.bodies.filter((b) => b.operation === operation).at(-1)!.body;

  async function liveCard() {
    const customer = await createCustomer(co, 'live', 'Lucia');
    const res = await co.req({ url: '/v1/cards', env: 'live', body: cardBody(customer, { accept_terms: true }) });
    assert.equal(res.status, 200, res.raw);
    return { customer, card: res.body.id as string };
  }

  const payerCustomer = (extra: Record<string, unknown> = {}) => pseCustomer(co, 'live', extra);

  const banklink = (customer: string, extra: Record<string, unknown> = {}) =>
    co.req({
      url: '/v1/charges/banklink',
      env: 'live',
      body: {
        amount: 85000,
        bank_id: BANCOLOMBIA,
        customer_id: customer,
        redirect_url: 'https://tienda.example/gracias',
        accept_terms: true,
        ...extra,
      },
    });

  test('acceptance: GET /merchants/info with x-merchant-public-key; the path form only when info is 404', async () => {
    const merchantCalls = () => fake.calls.filter((c) => c.operation === 'merchant');
    const before = merchantCalls().length;
    const client = new WompiClient({ baseUrl: fake.url, publicKey: fake.publicKey, privateKey: fake.privateKey, integritySecret: 'x' });
    const pair = await client.acceptance();
    assert.equal(merchantCalls().length, before + 1, 'one call: the current form answered');
    assert.equal(pair.permalink, fake.termsPermalink);
    assert.equal(pair.personalDataPermalink, fake.personalDataPermalink);
    // A provider still on the older path (info 404): the path form, once.
    const legacy = await new FakeWompi({ legacyMerchantsPath: true }).start();
    try {
      const old = new WompiClient({ baseUrl: legacy.url, publicKey: legacy.publicKey, privateKey: legacy.privateKey, integritySecret: 'x' });
      const got = await old.acceptance();
      assert.ok(got.token && got.personalDataToken);
      assert.deepEqual(
        legacy.calls.map((c) => c.status),
        [404, 200],
      );
    } finally {
      await legacy.close();
    }
  });

  test('both contract tokens go with every payment source and transaction, a fresh single-use pair each time', async () => {
    const { customer, card } = await liveCard();
    const source = sent('payment_source');
    assert.ok(fake.contractTokens.get(source.acceptance_token)?.used, 'acceptance_token sent and spent');
    assert.equal(fake.contractTokens.get(source.accept_personal_auth)?.kind, 'personal', 'accept_personal_auth sent');
    // A second card gets another pair (a spent token is refused by the provider).
    await liveCard();
    assert.notEqual(sent('payment_source').acceptance_token, source.acceptance_token);
    // The card's record keeps both contracts and who asserted the payer's acceptance.
    const row = await h.runtime.deps.database.db.selectFrom('cards').select('rail_acceptance').where('id', '=', card).executeTakeFirstOrThrow();
    const acceptance = JSON.parse(row.rail_acceptance!);
    assert.equal(acceptance.personal_data_permalink, fake.personalDataPermalink);
    assert.match(acceptance.asserted_by, /^api_key:/);
    assert.ok(acceptance.accepted_at);
    void customer;
  });

  test('a charge on a saved card is merchant-initiated: recurrent true (issuers decline it otherwise)', async () => {
    const { customer, card } = await liveCard();
    const res = await co.req({
      url: '/v1/charges',
      env: 'live',
      body: { amount: 70000, title: 'Mensualidad', customer_id: customer, card_id: card },
    });
    assert.equal(res.status, 200, res.raw);
    assert.equal(sent('create_transaction').recurrent, true);
    await fake.finalize(txOf(res.body.id).id);
    assert.equal((await charge(res.body.id)).status, 'paid', 'not declined by the issuer');
  });

  test('consent through the API: accept_terms required in live for cards, PSE and Nequi (422), nothing sent', async () => {
    const customer = await payerCustomer();
    const writes = () => fake.calls.filter((c) => ['tokenize_card', 'payment_source', 'create_transaction', 'merchant'].includes(c.operation)).length;
    const calls = writes();
    expectValidation(await co.req({ url: '/v1/cards', env: 'live', body: cardBody(customer, {}) }), 'accept_terms');
    expectValidation(await banklink(customer, { accept_terms: undefined }), 'accept_terms');
    expectValidation(
      await co.req({
        url: '/v1/request-to-pay/walleta',
        env: 'live',
        body: { amount: 45000, customer_id: customer, phone: '+573991111111', external_id: `consent-${Date.now()}` },
      }),
      'accept_terms',
    );
    assert.equal(writes(), calls, 'nothing about the payer reached the provider');
    // With it, the consent is recorded on the charge.
    const ok = await banklink(customer);
    assert.equal(ok.status, 200, ok.raw);
    const row = await h.runtime.deps.database.db
      .selectFrom('charges')
      .select('provider_consent')
      .where('id', '=', ok.body.id)
      .executeTakeFirstOrThrow();
    assert.match(JSON.parse(row.provider_consent!).asserted_by, /^api_key:/);
  });

  test('PSE: customer_data.phone_number always, with the country code; a customer without a mobile is refused', async () => {
    const res = await banklink(await payerCustomer());
    assert.equal(res.status, 200, res.raw);
    assert.deepEqual(sent('create_transaction').customer_data, { full_name: 'Marta Rojas', phone_number: '573001234567' });
    const noPhone = await payerCustomer({ phone: undefined });
    const calls = fake.calls.length;
    expectValidation(await banklink(noPhone), 'customer_id');
    assert.equal(fake.calls.length, calls);
  });

  test('a definitive refusal on create fails the charge at once, with the reason; never submitted again', async () => {
    fake.refuseCreates = { 'payment_method.user_legal_id': ['Documento inválido'] };
    try {
      const res = await banklink(await payerCustomer());
      assert.equal(res.status, 200, res.raw);
      assert.equal(res.body.status, 'failed', 'final at once');
      assert.match(res.body.remarks, /^REFUSED: INPUT_VALIDATION_ERROR: .*Documento inválido/);
      const creates = fake.calls.filter((c) => c.operation === 'create_transaction').length;
      h.clock.advance(h.config.chargeReconcileDelayMs + 1);
      await runChargeJobs(h, [res.body.id]);
      assert.equal(fake.calls.filter((c) => c.operation === 'create_transaction').length, creates, 'the reconciler does not submit it again');
    } finally {
      fake.refuseCreates = null;
    }
  });

  test('a PSE charge still created at its expiry is not expired while the provider holds it; the approval pays it', async () => {
    fake.failNext('create_transaction', 'lose_answer');
    const res = await banklink(await payerCustomer(), { amount: 93000 });
    assert.equal(res.body.status, 'created', 'the answer was lost');
    h.clock.advance(31 * 60_000);
    await runChargeJobs(h, [res.body.id], EXPIRE_JOB);
    assert.notEqual((await charge(res.body.id)).status, 'failed', 'the provider was asked: it holds a PENDING transaction');
    await fake.finalize(txOf(res.body.id).id);
    const paid = await charge(res.body.id);
    assert.equal(paid.status, 'paid');
    assert.equal(paid.network_id, txOf(res.body.id).id, 'the provider’s id, never a sandbox one');
  });

  test('a charge expired with nothing at the provider, then approved late: paid (LATE_APPROVAL), the money kept', async () => {
    fake.failNext('create_transaction', 'timeout');
    const res = await co.req({
      url: '/v1/charges/banklink',
      env: 'live',
      body: { amount: 94000, bank_id: BANCOLOMBIA, customer_id: await payerCustomer(), redirect_url: 'https://tienda.example/g', accept_terms: true },
    });
    assert.equal(res.body.status, 'created');
    h.clock.advance(31 * 60_000);
    await runChargeJobs(h, [res.body.id], EXPIRE_JOB);
    const expired = await charge(res.body.id);
    assert.equal(expired.status, 'failed');
    assert.equal(expired.remarks, 'EXPIRED');
    const before = (await balance(co, 'COP', 'live')).available;
    // The create that never answered landed at the provider after all, and the payer paid.
    const late = fake.plant(res.body.id, 9_400_000, 'PSE', 'APPROVED');
    assert.equal(await fake.postEvent(late), 200);
    const paid = await charge(res.body.id);
    assert.equal(paid.status, 'paid');
    assert.equal(paid.remarks, 'LATE_APPROVAL');
    assert.equal(paid.network_id, late.id, 'the provider’s transaction is recorded');
    assert.equal((await balance(co, 'COP', 'live')).available - before, 94000, 'the money is in the balance');
    const types = (await chargeEvents(h, co, res.body.id)).map((e) => e.type);
    assert.deepEqual(types.slice(-2), ['charge.failed', 'charge.paid']);
  });

  test('every reconciler ends: a provider PENDING for more than 72 hours makes the job fail (dead in the end), never a guess', async () => {
    const { customer, card } = await liveCard();
    const res = await co.req({ url: '/v1/charges', env: 'live', body: { amount: 52000, title: 'Pedido 99', customer_id: customer, card_id: card } });
    assert.equal(res.body.status, 'processing');
    const pse = await banklink(await payerCustomer(), { amount: 52000 });
    assert.equal(pse.body.status, 'processing');
    h.clock.advance(73 * 3_600_000);
    await assert.rejects(runChargeJobs(h, [res.body.id]), /no final word for 73 h/);
    await assert.rejects(runChargeJobs(h, [pse.body.id], EXPIRE_JOB), /no final word/);
    assert.equal((await charge(res.body.id)).status, 'processing', 'nothing settled by a guess');
    assert.equal((await charge(pse.body.id)).status, 'processing');
    // The provider's word still settles them whenever it comes.
    await fake.finalize(txOf(res.body.id).id);
    assert.equal((await charge(res.body.id)).status, 'paid');
    await fake.finalize(txOf(pse.body.id).id);
    assert.equal((await charge(pse.body.id)).status, 'paid');
  });

  test('a void the provider refuses: the refund fails with its reason, the money is back, charge.refund_failed', async () => {
    const { customer, card } = await liveCard();
    const res = await co.req({ url: '/v1/charges', env: 'live', body: { amount: 60000, title: 'Pedido 12', customer_id: customer, card_id: card } });
    await fake.finalize(txOf(res.body.id).id);
    const before = (await balance(co, 'COP', 'live')).available;
    fake.voidBehaviour = 'refuse';
    try {
      const refused = await co.req({ url: `/v1/charges/${res.body.id}/refund`, env: 'live', body: {} });
      expectError(refused, 422, 'rail_refund_unavailable');
      assert.match(refused.body.message, /refused the refund/);
      assert.equal((await charge(res.body.id)).status, 'paid');
      assert.equal((await balance(co, 'COP', 'live')).available, before, 'the money is back in the available balance');
      const types = (await chargeEvents(h, co, res.body.id)).map((e) => e.type);
      assert.equal(types.at(-1), 'charge.refund_failed');
      const refunds = await h.runtime.deps.database.db
        .selectFrom('charge_refunds')
        .select(['status', 'failure_reason'])
        .where('charge_id', '=', res.body.id)
        .execute();
      assert.equal(refunds.length, 1);
      assert.equal(refunds[0].status, 'failed');
      assert.match(refunds[0].failure_reason!, /^VOID_REFUSED/);
    } finally {
      fake.voidBehaviour = 'void';
    }
    // Refused again: the money comes back once more, never twice (the second refund took it first).
    fake.voidBehaviour = 'refuse';
    try {
      expectError(await co.req({ url: `/v1/charges/${res.body.id}/refund`, env: 'live', body: {} }), 422, 'rail_refund_unavailable');
    } finally {
      fake.voidBehaviour = 'void';
    }
    assert.equal((await balance(co, 'COP', 'live')).available, before, 'after two refusals, the balance is what it was');
    // The company may refund again once the provider takes it: the money leaves once.
    const again = await co.req({ url: `/v1/charges/${res.body.id}/refund`, env: 'live', body: {} });
    assert.equal(again.status, 200, again.raw);
    assert.equal(again.body.status, 'refunded');
    assert.equal((await balance(co, 'COP', 'live')).available, before - 60000, 'the refund took the money out');
  });

  test('a void done whose answer was lost: the retry, refused by the provider, reads the transaction back and succeeds', async () => {
    const { customer, card } = await liveCard();
    const res = await co.req({ url: '/v1/charges', env: 'live', body: { amount: 62000, title: 'Pedido 14', customer_id: customer, card_id: card } });
    await fake.finalize(txOf(res.body.id).id);
    const before = (await balance(co, 'COP', 'live')).available;
    fake.failNext('void_transaction', 'lose_answer');
    const lost = await co.req({ url: `/v1/charges/${res.body.id}/refund`, env: 'live', body: {} });
    assert.equal(lost.status, 503, lost.raw);
    assert.equal(txOf(res.body.id).status, 'VOIDED', 'the provider did void it');
    h.clock.advance(h.config.chargeReconcileDelayMs + 1);
    await runChargeJobs(h, [res.body.id]);
    assert.equal((await charge(res.body.id)).status, 'refunded', 'not a failed refund: the money is not credited back');
    assert.equal((await balance(co, 'COP', 'live')).available, before - 62000);
  });

  test('a void answered 201 with an empty body is read back: the refund succeeds, never left pending', async () => {
    const { customer, card } = await liveCard();
    const res = await co.req({ url: '/v1/charges', env: 'live', body: { amount: 61000, title: 'Pedido 13', customer_id: customer, card_id: card } });
    await fake.finalize(txOf(res.body.id).id);
    fake.voidBehaviour = 'empty_201';
    try {
      const refunded = await co.req({ url: `/v1/charges/${res.body.id}/refund`, env: 'live', body: {} });
      assert.equal(refunded.status, 200, refunded.raw);
      assert.equal(refunded.body.status, 'refunded');
    } finally {
      fake.voidBehaviour = 'void';
    }
  });

  test('test never touches production: a test environment connects only to the provider’s sandbox', async () => {
    const prod = await co.req({
      method: 'PUT',
      url: '/v1/connectors/wompi',
      body: {
        provider_environment: 'production',
        public_key: 'pub_prod_abcdefgh',
        private_key: 'prv_prod_abcdefgh',
        events_secret: 'prod_events_abcdefgh',
        integrity_secret: 'prod_integrity_abcdefgh',
      },
    });
    expectValidation(prod, 'provider_environment');
    expectValidation(
      await co.req({
        method: 'PUT',
        url: '/v1/connectors/wompi',
        body: {
          public_key: 'pub_prod_abcdefgh',
          private_key: 'prv_prod_abcdefgh',
          events_secret: 'prod_events_abcdefgh',
          integrity_secret: 'prod_integrity_abcdefgh',
        },
      }),
      'public_key',
    );
    assert.equal((await co.req({ url: '/v1/connectors/wompi' })).status, 404, 'nothing saved');
  });

  test('settings saved before that rule (a test environment on production) are never used: the sandbox answers, production is not called', async () => {
    const legacy = await h.company('Tienda Antigua SAS');
    const put = await legacy.req({
      method: 'PUT',
      url: '/v1/connectors/wompi',
      body: {
        provider_environment: 'sandbox',
        public_key: sandboxFake.publicKey,
        private_key: sandboxFake.privateKey,
        events_secret: sandboxFake.eventsSecret,
        integrity_secret: sandboxFake.integritySecret,
      },
    });
    assert.equal(put.status, 200, put.raw);
    // As an earlier release could have stored it: the test environment at the provider's production.
    await h.runtime.deps.database.db
      .updateTable('connector_settings')
      .set({ provider_environment: 'production' })
      .where('company_id', '=', legacy.company.id)
      .where('environment', '=', 'test')
      .execute();
    const calls = fake.calls.length + sandboxFake.calls.length;
    const customer = await createCustomer(legacy, 'test', 'Lucia');
    const card = await legacy.req({ url: '/v1/cards', body: cardBody(customer, {}) });
    assert.equal(card.status, 200, card.raw);
    const paid = await legacy.req({ url: '/v1/charges', body: { amount: 10000, title: 'Pedido 2', customer_id: customer, card_id: card.body.id } });
    assert.equal(paid.body.status, 'paid', 'the built-in sandbox answered');
    assert.equal(fake.calls.length + sandboxFake.calls.length, calls, 'no provider was called');
    const health = await legacy.req({ url: '/v1/connectors/wompi/health' });
    expectError(health, 404, 'record_not_found');
    assert.match(health.body.message, /test keys never reach/);
  });

  test('sandbox helpers refuse what a connector handles: resolve, dispute, test_scenario in a test environment on the provider’s sandbox', async () => {
    const other = await h.company('Tienda Sandbox SAS');
    const put = await other.req({
      method: 'PUT',
      url: '/v1/connectors/wompi',
      body: {
        provider_environment: 'sandbox',
        public_key: sandboxFake.publicKey,
        private_key: sandboxFake.privateKey,
        events_secret: sandboxFake.eventsSecret,
        integrity_secret: sandboxFake.integritySecret,
      },
    });
    assert.equal(put.status, 200, put.raw);
    const customer = await createCustomer(other, 'test', 'Lucia');
    const card = await other.req({ url: '/v1/cards', body: cardBody(customer, {}) });
    assert.equal(card.status, 200, card.raw);
    const body = { amount: 50000, title: 'Pedido 1', customer_id: customer, card_id: card.body.id };
    expectValidation(await other.req({ url: '/v1/charges', body: { ...body, test_scenario: 'pending' } }), 'test_scenario');
    const created = await other.req({ url: '/v1/charges', body });
    assert.equal(created.status, 200, created.raw);
    assert.equal(created.body.status, 'processing', 'the provider’s sandbox answered PENDING');
    expectError(await other.req({ url: `/v1/charges/${created.body.id}/resolve`, body: { action: 'approve' } }), 422);
    const tx = [...sandboxFake.transactions.values()].find((t) => t.reference === created.body.id)!;
    await sandboxFake.finalize(tx.id, { event: false });
    h.clock.advance(60_001);
    await runChargeJobs(h, [created.body.id]);
    assert.equal((await other.req({ url: `/v1/charges/${created.body.id}` })).body.status, 'paid');
    const dispute = await other.req({ url: `/v1/charges/${created.body.id}/dispute`, body: {} });
    assert.ok([403, 422].includes(dispute.status), dispute.raw);
    assert.equal((await other.req({ url: `/v1/charges/${created.body.id}` })).body.disputed, false);
    // PSE on the provider's sandbox: its test banks are listed (no real bank has their codes) and take a charge.
    const banks = await other.req({ url: '/v1/banks?banklink=true' });
    const approving = banks.body.find((b: { code: string }) => b.code === '1');
    assert.ok(approving, `the sandbox's test bank "1" is listed: ${banks.raw.slice(0, 300)}`);
    assert.match(approving.name, /Banco que aprueba/);
    assert.ok(banks.body.some((b: { code: string }) => b.code === '2'));
    const payer = await other.req({
      url: '/v1/customers',
      body: {
        first_name: 'Marta',
        last_name: 'Rojas',
        email: 'marta@example.com',
        document_type: 'CC',
        document_number: '1020304050',
        phone: '+573001234567',
      },
    });
    const pse = await other.req({
      url: '/v1/charges/banklink',
      body: { amount: 85000, bank_id: approving.id, customer_id: payer.body.id, redirect_url: 'https://tienda.example/gracias' },
    });
    assert.equal(pse.status, 200, pse.raw);
    const pseTx = [...sandboxFake.transactions.values()].find((t) => t.reference === pse.body.id)!;
    assert.equal(pseTx.payment_method?.financial_institution_code, '1');
    // Payments: a test scenario would never reach the provider's sandbox.
    const payment = await other.req({
      url: '/v1/payments',
      body: { title: 'Factura de marzo', description: 'Servicio', amount: 150000, test_scenario: 'INSUFFICIENT_FUNDS' },
    });
    expectValidation(payment, 'test_scenario');
    const plain = await other.req({ url: '/v1/payments', body: { title: 'Factura de abril', description: 'Servicio', amount: 150000 } });
    assert.equal(plain.status, 200, plain.raw);
    expectError(await other.req({ url: `/v1/payments/${plain.body.id}/resolve`, body: { action: 'approve' } }), 422);
  });
});
