import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHarness, expectError, type Company, type Harness } from './harness.ts';
import { installFakeLiveConnector } from './fakes/live-connectors.ts';
import { createCard, createCustomer } from './support/cards.ts';
import { getPage, intentsOf, pageToken, postForm, createPayment } from './support/pages.ts';
import { SANDBOX_CARDS, WALLET_APPROVING_PHONE, WALLET_DECLINING_PHONE } from '../src/rails/sandbox-table.ts';
import { bankId } from '../src/modules/banks/catalogue.ts';

/**
 * PRODUCT.md "Live money: connectors, never a simulation" (issue "Rails in one place"): with a live
 * key and no connector for the rail, every operation that would move or promise money answers 422
 * 10900 rail_not_configured naming the rail, and leaves no row and no event behind; test keys keep
 * the sandbox. And the sandbox table gives the same outcome from the API and from the payer pages.
 */

const BANCOLOMBIA = bankId('1007');

describe('live keys without a connector', () => {
  let h: Harness;
  let co: Company;
  let customer: string;
  let card: string;

  before(async () => {
    h = await createHarness();
    co = await h.company('Solo Producción SAS');
    customer = await createCustomer(co, 'live');
    card = (await createCard(co, customer, {}, 'live')).id;
  });
  after(() => h.close());

  /** What a refusal must leave untouched: the environment's rows that money operations write, and its events. */
  async function footprint() {
    const db = h.runtime.deps.database.db;
    const count = async (table: 'charges' | 'accounts' | 'events' | 'payment_intents' | 'ledger_entries') => {
      const row = await db
        .selectFrom(table)
        .select((eb) => eb.fn.countAll<string>().as('n'))
        .where('company_id', '=', co.company.id)
        .where('environment', '=', 'live')
        .executeTakeFirstOrThrow();
      return Number(row.n);
    };
    return {
      charges: await count('charges'),
      accounts: await count('accounts'),
      events: await count('events'),
      intents: await count('payment_intents'),
      ledger: await count('ledger_entries'),
    };
  }

  const operations: { rail: string; url: string; body: () => Record<string, unknown> }[] = [
    { rail: 'card', url: '/v1/charges', body: () => ({ amount: 150000, title: 'Cuota', customer_id: customer, card_id: card }) },
    {
      rail: 'account_debit',
      url: '/v1/charges',
      body: () => ({ amount: 150000, title: 'Cuota', customer_id: customer, account_id: '00000000-0000-4000-8000-000000000001' }),
    },
    {
      rail: 'banklink',
      url: '/v1/charges/banklink',
      body: () => ({ amount: 50000, customer_id: customer, bank_id: BANCOLOMBIA, redirect_url: 'https://tienda.example/vuelta' }),
    },
    { rail: 'rtkey', url: '/v1/charges/rtkey', body: () => ({ amount: 5000, customer_id: customer }) },
    {
      rail: 'walleta',
      url: '/v1/request-to-pay/walleta',
      body: () => ({ amount: 25000, customer_id: customer, phone: WALLET_APPROVING_PHONE, external_id: 'orden-1' }),
    },
    {
      rail: 'walletb',
      url: '/v1/request-to-pay/walletb',
      body: () => ({ amount: 25000, customer_id: customer, phone: WALLET_APPROVING_PHONE, document: '1020304050', document_type: 'CC' }),
    },
    {
      rail: 'enrollment',
      url: '/v1/accounts',
      body: () => ({ subtype: 'SAVINGS', bank_id: BANCOLOMBIA, account_number: '1234567890', authorization: true, customer_id: customer }),
    },
  ];

  for (const op of operations) {
    test(`${op.url} (${op.rail}) → 422 rail_not_configured naming the rail; no row, no event; a retry of the key answers the same`, async () => {
      const before = await footprint();
      const key = `live-${op.rail}`;
      const res = await co.req({ url: op.url, env: 'live', body: op.body(), idem: key });
      expectError(res, 422, 'rail_not_configured', 10900);
      assert.equal(res.body.rail, op.rail);
      assert.match(res.body.message, new RegExp(op.rail));
      assert.deepEqual(await footprint(), before, 'nothing written');
      const again = await co.req({ url: op.url, env: 'live', body: op.body(), idem: key });
      expectError(again, 422, 'rail_not_configured', 10900);
      assert.deepEqual(await footprint(), before);
    });
  }

  test('the lists show nothing was created, and the test key still gets the sandbox', async () => {
    assert.equal((await co.req({ url: '/v1/charges', env: 'live' })).body.total, 0);
    assert.equal((await co.req({ url: '/v1/accounts', env: 'live' })).body.total, 0);
    const balance = await co.req({ url: '/v1/balances', env: 'live' });
    assert.equal(balance.status, 200);
    for (const b of balance.body.data ?? []) assert.equal(Number(b.available), 0, 'no live money appeared');
    // The same card charge with a test key is paid by the sandbox.
    const testCustomer = await createCustomer(co);
    const testCard = (await createCard(co, testCustomer)).id;
    const paid = await co.req({ url: '/v1/charges', body: { amount: 150000, title: 'Cuota', customer_id: testCustomer, card_id: testCard } });
    assert.equal(paid.status, 200, paid.raw);
    assert.equal(paid.body.status, 'paid');
  });

  test('an account without authorization (no enrollment) is still created in live; instant-key lookup is refused', async () => {
    const plain = await co.req({
      url: '/v1/accounts',
      env: 'live',
      body: { subtype: 'SAVINGS', bank_id: BANCOLOMBIA, account_number: '1234567890', authorization: false, customer_id: customer },
    });
    assert.equal(plain.status, 200, plain.raw);
    assert.deepEqual([plain.body.status, plain.body.debit_authorized], ['ACTIVE', false], 'a payout destination, no connector needed');
    const lookup = await co.req({ url: '/v1/accounts/rtkey/@ana.gomez', env: 'live' });
    expectError(lookup, 422, 'rail_not_configured', 10900);
    assert.equal(lookup.body.rail, 'key_directory');
    assert.equal((await co.req({ url: '/v1/accounts/rtkey/@ana.gomez' })).status, 200, 'the test key reads the sandbox directory');
  });

  test('the code is in the registry and the OpenAPI document', async () => {
    const doc = await h.app.inject({ method: 'GET', url: '/v1/openapi.json' });
    assert.match(doc.body, /rail_not_configured/);
    const { Errors } = await import('../src/platform/errors/registry.ts');
    assert.deepEqual(
      { ...Errors.rail_not_configured },
      { code: 10900, codeName: 'rail_not_configured', status: 422, message: Errors.rail_not_configured.message },
    );
  });

  test('a connector installed for the company serves its live key (and only that company)', async () => {
    const other = await h.company('Otra SAS');
    const otherCustomer = await createCustomer(other, 'live');
    const otherCard = (await createCard(other, otherCustomer, {}, 'live')).id;
    const remove = installFakeLiveConnector(h.runtime.deps, { companyId: co.company.id, rails: ['card'] });
    try {
      const paid = await co.req({ url: '/v1/charges', env: 'live', body: { amount: 150000, title: 'Cuota', customer_id: customer, card_id: card } });
      assert.equal(paid.status, 200, paid.raw);
      assert.equal(paid.body.status, 'paid');
      assert.equal(paid.body.is_test, false);
      const refused = await other.req({
        url: '/v1/charges',
        env: 'live',
        body: { amount: 150000, title: 'Cuota', customer_id: otherCustomer, card_id: otherCard },
      });
      expectError(refused, 422, 'rail_not_configured', 10900);
    } finally {
      remove();
    }
    expectError(
      await co.req({ url: '/v1/charges', env: 'live', body: { amount: 150000, title: 'Cuota', customer_id: customer, card_id: card } }),
      422,
      'rail_not_configured',
      10900,
    );
  });
});

describe('one sandbox table: the API and the payer pages agree', () => {
  let h: Harness;
  let co: Company;
  let customer: string;

  before(async () => {
    h = await createHarness();
    co = await h.company('Tabla Única SAS');
    customer = await createCustomer(co);
  });
  after(() => h.close());

  const outcomeOf = (status: string, remarks: string | null) => (status === 'paid' || status === 'approved' ? 'approved' : `declined:${remarks}`);
  const year = String(new Date().getUTCFullYear() + 3);

  for (const [pan, expected] of [...Object.entries(SANDBOX_CARDS), ['5555555555554444', 'approved']]) {
    test(`card ${pan}: ${expected} through POST /v1/charges and on the payment page`, async () => {
      const card = await co.req({
        url: '/v1/cards',
        body: {
          card_number: pan,
          expiration_month: '12',
          expiration_year: year,
          cvv: '123',
          holder_name: 'Ana Gómez',
          customer_id: customer,
          authorization: true,
        },
      });
      assert.equal(card.status, 200, card.raw);
      const charge = await co.req({ url: '/v1/charges', body: { amount: 150000, title: 'Cuota', customer_id: customer, card_id: card.body.id } });
      assert.equal(charge.status, 200, charge.raw);
      const api = outcomeOf(charge.body.status, charge.body.remarks);

      const payment = await createPayment(co, { allows: ['card'] });
      const res = await postForm(h, `/pay/${payment.id}/card`, {
        card_number: pan,
        exp_month: '12',
        exp_year: year,
        cvv: '123',
        holder_name: 'Ana Gómez',
        token: await pageToken(h, payment.id),
      });
      assert.equal(res.status, 303, res.body.slice(0, 300));
      const [intent] = await intentsOf(co, payment.id);
      const page = outcomeOf(intent.status, intent.remarks);

      assert.equal(api, expected === 'approved' ? 'approved' : `declined:${expected}`);
      assert.equal(page, api);
    });
  }

  for (const [phone, expected] of [
    [WALLET_APPROVING_PHONE, 'approved'],
    [WALLET_DECLINING_PHONE, 'declined:TRANSACTION_REJECTED'],
    ['+573001234567', 'approved'],
  ]) {
    test(`walleta phone ${phone}: ${expected} through the API and on the payment page`, async () => {
      const request = await co.req({
        url: '/v1/request-to-pay/walleta',
        body: { amount: 25000, customer_id: customer, phone, external_id: `tabla-${phone}` },
      });
      assert.equal(request.status, 200, request.raw);
      const confirmed = await co.req({ url: `/v1/request-to-pay/walleta/${request.body.id}/confirm`, body: {}, idem: false });
      const api = outcomeOf(confirmed.body.status, confirmed.body.remarks);

      const payment = await createPayment(co, { allows: ['walleta'] });
      const res = await postForm(h, `/pay/${payment.id}/walleta`, { phone, token: await pageToken(h, payment.id) });
      assert.equal(res.status, 303, res.body.slice(0, 300));
      const [intent] = await intentsOf(co, payment.id);
      assert.equal(api, expected);
      assert.equal(outcomeOf(intent.status, intent.remarks), api);
      assert.ok((await getPage(h, `/pay/${payment.id}`)).status === 200);
    });
  }

  for (const [amount, expected] of [
    [25013, 'refused'],
    [25000, 'registered'],
  ] as const) {
    test(`rtkey amount ${amount}: the QR is ${expected} through the API and on the payment page`, async () => {
      const charge = await co.req({ url: '/v1/charges/rtkey', body: { amount, customer_id: customer } });
      const api = charge.status === 200 ? 'registered' : charge.body.code_name === 'qr_generation_failed' ? 'refused' : `unexpected ${charge.raw}`;

      const payment = await createPayment(co, { allows: ['rtkey'], amount });
      const res = await postForm(h, `/pay/${payment.id}/rtkey`, { token: await pageToken(h, payment.id) });
      assert.equal(res.status, 303, res.body.slice(0, 300));
      const [intent] = await intentsOf(co, payment.id);
      const page = intent.status === 'in_progress' ? 'registered' : intent.status === 'declined' ? 'refused' : intent.status;
      assert.equal(api, expected);
      assert.equal(page, api);
      if (expected === 'refused') assert.equal(intent.remarks, 'TRANSACTION_REJECTED');
      else assert.match(String(res.headers.location), new RegExp(`/pay/${payment.id}/attempts/${intent.id}$`));
    });
  }
});
