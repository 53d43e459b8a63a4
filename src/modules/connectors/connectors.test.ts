import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHarness, expectError, expectValidation, send, type Company, type Harness } from '../../../test/harness.ts';
import { FakeWompi } from '../../../test/fakes/wompi-server.ts';
import { cardBody, createCustomer } from '../../../test/support/cards.ts';
import { balance, BANCOLOMBIA, chargeEvents, runChargeJobs, pseCustomer } from '../../../test/support/charges.ts';
import { EXPIRE_JOB } from '../charges/jobs.ts';
import { bankId } from '../banks/catalogue.ts';
import { ATTEMPT_NEVER_REACHED_MS, POLL_ATTEMPT_JOB, runAttemptPoll } from '../payments/provider-attempts.ts';
import {
  consentOf,
  createPayment,
  getPage,
  goodCard,
  intentsOf,
  pageToken,
  paymentStatus,
  postForm,
  providerCardToken,
  tokenOf,
} from '../../../test/support/pages.ts';
import { eventChecksumValid, integritySignature } from '../../rails/connectors/wompi/contract.ts';

/**
 * The Wompi connector (docs/connectors.md) against the local fake of its public API: settings
 * (write-only secrets, live only at production), cards saved at the provider, charges that are
 * PENDING first and settle from the signed event or a poll, forged and duplicate events, a lost
 * answer retried without a second provider transaction, refunds as voids, and the health view.
 */

const POLL_MS = 60_000;

describe('wompi connector', () => {
  let fake: FakeWompi;
  let h: Harness;
  let co: Company;

  before(async () => {
    fake = await new FakeWompi({
      publicKey: 'pub_prod_fake0001',
      privateKey: 'prv_prod_fake0001',
      eventsSecret: 'prod_events_fake0001',
      integritySecret: 'prod_integrity_fake0001',
    }).start();
    h = await createHarness({ WOMPI_PRODUCTION_URL: fake.url, CONNECTOR_POLL_AFTER_MS: String(POLL_MS), CONNECTOR_SETTINGS_TTL_MS: '0' });
    fake.now = () => h.clock.now();
    fake.deliver = async (event) => (await send(h.app, { method: 'POST', url: '/v1/rails/wompi/events', body: event, idem: false })).status;
    co = await h.company('Tienda Real SAS');
  });
  after(async () => {
    await h.close();
    await fake.close();
  });

  const settings = () => ({
    public_key: fake.publicKey,
    private_key: fake.privateKey,
    events_secret: fake.eventsSecret,
    integrity_secret: fake.integritySecret,
  });

  async function connect(target: Company = co) {
    const res = await target.req({ method: 'PUT', url: '/v1/connectors/wompi', env: 'live', body: settings() });
    assert.equal(res.status, 200, res.raw);
    return res.body;
  }

  async function liveCard(target: Company = co, number = '4242424242424242') {
    const customer = await createCustomer(target, 'live', 'Lucia');
    const res = await target.req({ url: '/v1/cards', env: 'live', body: cardBody(customer, { card_number: number, accept_terms: true }) });
    assert.equal(res.status, 200, res.raw);
    return { customer, card: res.body.id as string };
  }

  async function charge(customer: string, card: string, idem?: string) {
    const res = await co.req({
      url: '/v1/charges',
      env: 'live',
      idem,
      body: { amount: 150000.5, title: 'Pedido 77', customer_id: customer, card_id: card },
    });
    assert.equal(res.status, 200, res.raw);
    return res.body;
  }

  const txOf = (chargeId: string) => [...fake.transactions.values()].find((t) => t.reference === chargeId)!;

  test('settings: validated, secrets write-only, live only at production', async () => {
    expectError(await co.req({ url: '/v1/connectors/wompi', env: 'live' }), 404, 'record_not_found');
    expectValidation(await co.req({ method: 'PUT', url: '/v1/connectors/wompi', env: 'live', body: { public_key: fake.publicKey } }), 'private_key');
    expectValidation(
      await co.req({ method: 'PUT', url: '/v1/connectors/wompi', env: 'live', body: { ...settings(), provider_environment: 'sandbox' } }),
      'provider_environment',
    );
    expectValidation(
      await co.req({ method: 'PUT', url: '/v1/connectors/wompi', env: 'live', body: { ...settings(), public_key: 'pub_test_abcdefgh' } }),
      'public_key',
    );
    const out = await connect();
    assert.equal(out.provider_environment, 'production');
    assert.deepEqual(out.private_key, { set: true, last4: '0001' });
    assert.deepEqual(out.rails, ['card', 'banklink', 'walleta'], 'every rail the connector serves, by default');
    assert.match(out.events_url, /^http:\/\/recaudo\.test\/v1\/rails\/wompi\/events\/cet_[A-Za-z0-9_-]{32}$/, 'the company’s own events URL');
    const raw = JSON.stringify(await co.req({ url: '/v1/connectors/wompi', env: 'live' }));
    for (const secret of [fake.privateKey, fake.eventsSecret, fake.integritySecret]) assert.ok(!raw.includes(secret), 'no secret is answered');
    const row = await h.runtime.deps.database.db.selectFrom('connector_settings').selectAll().executeTakeFirstOrThrow();
    assert.ok(!JSON.stringify(row).includes(fake.privateKey), 'secrets are sealed at rest');
    // A test environment may point at the provider's sandbox, never with production keys.
    expectValidation(await co.req({ method: 'PUT', url: '/v1/connectors/wompi', body: settings() }), 'public_key');
    // A partial PUT keeps the secrets.
    const again = await co.req({ method: 'PUT', url: '/v1/connectors/wompi', env: 'live', body: { rails: ['card'] } });
    assert.equal(again.status, 200, again.raw);
    assert.deepEqual(again.body.events_secret, { set: true, last4: '0001' });
  });

  test('a card is saved at the provider; a charge is PENDING, then paid by the signed event, exactly once', async () => {
    await connect();
    const { customer, card } = await liveCard();
    assert.equal(fake.count('payment_source'), 1, 'saved as a payment source, with the acceptance token');
    const created = await charge(customer, card);
    assert.equal(created.status, 'processing', 'the provider answered PENDING');
    const tx = txOf(created.id);
    assert.equal(tx.amount_in_cents, 15000050, 'pesos × 100, exactly');
    assert.equal(tx.status, 'PENDING');
    // The event settles it; the same event again changes nothing.
    await fake.finalize(tx.id);
    assert.equal(await fake.postEvent(tx), 200);
    const paid = await co.req({ url: `/v1/charges/${created.id}`, env: 'live' });
    assert.equal(paid.body.status, 'paid');
    const types = (await chargeEvents(h, co, created.id)).map((e) => e.type);
    assert.equal(types.filter((t) => t === 'charge.paid').length, 1, types.join());
    assert.equal((await balance(co, 'COP', 'live')).available, 150000.5);
    // A poll later finds it final and changes nothing either.
    h.clock.advance(POLL_MS + 1);
    await runChargeJobs(h, [created.id]);
    assert.equal((await chargeEvents(h, co, created.id)).filter((e) => e.type === 'charge.paid').length, 1);
  });

  test('a declined card fails with the provider reason; a forged event is refused and changes nothing', async () => {
    const { customer, card } = await liveCard(co, '4111111111111111');
    const created = await charge(customer, card);
    const tx = txOf(created.id);
    await fake.finalize(tx.id, { event: false });
    // Forged: the amount changed after signing; and one signed with another secret.
    const forged = fake.eventOf(tx, (e) => {
      (e.data.transaction as { status: string }).status = 'APPROVED';
    });
    assert.equal(eventChecksumValid(forged, fake.eventsSecret), false);
    const refused = await send(h.app, { method: 'POST', url: '/v1/rails/wompi/events', body: forged, idem: false });
    expectError(refused, 401, 'unauthenticated');
    assert.equal((await co.req({ url: `/v1/charges/${created.id}`, env: 'live' })).body.status, 'processing');
    const recorded = await h.runtime.deps.database.db
      .selectFrom('connector_events')
      .select(['verified', 'problem'])
      .where('reference', '=', created.id)
      .execute();
    assert.deepEqual(recorded, [{ verified: false, problem: 'bad checksum' }]);
    // The real event: failed with the reason.
    assert.equal(await fake.postEvent(tx), 200);
    const failed = (await co.req({ url: `/v1/charges/${created.id}`, env: 'live' })).body;
    assert.equal(failed.status, 'failed');
    assert.equal(failed.remarks, 'DECLINED: Fondos insuficientes');
  });

  test('without an event, the reconciler polls the transaction past the deadline', async () => {
    const { customer, card } = await liveCard();
    const created = await charge(customer, card);
    await fake.finalize(txOf(created.id).id, { event: false });
    await runChargeJobs(h, [created.id]);
    assert.equal((await co.req({ url: `/v1/charges/${created.id}`, env: 'live' })).body.status, 'processing', 'not before the deadline');
    h.clock.advance(POLL_MS + 1);
    await runChargeJobs(h, [created.id]);
    assert.equal((await co.req({ url: `/v1/charges/${created.id}`, env: 'live' })).body.status, 'paid');
  });

  test('a lost answer, a retry with the same key and the reconciler: one provider transaction', async () => {
    const { customer, card } = await liveCard();
    fake.failNext('create_transaction', 'lose_answer');
    const idem = `lost-${Date.now()}`;
    const first = await charge(customer, card, idem);
    assert.equal(first.status, 'created', 'the outcome is unknown: nothing guessed');
    const retry = await charge(customer, card, idem);
    assert.equal(retry.id, first.id, 'the same key answers the same charge');
    h.clock.advance(h.config.chargeReconcileDelayMs + 1);
    await runChargeJobs(h, [first.id]);
    const txs = [...fake.transactions.values()].filter((t) => t.reference === first.id);
    assert.equal(txs.length, 1, 'one provider transaction for the reference');
    await fake.finalize(txs[0].id);
    assert.equal((await co.req({ url: `/v1/charges/${first.id}`, env: 'live' })).body.status, 'paid');
  });

  test('installments reach the provider, also when the reconciler submits again', async () => {
    const { customer, card } = await liveCard();
    const res = await co.req({
      url: '/v1/charges',
      env: 'live',
      body: { amount: 300000, title: 'Nevera', customer_id: customer, card_id: card, installments: 6 },
    });
    assert.equal(res.status, 200, res.raw);
    assert.equal(txOf(res.body.id).payment_method?.installments, 6);
    const bad = await co.req({
      url: '/v1/charges',
      env: 'live',
      body: { amount: 300000, title: 'Nevera', customer_id: customer, card_id: card, installments: 40 },
    });
    expectValidation(bad, 'installments');
  });

  test('a refund voids the card transaction', async () => {
    const { customer, card } = await liveCard();
    const created = await charge(customer, card);
    await fake.finalize(txOf(created.id).id);
    const refunded = await co.req({ url: `/v1/charges/${created.id}/refund`, env: 'live', body: {} });
    assert.equal(refunded.status, 200, refunded.raw);
    assert.equal(refunded.body.status, 'refunded');
    assert.equal(txOf(created.id).status, 'VOIDED');
  });

  test('the provider refuses the card data: 422 on card_number, nothing saved', async () => {
    const customer = await createCustomer(co, 'live', 'Pedro');
    const res = await co.req({ url: '/v1/cards', env: 'live', body: cardBody(customer, { holder_name: 'Al', accept_terms: true }) });
    expectValidation(res, 'card_number');
    const listed = await co.req({ url: `/v1/customers/${customer}/cards`, env: 'live' });
    assert.equal(listed.body.data.length, 0);
  });

  const payerCustomer = (extra: Record<string, unknown> = {}) => pseCustomer(co, 'live', extra);

  const banklink = (customer: string, extra: Record<string, unknown> = {}) =>
    co.req({
      url: '/v1/charges/banklink',
      env: 'live',
      body: {
        amount: 85000,
        bank_id: BANCOLOMBIA,
        customer_id: customer,
        redirect_url: 'https://tienda.example/gracias?pedido=9',
        accept_terms: true,
        ...extra,
      },
    });

  test('cards tokenized from the browser are the provider’s tokens, saved there as a payment source; a refused card is 422', async () => {
    const customer = await createCustomer(co, 'live', 'Tomas');
    const tokenized = fake.count('tokenize_card');
    const token = await co.req({ url: '/v1/tokens', env: 'live', body: cardBody('', { customer_id: undefined }), key: co.publishable_keys.live });
    assert.equal(token.status, 200, token.raw);
    assert.equal(fake.count('tokenize_card'), tokenized + 1, 'the card data went to the provider');
    const row = await h.runtime.deps.database.db
      .selectFrom('card_tokens')
      .select('rail_token')
      .where('id', '=', token.body.id)
      .executeTakeFirstOrThrow();
    assert.match(row.rail_token!, /^tok_test_/);
    const sources = fake.count('payment_source');
    const card = await co.req({
      url: '/v1/cards/tokenized',
      env: 'live',
      body: { customer_id: customer, card_token: token.body.id, authorization: true, accept_terms: true },
    });
    assert.equal(card.status, 200, card.raw);
    assert.equal(fake.count('payment_source'), sources + 1);
    const created = await charge(customer, card.body.id);
    assert.equal(created.status, 'processing');
    await fake.finalize(txOf(created.id).id);
    assert.equal((await co.req({ url: `/v1/charges/${created.id}`, env: 'live' })).body.status, 'paid');
    const refused = await co.req({
      url: '/v1/tokens',
      env: 'live',
      body: cardBody('', { customer_id: undefined, holder_name: 'Al' }),
      key: co.publishable_keys.live,
    });
    expectValidation(refused, 'card_number');
  });

  test('PSE: the banks are the provider’s institutions; a banklink charge sends the payer to the provider’s bank page, then the event pays it', async () => {
    const rails = await co.req({ method: 'PUT', url: '/v1/connectors/wompi', env: 'live', body: { rails: ['card', 'banklink', 'walleta'] } });
    assert.deepEqual(rails.body.rails, ['card', 'banklink', 'walleta']);
    const banks = await co.req({ url: '/v1/banks?banklink=true', env: 'live' });
    assert.equal(banks.status, 200, banks.raw);
    assert.deepEqual(banks.body.map((b: { code: string }) => b.code).sort(), ['1001', '1007', '1051'], 'catalogue banks the provider lists');
    const customer = await payerCustomer();
    const before = (await balance(co, 'COP', 'live')).available;
    const res = await banklink(customer, { reference: 'PED-0009' });
    assert.equal(res.status, 200, res.raw);
    assert.equal(res.body.status, 'processing');
    const tx = txOf(res.body.id);
    assert.equal(res.body.url, fake.bankPageUrl(tx.id), 'the provider’s async_payment_url');
    assert.equal(res.body.network_id, tx.id);
    assert.equal(tx.amount_in_cents, 8500000);
    assert.deepEqual(
      {
        type: tx.payment_method!.type,
        user_type: tx.payment_method!.user_type,
        user_legal_id_type: tx.payment_method!.user_legal_id_type,
        user_legal_id: tx.payment_method!.user_legal_id,
        financial_institution_code: tx.payment_method!.financial_institution_code,
      },
      { type: 'PSE', user_type: 0, user_legal_id_type: 'CC', user_legal_id: '1020304050', financial_institution_code: '1007' },
    );
    const back = new URL((tx as { redirect_url?: string }).redirect_url!);
    assert.equal(back.searchParams.get('charge_id'), res.body.id, 'the payer comes back with charge_id');
    assert.equal(back.searchParams.get('pedido'), '9');
    await fake.finalize(tx.id);
    const paid = (await co.req({ url: `/v1/charges/${res.body.id}`, env: 'live' })).body;
    assert.equal(paid.status, 'paid');
    assert.equal((await balance(co, 'COP', 'live')).available, before + 85000);
    const types = (await chargeEvents(h, co, res.body.id)).map((e) => e.type);
    assert.deepEqual(types, ['charge.created', 'charge.processing', 'charge.paid']);
    // The provider gives no money back for PSE: a coded refusal, nothing recorded.
    const refund = await co.req({ url: `/v1/charges/${res.body.id}/refund`, env: 'live', body: {} });
    expectError(refund, 422, 'rail_refund_unavailable');
    assert.equal(refund.body.code, 10901);
    assert.equal(refund.body.rail, 'banklink');
    const refunds = await h.runtime.deps.database.db.selectFrom('charge_refunds').select('id').where('charge_id', '=', res.body.id).execute();
    assert.equal(refunds.length, 0);
    assert.equal((await co.req({ url: `/v1/charges/${res.body.id}`, env: 'live' })).body.status, 'paid');
  });

  test('PSE: a payer without identity, or a bank the provider does not list, is refused before anything is created', async () => {
    const anonymous = await payerCustomer({ document_type: null, document_number: null });
    expectValidation(await banklink(anonymous), 'customer_id');
    const customer = await payerCustomer();
    expectValidation(await banklink(customer, { bank_id: bankId('1809') }), 'bank_id');
    assert.equal(fake.count('create_transaction') > 0, true);
    const before = fake.transactions.size;
    expectValidation(await banklink(customer, { bank_id: bankId('1013'), amount: 86000 }), 'bank_id');
    assert.equal(fake.transactions.size, before, 'no provider transaction');
  });

  test('PSE: past its 30 minutes a session the provider still holds is not expired; the provider’s late approval pays it', async () => {
    const customer = await payerCustomer();
    const res = await banklink(customer, { amount: 91000 });
    assert.equal(res.status, 200, res.raw);
    const tx = txOf(res.body.id);
    h.clock.advance(31 * 60_000);
    await runChargeJobs(h, [res.body.id], EXPIRE_JOB);
    assert.equal((await co.req({ url: `/v1/charges/${res.body.id}`, env: 'live' })).body.status, 'processing', 'the provider still has it open');
    await fake.finalize(tx.id, { event: false });
    h.clock.advance(POLL_MS + 1);
    await runChargeJobs(h, [res.body.id], EXPIRE_JOB);
    assert.equal((await co.req({ url: `/v1/charges/${res.body.id}`, env: 'live' })).body.status, 'paid');
  });

  test('PSE: the provider’s decline fails the charge with its reason; a lost answer creates one provider transaction', async () => {
    const customer = await payerCustomer();
    fake.failNext('create_transaction', 'lose_answer');
    const idem = `pse-lost-${Date.now()}`;
    const first = await co.req({
      url: '/v1/charges/banklink',
      env: 'live',
      idem,
      body: { amount: 92000, bank_id: BANCOLOMBIA, customer_id: customer, redirect_url: 'https://tienda.example/gracias', accept_terms: true },
    });
    assert.equal(first.status, 200, first.raw);
    assert.equal(first.body.status, 'created', 'the outcome is unknown: nothing guessed');
    h.clock.advance(h.config.chargeReconcileDelayMs + 1);
    await runChargeJobs(h, [first.body.id]);
    const txs = [...fake.transactions.values()].filter((t) => t.reference === first.body.id);
    assert.equal(txs.length, 1, 'one provider transaction for the reference');
    const registered = (await co.req({ url: `/v1/charges/${first.body.id}`, env: 'live' })).body;
    assert.equal(registered.status, 'processing');
    assert.equal(registered.url, fake.bankPageUrl(txs[0].id));
    await fake.finalize(txs[0].id, { status: 'DECLINED', message: 'Transacción rechazada por el banco' });
    const failed = (await co.req({ url: `/v1/charges/${first.body.id}`, env: 'live' })).body;
    assert.equal(failed.status, 'failed');
    assert.equal(failed.remarks, 'DECLINED: Transacción rechazada por el banco');
  });

  const walleta = (customer: string, phone: string, externalId: string) =>
    co.req({
      url: '/v1/request-to-pay/walleta',
      env: 'live',
      body: { amount: 45000, customer_id: customer, phone, external_id: externalId, accept_terms: true },
    });

  test('Nequi: the request is pushed to the payer’s app; confirm answers it open until the provider decides; the event settles it', async () => {
    const customer = await payerCustomer();
    const res = await walleta(customer, '+573991111111', `nequi-${Date.now()}`);
    assert.equal(res.status, 200, res.raw);
    assert.equal(res.body.status, 'processing');
    const tx = txOf(res.body.id);
    assert.deepEqual(tx.payment_method, { type: 'NEQUI', phone_number: '3991111111' });
    const cancel = await co.req({ url: `/v1/charges/${res.body.id}/cancel`, env: 'live', body: {} });
    expectError(cancel, 422, 'charge_not_cancellable');
    assert.match(cancel.body.message, /cannot withdraw/);
    const open = await co.req({ url: `/v1/request-to-pay/walleta/${res.body.id}/confirm`, env: 'live', idem: false, body: {} });
    assert.equal(open.status, 200, open.raw);
    assert.equal(open.body.status, 'processing', 'the payer has not acted yet');
    await fake.finalize(tx.id);
    const confirmed = await co.req({ url: `/v1/request-to-pay/walleta/${res.body.id}/confirm`, env: 'live', idem: false, body: {} });
    assert.equal(confirmed.body.status, 'paid');
    assert.equal((await chargeEvents(h, co, res.body.id)).filter((e) => e.type === 'charge.paid').length, 1);
    const refund = await co.req({ url: `/v1/charges/${res.body.id}/refund`, env: 'live', body: {} });
    expectError(refund, 422, 'rail_refund_unavailable');
  });

  test('Nequi: a decline reaches the charge by the reconciler’s poll; a customer without e-mail is refused', async () => {
    const customer = await payerCustomer();
    const res = await walleta(customer, '+573992222222', `nequi-d-${Date.now()}`);
    assert.equal(res.status, 200, res.raw);
    await fake.finalize(txOf(res.body.id).id, { event: false });
    await runChargeJobs(h, [res.body.id]);
    assert.equal((await co.req({ url: `/v1/charges/${res.body.id}`, env: 'live' })).body.status, 'processing', 'not polled before the deadline');
    h.clock.advance(POLL_MS + 1);
    await runChargeJobs(h, [res.body.id]);
    const failed = (await co.req({ url: `/v1/charges/${res.body.id}`, env: 'live' })).body;
    assert.equal(failed.status, 'failed');
    assert.equal(failed.remarks, 'DECLINED: Transacción rechazada');
    const noMail = await payerCustomer({ email: null });
    expectValidation(await walleta(noMail, '+573991111111', `nequi-n-${Date.now()}`), 'customer_id');
  });

  test('payment pages: a card and a Nequi attempt through the provider stay in progress until its event or poll, then pay the link', async () => {
    const payment = await createPayment(co, { email: 'cliente@example.com', amount: 70000 }, 'live');
    const shown = await getPage(h, `/pay/${payment.id}`);
    const token = tokenOf(shown.body);
    // The payer's browser tokenized the card at the provider: only its token comes to the page.
    const card = await postForm(h, `/pay/${payment.id}/card`, {
      token,
      card_token: await providerCardToken(fake, '4242424242424242'),
      holder_name: goodCard.holder_name,
      ...consentOf(shown.body),
    });
    assert.ok(card.status < 400, card.body.slice(0, 300));
    const [attempt] = await intentsOf(co, payment.id, 'live');
    assert.equal(attempt.status, 'in_progress', 'the provider answered PENDING');
    const tx = txOf(attempt.id);
    assert.equal(tx.payment_method?.type, 'CARD');
    assert.equal(tx.payment_source_id, null, 'a card paid once: its token, no payment source');
    assert.equal(tx.amount_in_cents, 7000000);
    await fake.finalize(tx.id);
    assert.equal((await paymentStatus(co, payment.id, 'live')).status, 'approved');
    assert.equal((await intentsOf(co, payment.id, 'live'))[0].status, 'approved');

    const second = await createPayment(co, { email: 'cliente@example.com', amount: 30000 }, 'live');
    const secondPage = (await getPage(h, `/pay/${second.id}`)).body;
    const nequi = await postForm(h, `/pay/${second.id}/walleta`, { token: tokenOf(secondPage), phone: '399 222 2222', ...consentOf(secondPage) });
    assert.ok(nequi.status < 400, nequi.body.slice(0, 300));
    const [push] = await intentsOf(co, second.id, 'live');
    assert.equal(push.status, 'in_progress');
    assert.deepEqual(txOf(push.id).payment_method, { type: 'NEQUI', phone_number: '3992222222' });
    await fake.finalize(txOf(push.id).id, { event: false });
    h.clock.advance(POLL_MS + 1);
    await runAttemptPolls();
    const [declined] = await intentsOf(co, second.id, 'live');
    assert.equal(declined.status, 'declined');
    assert.equal(declined.remarks, 'TRANSACTION_REJECTED', 'the provider’s reason, classified');
    // A payment without the payer's e-mail cannot go to this provider: the page says so, nothing is attempted.
    const noMail = await createPayment(co, { amount: 30000 }, 'live');
    const refused = await postForm(h, `/pay/${noMail.id}/card`, {
      token: await pageToken(h, noMail.id),
      card_token: await providerCardToken(fake, '4242424242424242'),
      holder_name: goodCard.holder_name,
      ...consentOf(shown.body),
    });
    assert.equal(refused.status, 422);
    assert.match(refused.body, /correo del pagador/);
    assert.equal((await intentsOf(co, noMail.id, 'live')).length, 0);
  });

  test('payment pages: PSE asks the payer’s identity, sends the payer to the provider’s bank page, and the event pays the link', async () => {
    const payment = await createPayment(co, { email: 'cliente@example.com', amount: 45000, allows: ['banklink'] }, 'live');
    const page = await send(h.app, { method: 'GET', url: `/pay/${payment.id}`, idem: false });
    assert.equal(page.status, 200);
    const listed = [...page.raw.matchAll(/<option value="([0-9a-f-]{36})"/g)].map((m) => m[1]).sort();
    assert.deepEqual(listed, [bankId('1001'), bankId('1007'), bankId('1051')].sort(), 'the banks are the provider’s PSE institutions');
    assert.match(page.raw, /name="document_number"/, 'the form asks for the payer’s document');
    assert.match(page.raw, /name="payer_phone"/, 'and the payer’s mobile, which the payment does not have');
    const token = await pageToken(h, payment.id);
    const identity = {
      full_name: 'Marta Rojas',
      person_type: 'natural',
      document_type: 'CC',
      document_number: '1.020.304.050',
      payer_phone: '300 123 4567',
      ...consentOf(page.raw),
    };
    const missing = await postForm(h, `/pay/${payment.id}/banklink`, { token, bank: BANCOLOMBIA, full_name: 'Marta Rojas' });
    assert.equal(missing.status, 422);
    assert.match(missing.body, /número de documento/);
    assert.equal((await intentsOf(co, payment.id, 'live')).length, 0, 'nothing attempted on bad input');
    const unlisted = await postForm(h, `/pay/${payment.id}/banklink`, { token, bank: bankId('1062'), ...identity });
    assert.equal(unlisted.status, 422, 'a bank the provider does not list');
    // The provider refuses a PSE transaction without the payer's mobile (57…): it went with the one typed.
    const sent = await postForm(h, `/pay/${payment.id}/banklink`, { token, bank: BANCOLOMBIA, ...identity });
    assert.equal(sent.status, 303, sent.body.slice(0, 300));
    const [attempt] = await intentsOf(co, payment.id, 'live');
    assert.equal(attempt.status, 'in_progress');
    const tx = txOf(attempt.id);
    assert.equal(sent.headers.location, fake.bankPageUrl(tx.id), 'the payer goes to the provider’s bank page');
    assert.equal(tx.amount_in_cents, 4500000);
    assert.equal(tx.payment_method!.user_legal_id, '1020304050');
    assert.equal(tx.payment_method!.financial_institution_code, '1007');
    const back = new URL((tx as { redirect_url?: string }).redirect_url!);
    assert.equal(back.pathname, `/pay/${payment.id}`);
    assert.equal(back.searchParams.get('intento'), attempt.id, 'the bank sends the payer back to the attempt');
    // The payer cannot abandon a session the bank still holds: money may still arrive.
    const abandon = await postForm(h, `/pay/${payment.id}/attempts/${attempt.id}`, { token, action: 'cancel' });
    assert.ok(abandon.status < 400);
    assert.equal((await intentsOf(co, payment.id, 'live'))[0].status, 'in_progress');
    await fake.finalize(tx.id);
    assert.equal((await paymentStatus(co, payment.id, 'live')).status, 'approved');
  });

  test('payment pages: an attempt the provider never received ends (TIMEOUT) an hour on instead of being polled forever', async () => {
    const payment = await createPayment(co, { email: 'cliente@example.com', amount: 20000 }, 'live');
    const shown = (await getPage(h, `/pay/${payment.id}`)).body;
    fake.failNext('create_transaction', '5xx');
    const res = await postForm(h, `/pay/${payment.id}/walleta`, { token: tokenOf(shown), phone: '399 111 1111', ...consentOf(shown) });
    assert.ok(res.status < 400, res.body.slice(0, 300));
    const [attempt] = await intentsOf(co, payment.id, 'live');
    assert.equal(attempt.status, 'in_progress', 'no answer is not a decline');
    assert.equal(txOf(attempt.id), undefined);
    h.clock.advance(POLL_MS + 1);
    await runAttemptPolls();
    assert.equal((await intentsOf(co, payment.id, 'live'))[0].status, 'in_progress', 'polled again while young');
    h.clock.advance(ATTEMPT_NEVER_REACHED_MS);
    await runAttemptPolls();
    const [ended] = await intentsOf(co, payment.id, 'live');
    assert.equal(ended.status, 'declined');
    assert.equal(ended.remarks, 'TIMEOUT');
  });

  /** What a charge left behind: its events (types and data fields) and its ledger transactions (kinds, accounts, amounts). */
  async function footprint(chargeId: string) {
    const db = h.runtime.deps.database.db;
    const events = (await chargeEvents(h, co, chargeId)).map((e) => `${e.type}(${Object.keys(e.data).sort().join(',')})`);
    const ledger = await db
      .selectFrom('ledger_transactions as t')
      .innerJoin('ledger_entries as e', 'e.transaction_id', 't.id')
      .innerJoin('ledger_accounts as a', 'a.id', 'e.account_id')
      .select(['t.kind', 'a.kind as account', 'e.amount'])
      .where('t.source_id', '=', chargeId)
      .orderBy('t.created_at')
      .orderBy('a.kind')
      .execute();
    assert.ok(events.some((e) => e.startsWith('charge.paid(')) && ledger.length >= 2, `${chargeId} was paid and booked`);
    return { events, ledger: ledger.map((l) => `${l.kind}:${l.account}:${l.amount}`) };
  }

  test('parity: a card, a PSE and a Nequi charge leave the same events and ledger in live (through the provider) as in the sandbox', async () => {
    const testCustomer = async () =>
      (
        await co.req({
          url: '/v1/customers',
          body: { first_name: 'Marta', last_name: 'Rojas', email: 'marta@example.com', document_type: 'CC', document_number: '1020304050' },
        })
      ).body.id as string;
    // Card.
    const testCard = await co.req({ url: '/v1/cards', body: cardBody(await testCustomer(), {}) });
    const sandboxCard = await co.req({
      url: '/v1/charges',
      body: { amount: 150000.5, title: 'Pedido 77', customer_id: testCard.body.customer_id, card_id: testCard.body.id },
    });
    assert.equal(sandboxCard.body.status, 'paid', sandboxCard.raw);
    const { customer, card } = await liveCard();
    const liveCharge = await charge(customer, card);
    await fake.finalize(txOf(liveCharge.id).id);
    assert.deepEqual(await footprint(liveCharge.id), await footprint(sandboxCard.body.id), 'card');
    // PSE: the sandbox bank approves; the provider's event approves.
    const body = { amount: 85000, bank_id: BANCOLOMBIA, redirect_url: 'https://tienda.example/gracias' };
    const sandboxPse = await co.req({ url: '/v1/charges/banklink', body: { ...body, customer_id: await testCustomer() } });
    assert.equal(sandboxPse.status, 200, sandboxPse.raw);
    const bankPage = await send(h.app, { method: 'GET', url: `/pay/${sandboxPse.body.id}`, idem: false });
    await postForm(h, `/pay/${sandboxPse.body.id}`, { token: tokenOf(bankPage.raw), action: 'approve' });
    assert.equal((await co.req({ url: `/v1/charges/${sandboxPse.body.id}` })).body.status, 'paid');
    const livePse = await banklink(await payerCustomer());
    await fake.finalize(txOf(livePse.body.id).id);
    assert.deepEqual(await footprint(livePse.body.id), await footprint(sandboxPse.body.id), 'PSE');
    // Nequi: the sandbox phone approves at confirm; the provider's event approves.
    const sandboxNequi = await co.req({
      url: '/v1/request-to-pay/walleta',
      body: { amount: 45000, customer_id: await testCustomer(), phone: '+573991111111', external_id: `parity-${Date.now()}` },
    });
    await co.req({ url: `/v1/request-to-pay/walleta/${sandboxNequi.body.id}/confirm`, body: {}, idem: false });
    const liveNequi = await walleta(await payerCustomer(), '+573991111111', `parity-live-${Date.now()}`);
    await fake.finalize(txOf(liveNequi.body.id).id);
    assert.deepEqual(await footprint(liveNequi.body.id), await footprint(sandboxNequi.body.id), 'Nequi');
  });

  async function runAttemptPolls() {
    const db = h.runtime.deps.database.db;
    const jobs = await db
      .selectFrom('jobs')
      .select(['id', 'payload'])
      .where('kind', '=', POLL_ATTEMPT_JOB)
      .where('run_at', '<=', h.clock.now())
      .execute();
    for (const job of jobs) {
      await runAttemptPoll(h.runtime.deps, job.payload);
      await db.deleteFrom('jobs').where('id', '=', job.id).execute();
    }
  }

  test('health: authenticated, last event, nothing open past the deadline', async () => {
    const res = await co.req({ url: '/v1/connectors/wompi/health', env: 'live' });
    assert.equal(res.status, 200, res.raw);
    assert.equal(res.body.authenticated, true);
    assert.ok(res.body.last_event_at);
    assert.equal(res.body.refused_events_24h, 1);
    const metrics = await send(h.app, { url: '/metrics' });
    assert.match(metrics.raw, /recaudo_connector_calls_total\{connector="wompi",operation="create_transaction",outcome="ok"\}/);
  });

  test('disconnected: live answers rail_not_configured again', async () => {
    const { customer, card } = await liveCard();
    const del = await co.req({ method: 'DELETE', url: '/v1/connectors/wompi', env: 'live' });
    assert.equal(del.status, 204);
    const res = await co.req({ url: '/v1/charges', env: 'live', body: { amount: 150000, title: 'Pedido 78', customer_id: customer, card_id: card } });
    expectError(res, 422, 'rail_not_configured');
  });

  test('the integrity signature is SHA-256 of reference, cents, currency and secret', () => {
    assert.equal(integritySignature('ch_1', 2490000n, 'COP', 's'), integritySignature('ch_1', 2490000, 'COP', 's'));
    assert.match(integritySignature('ch_1', 2490000n, 'COP', 's'), /^[0-9a-f]{64}$/);
  });
});
