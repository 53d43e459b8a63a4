import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHarness, expectValidation, type Company, type Harness } from '../../../test/harness.ts';
import { getPage, postForm, tokenOf } from '../../../test/support/pages.ts';
import { bankId } from '../banks/catalogue.ts';

/**
 * `allows` as clients written for OnePay send it (docs/payments.md "allows"): the object of
 * booleans on payments, plans, subscriptions and connect links; the response is always our array.
 */
const TICKETING_ALLOWS = { cards: true, accounts: false, pse: true, breb: true };

describe('allows as an object of booleans', () => {
  let h: Harness;
  let co: Company;
  let customerId: string;
  before(async () => {
    h = await createHarness();
    co = await h.company('Boletería del Caribe SAS');
    customerId = (await co.req({ url: '/v1/customers', body: { first_name: 'Ana', email: 'ana@example.co' } })).body.id;
  });
  after(() => h.close());

  test("payments: the ticketing client's exact body is taken; the answer and the page keep our array", async () => {
    const body = { title: 'Boletas Festival 2026', amount: 250000, allows: TICKETING_ALLOWS };
    const res = await co.req({ url: '/v1/payments', body });
    assert.equal(res.status, 200, res.raw);
    assert.deepEqual(res.body.allows, ['card', 'banklink', 'rtkey']);
    assert.deepEqual((await co.req({ url: `/v1/payments/${res.body.id}` })).body.allows, ['card', 'banklink', 'rtkey']);
    const page = await getPage(h, new URL(res.body.payment_link).pathname);
    assert.equal(page.status, 200);
    for (const path of ['card', 'banklink', 'rtkey']) assert.match(page.body, new RegExp(`/${path}"`), `the page offers ${path}`);
    for (const path of ['walleta', 'walletb']) assert.doesNotMatch(page.body, new RegExp(`/${path}"`), `the page does not offer ${path}`);
    // The array form keeps working.
    const arr = await co.req({ url: '/v1/payments', body: { ...body, allows: ['walletb', 'card'] } });
    assert.deepEqual(arr.body.allows, ['card', 'walletb']);
  });

  test('payments: every brand key maps; unknown keys are ignored; false and null enable nothing', async () => {
    const cases: [Record<string, unknown>, string[]][] = [
      [{ cards: true }, ['card']],
      [{ card_extra: true }, ['card']],
      [{ pse: true }, ['banklink']],
      [{ pse_debit: true }, ['banklink']],
      [{ accounts: true }, ['banklink']],
      [{ breb: true }, ['rtkey']],
      [{ realtime: true }, ['rtkey']],
      [{ transfiya: true }, ['rtkey']],
      [{ nequi: true }, ['walleta']],
      [{ daviplata: true }, ['walletb']],
      [{ wallets: true }, ['walleta', 'walletb']],
      [{ walletb: true, card: true }, ['card', 'walletb']],
      [{ cards: true, full_extra: true, bitcoin: true, pse: false, nequi: null, later: 'x' }, ['card']],
      [
        { cards: true, accounts: true, wallets: true, card_extra: true, realtime: true, pse: true, full_extra: false, pse_debit: true, breb: true },
        ['card', 'banklink', 'rtkey', 'walleta', 'walletb'],
      ],
    ];
    for (const [allows, expected] of cases) {
      const res = await co.req({ url: '/v1/payments', body: { title: 'Boletas', amount: 1000, allows } });
      assert.equal(res.status, 200, `${JSON.stringify(allows)}: ${res.raw}`);
      assert.deepEqual(res.body.allows, expected, JSON.stringify(allows));
    }
  });

  test('payments: refused shapes are 422 and create nothing', async () => {
    const before = (await co.req({ url: '/v1/payments?per_page=100' })).body.total;
    expectValidation(await co.req({ url: '/v1/payments', body: { title: 'Boletas', amount: 1000, allows: {} } }), 'allows');
    expectValidation(await co.req({ url: '/v1/payments', body: { title: 'Boletas', amount: 1000, allows: { cards: false, pse: false } } }), 'allows');
    expectValidation(await co.req({ url: '/v1/payments', body: { title: 'Boletas', amount: 1000, allows: { unknown: true } } }), 'allows');
    expectValidation(await co.req({ url: '/v1/payments', body: { title: 'Boletas', amount: 1000, allows: { cards: 'yes' } } }), 'allows.cards');
    expectValidation(await co.req({ url: '/v1/payments', body: { title: 'Boletas', amount: 1000, allows: { cards: 1 } } }), 'allows.cards');
    expectValidation(await co.req({ url: '/v1/payments', body: { title: 'Boletas', amount: 1000, allows: 'cards' } }), 'allows');
    expectValidation(await co.req({ url: '/v1/payments', body: { title: 'Boletas', amount: 1000, allows: [] } }), 'allows');
    expectValidation(await co.req({ url: '/v1/payments', body: { title: 'Boletas', amount: 1000, allows: ['cards'] } }), 'allows.0');
    // options.rtkey still needs rtkey among the methods, whichever form enabled them.
    expectValidation(
      await co.req({
        url: '/v1/payments',
        body: { title: 'Boletas', amount: 1000, allows: { cards: true }, options: { rtkey: { expires_in: 30 } } },
      }),
      'options.rtkey',
    );
    const ok = await co.req({
      url: '/v1/payments',
      body: { title: 'Boletas', amount: 1000, allows: { breb: true }, options: { rtkey: { expires_in: 30 } } },
    });
    assert.equal(ok.status, 200, ok.raw);
    assert.equal((await co.req({ url: '/v1/payments?per_page=100' })).body.total, before + 1);
  });

  test('plans and subscriptions: the object on create and update; answered as the array', async () => {
    const plan = await co.req({
      url: '/v1/plans',
      body: { name: 'Abono anual', amount_in_cents: 10_000_000, cicle_frequency: 'monthly', allows: TICKETING_ALLOWS },
    });
    assert.equal(plan.status, 200, plan.raw);
    assert.deepEqual(plan.body.allows, ['card', 'banklink', 'rtkey']);
    const sub = await co.req({
      url: '/v1/subscriptions',
      body: { customer_id: customerId, plan_id: plan.body.id, allows: { nequi: true, daviplata: true } },
    });
    assert.equal(sub.status, 200, sub.raw);
    assert.deepEqual(sub.body.allows, ['walleta', 'walletb']);
    const upd = await co.req({ method: 'PUT', url: `/v1/subscriptions/${sub.body.id}`, body: { allows: { cards: true, wallets: false } } });
    assert.equal(upd.status, 200, upd.raw);
    assert.deepEqual(upd.body.allows, ['card']);
    expectValidation(await co.req({ method: 'PUT', url: `/v1/subscriptions/${sub.body.id}`, body: { allows: { wallets: false } } }), 'allows');
    assert.deepEqual((await co.req({ url: `/v1/subscriptions/${sub.body.id}` })).body.allows, ['card'], 'a refused update changes nothing');
  });

  test('connect links: allows (array or object) chooses what the page offers; a form it does not offer enrolls nothing', async () => {
    const all = await co.req({ url: '/v1/connect-links', body: { customer_id: customerId, single_use: true } });
    assert.deepEqual(all.body.allows, ['card', 'banklink', 'walleta', 'walletb'], 'default: everything the page enrolls');
    const res = await co.req({
      url: '/v1/connect-links',
      body: { customer_id: customerId, single_use: true, allows: { cards: true, accounts: false, nequi: true, breb: true } },
    });
    assert.equal(res.status, 200, res.raw);
    assert.deepEqual(res.body.allows, ['card', 'walleta'], 'breb enrolls nothing on a connect link: ignored');
    assert.deepEqual((await co.req({ url: `/v1/connect-links/${res.body.id}` })).body.allows, ['card', 'walleta']);
    expectValidation(
      await co.req({ url: '/v1/connect-links', body: { customer_id: customerId, single_use: true, allows: { breb: true } } }),
      'allows',
    );
    expectValidation(await co.req({ url: '/v1/connect-links', body: { customer_id: customerId, single_use: true, allows: ['rtkey'] } }), 'allows.0');

    const path = new URL(res.body.url).pathname;
    const page = await getPage(h, path);
    assert.equal(page.status, 200);
    assert.match(page.body, /id="metodo-tarjeta"/);
    assert.doesNotMatch(page.body, /id="metodo-cuenta"/, 'no bank-account form');
    const wallets = /<select id="wallet_bank"[\s\S]*?<\/select>/.exec(page.body)![0];
    assert.match(wallets, /Nequi/);
    assert.doesNotMatch(wallets, /Daviplata/);
    const token = tokenOf(page.body);
    const bankAccount = await postForm(h, `${path}/cuenta`, {
      token,
      bank: bankId('1007'),
      account_type: 'SAVINGS',
      account_number: '1234567890',
      acepto_cuenta: 'si',
    });
    assert.equal(bankAccount.status, 422);
    const daviplata = await postForm(h, `${path}/billetera`, {
      token,
      wallet_bank: bankId('1551'),
      wallet_phone: '3001234567',
      acepto_billetera: 'si',
    });
    assert.equal(daviplata.status, 422);
    assert.deepEqual((await co.req({ url: `/v1/customers/${customerId}/accounts` })).body.data, [], 'nothing enrolled');
    assert.equal((await co.req({ url: `/v1/connect-links/${res.body.id}` })).body.status, 'active');

    const cardOnly = await co.req({ url: '/v1/connect-links', body: { customer_id: customerId, single_use: true, allows: ['banklink'] } });
    const cardPath = new URL(cardOnly.body.url).pathname;
    const cardPage = await getPage(h, cardPath);
    assert.doesNotMatch(cardPage.body, /id="metodo-tarjeta"/);
    assert.match(cardPage.body, /id="metodo-cuenta"/);
    assert.doesNotMatch(cardPage.body, /id="metodo-billetera"/);
    const year = String(new Date().getUTCFullYear() + 3);
    const card = await postForm(h, `${cardPath}/tarjeta`, {
      token: tokenOf(cardPage.body),
      card_number: '4242424242424242',
      exp_month: '12',
      exp_year: year,
      cvv: '123',
      holder_name: 'Ana Gómez',
      acepto_tarjeta: 'si',
    });
    assert.equal(card.status, 422);
    assert.deepEqual((await co.req({ url: `/v1/customers/${customerId}/cards` })).body.data, [], 'no card saved');
  });
});
