import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHarness, expectError, expectValidation, send, type Company, type Harness } from '../../../test/harness.ts';
import { expectScoped } from '../../../test/auth-matrix.ts';
import { detectBrand, luhnValid } from './card-data.ts';
import { cardBody, createCard, createCustomer, VISA_OK } from '../../../test/support/cards.ts';

const YEAR = new Date().getUTCFullYear();

describe('cards', () => {
  let h: Harness;
  let co: Company;
  let other: Company;
  let customer: string;
  before(async () => {
    h = await createHarness();
    co = await h.company('Tarjetas SAS');
    other = await h.company('Otra SAS');
    customer = await createCustomer(co);
  });
  after(() => h.close());

  test('POST /cards keeps brand, last four, expiry and holder; never the number or the code', async () => {
    const res = await co.req({
      url: '/v1/cards',
      body: cardBody(customer, { card_number: '4242 4242-4242 4242', expiration_month: 7, expiration_year: 30, cvv: 987 }),
    });
    assert.equal(res.status, 200, res.raw);
    const card = res.body;
    assert.match(card.id, /^card_[0-9a-z]{26}$/);
    assert.equal(card.brand, 'visa');
    assert.equal(card.last4, '4242');
    assert.equal(card.exp_month, 7);
    assert.equal(card.exp_year, 2030);
    assert.equal(card.holder_name, 'Ana Gómez');
    assert.equal(card.customer_id, customer);
    assert.equal(card.authorization, true);
    assert.equal(card.expired, false);
    assert.equal(card.is_test, true);
    assert.match(card.fingerprint, /^[0-9a-f]{32}$/);
    assert.ok(!res.raw.includes(VISA_OK) && !res.raw.includes('987'), 'no card number or code in the response');
    // The same number gives the same fingerprint within the company.
    const again = await createCard(co, customer, { cvv: '123' });
    assert.equal(again.fingerprint, card.fingerprint);
    assert.notEqual(again.id, card.id);
    // authorization defaults to false.
    const { authorization: _, ...noAuth } = cardBody(customer);
    assert.equal((await co.req({ url: '/v1/cards', body: noAuth })).body.authorization, false);
  });

  test('brand detection', async () => {
    const cards: [string, string, string][] = [
      ['5555555555554444', 'mastercard', '123'],
      ['2223003122003222', 'mastercard', '123'],
      ['378282246310005', 'amex', '1234'],
      ['36227206271667', 'diners', '123'],
      ['6011111111111117', 'discover', '123'],
      ['3530111333300000', 'jcb', '123'],
      ['6200000000000005', 'unionpay', '123'],
      ['4000056655665556', 'visa', '123'],
    ];
    for (const [number, brand, cvv] of cards) {
      const res = await co.req({ url: '/v1/cards', body: cardBody(customer, { card_number: number, cvv }) });
      assert.equal(res.status, 200, `${number}: ${res.raw}`);
      assert.equal(res.body.brand, brand, number);
      assert.equal(res.body.last4, number.slice(-4));
    }
    assert.equal(detectBrand('9999999999999995'), 'unknown');
    assert.ok(luhnValid('79927398713'));
    assert.ok(!luhnValid('79927398710'));
  });

  test('10104 card_number: Luhn, digits, length by brand', async () => {
    for (const number of [
      '4242424242424241',
      '4242abcd42424242',
      '424242',
      '42424242424242424242',
      '',
      '378282246310005 9'.replace(' ', ''),
      '4242424242424',
    ]) {
      const res = await co.req({ url: '/v1/cards', body: cardBody(customer, { card_number: number }) });
      expectError(res, 422, 'card_number', 10104);
      assert.ok(res.body.errors.card_number, res.raw);
      assert.ok(!res.raw.includes(number) || number === '', 'the number is not echoed');
    }
    // Missing or of the wrong type: a plain validation error.
    const { card_number: _, ...missing } = cardBody(customer);
    expectValidation(await co.req({ url: '/v1/cards', body: missing }), 'card_number');
    expectValidation(await co.req({ url: '/v1/cards', body: cardBody(customer, { card_number: 4242424242424242 }) }), 'card_number');
  });

  test('10102 card_cvv: 3 digits, 4 for American Express; cvv or ccv', async () => {
    for (const cvv of ['12', '1234', 'abc', '', 12]) {
      expectError(await co.req({ url: '/v1/cards', body: cardBody(customer, { cvv }) }), 422, 'card_cvv', 10102);
    }
    expectError(await co.req({ url: '/v1/cards', body: cardBody(customer, { card_number: '378282246310005', cvv: '123' }) }), 422, 'card_cvv', 10102);
    const { cvv: _, ...withoutCvv } = cardBody(customer);
    assert.equal((await co.req({ url: '/v1/cards', body: { ...withoutCvv, ccv: '321' } })).status, 200, 'ccv is the same field');
    const bad = await co.req({ url: '/v1/cards', body: { ...withoutCvv, ccv: '1' } });
    expectError(bad, 422, 'card_cvv', 10102);
    assert.ok(bad.body.errors.ccv);
    expectValidation(await co.req({ url: '/v1/cards', body: withoutCvv }), 'cvv');
  });

  test('10122 card_expired: a real month, not in the past, at most 20 years ahead', async () => {
    const cases: Record<string, unknown>[] = [
      { expiration_month: 13 },
      { expiration_month: '0' },
      { expiration_month: 'ab' },
      { expiration_year: YEAR - 1 },
      { expiration_year: String(YEAR - 1).slice(2) },
      { expiration_year: YEAR + 25 },
      { expiration_year: '20x0' },
      { expiration_year: 123 },
      { expiration_month: 1.5 },
    ];
    for (const c of cases) {
      const res = await co.req({ url: '/v1/cards', body: cardBody(customer, c) });
      if (typeof c.expiration_month === 'number' && !Number.isInteger(c.expiration_month)) expectValidation(res, 'expiration_month');
      else expectError(res, 422, 'card_expired', 10122);
    }
    // This month is still valid (cards are valid through the end of their month, Bogotá time).
    const bogota = new Date(Date.now() - 5 * 3_600_000);
    const res = await co.req({
      url: '/v1/cards',
      body: cardBody(customer, { expiration_month: bogota.getUTCMonth() + 1, expiration_year: bogota.getUTCFullYear() }),
    });
    assert.equal(res.status, 200, res.raw);
  });

  test('the first problem answers: number, then code, then expiry', async () => {
    expectError(
      await co.req({ url: '/v1/cards', body: cardBody(customer, { card_number: '4242424242424241', cvv: '1', expiration_month: 13 }) }),
      422,
      'card_number',
      10104,
    );
    expectError(await co.req({ url: '/v1/cards', body: cardBody(customer, { cvv: '1', expiration_month: 13 }) }), 422, 'card_cvv', 10102);
  });

  test('customer_id must be a customer of the company in the environment; holder_name is required', async () => {
    expectValidation(await co.req({ url: '/v1/cards', body: cardBody('01a1ffd1-03aa-73c7-a9ea-9767dccc73e5') }), 'customer_id');
    expectValidation(await co.req({ url: '/v1/cards', body: cardBody('nope') }), 'customer_id');
    const otherCustomer = await createCustomer(other);
    expectValidation(await co.req({ url: '/v1/cards', body: cardBody(otherCustomer) }), 'customer_id');
    const liveCustomer = await createCustomer(co, 'live');
    expectValidation(await co.req({ url: '/v1/cards', body: cardBody(liveCustomer) }), 'customer_id');
    expectValidation(await co.req({ url: '/v1/cards', body: cardBody(customer, { holder_name: 'A' }) }), 'holder_name');
  });

  test('GET /cards (filter customer_id), GET /cards/{id}, DELETE, GET /customers/{id}/cards', async () => {
    const c1 = await createCustomer(co, 'test', 'Luis');
    const c2 = await createCustomer(co, 'test', 'Marta');
    const a = await createCard(co, c1);
    const b = await createCard(co, c1, { card_number: '5555555555554444' });
    const c = await createCard(co, c2);
    const list = await co.req({ url: `/v1/cards?filter[customer_id]=${c1}` });
    assert.equal(list.status, 200, list.raw);
    assert.deepEqual(
      list.body.data.map((x: { id: string }) => x.id),
      [b.id, a.id],
      'newest first',
    );
    assert.equal((await co.req({ url: `/v1/cards?customer_id=${c2}` })).body.data[0].id, c.id, 'plain customer_id is an alias');
    assert.deepEqual(
      (await co.req({ url: `/v1/cards?filter[customer_id]=${c1}&sort=created_at` })).body.data.map((x: { id: string }) => x.id),
      [a.id, b.id],
    );
    expectValidation(await co.req({ url: '/v1/cards?filter[customer_id]=nope' }), 'filter[customer_id]');
    expectError(await co.req({ url: '/v1/cards?filter[brand]=visa' }), 400);
    const all = await co.req({ url: '/v1/cards?per_page=100' });
    assert.ok(all.body.data.some((x: { id: string }) => x.id === c.id));
    assert.ok(!all.raw.includes(VISA_OK));

    const got = await co.req({ url: `/v1/cards/${a.id}` });
    assert.equal(got.status, 200);
    assert.deepEqual(got.body, a);
    expectError(await co.req({ url: '/v1/cards/card_nope' }), 404, 'record_not_found', 10002);
    expectError(await co.req({ url: '/v1/cards/card_01m7zx20s70qez4k542m909n4r' }), 404, 'record_not_found', 10002);

    const related = await co.req({ url: `/v1/customers/${c1}/cards` });
    assert.equal(related.status, 200, related.raw);
    assert.deepEqual(
      related.body.data.map((x: { id: string }) => x.id),
      [b.id, a.id],
    );
    expectError(await co.req({ url: '/v1/customers/01a1ffd1-03aa-73c7-a9ea-9767dccc73e5/cards' }), 404, 'record_not_found', 10002);

    const del = await co.req({ method: 'DELETE', url: `/v1/cards/${a.id}` });
    assert.equal(del.status, 204, del.raw);
    assert.equal(del.raw, '');
    expectError(await co.req({ url: `/v1/cards/${a.id}` }), 404, 'record_not_found', 10002);
    expectError(await co.req({ method: 'DELETE', url: `/v1/cards/${a.id}` }), 404, 'record_not_found', 10002);
    assert.deepEqual(
      (await co.req({ url: `/v1/customers/${c1}/cards` })).body.data.map((x: { id: string }) => x.id),
      [b.id],
    );
    expectError(await send(h.app, { method: 'DELETE', url: `/v1/cards/${b.id}`, key: null }), 401, 'unauthenticated', 10000);
  });

  test('cards are scoped to the company and the environment', async () => {
    const card = await createCard(co, customer);
    await expectScoped(co, other, { url: `/v1/cards/${card.id}` });
    await expectScoped(co, other, { url: `/v1/customers/${customer}/cards` });
    await expectScoped(co, other, { method: 'DELETE', url: `/v1/cards/${card.id}` });
    assert.equal((await co.req({ url: `/v1/cards/${card.id}` })).status, 200, 'still there');
    assert.equal((await other.req({ url: `/v1/cards?filter[customer_id]=${customer}` })).body.total, 0);
    assert.equal((await co.req({ url: `/v1/cards?filter[customer_id]=${customer}`, env: 'live' })).body.total, 0);
  });

  test('a live key saves live cards', async () => {
    const liveCustomer = await createCustomer(co, 'live');
    const card = await createCard(co, liveCustomer, {}, 'live');
    assert.equal(card.is_test, false);
    assert.equal((await co.req({ url: `/v1/cards/${card.id}`, env: 'live' })).status, 200);
  });

  test('idempotency: a replay gives the same card; the stored fingerprint is a keyed hash', async () => {
    const first = await co.req({ url: '/v1/cards', body: cardBody(customer), idem: 'card-idem-1' });
    const replay = await co.req({ url: '/v1/cards', body: cardBody(customer), idem: 'card-idem-1' });
    assert.equal(replay.raw, first.raw);
    assert.equal(replay.headers['idempotent-replayed'], 'true');
    expectError(
      await co.req({ url: '/v1/cards', body: cardBody(customer, { card_number: '5555555555554444' }), idem: 'card-idem-1' }),
      409,
      'idempotency_error',
      10003,
    );
    const { createHash } = await import('node:crypto');
    const row = await h.runtime.deps.database.db
      .selectFrom('idempotency_keys')
      .select('fingerprint')
      .where('company_id', '=', co.company.id)
      .where('key', '=', 'card-idem-1')
      .executeTakeFirstOrThrow();
    const plain = createHash('sha256')
      .update('POST /v1/cards\n')
      .update(JSON.stringify(cardBody(customer)))
      .digest('hex');
    assert.notEqual(row.fingerprint, plain, 'not a plain hash of the body (which would let the number be brute-forced)');
  });
});

describe('publishable keys and card tokens', () => {
  let h: Harness;
  let co: Company;
  let other: Company;
  let customer: string;
  const tokenBody = () => {
    const { customer_id: _c, authorization: _a, ...card } = cardBody('x');
    return card;
  };
  const tokenize = (c: Company, env: 'test' | 'live' = 'test', body: Record<string, unknown> = tokenBody()) =>
    c.req({ url: '/v1/tokens', body, key: c.publishable_keys[env] });

  before(async () => {
    h = await createHarness();
    co = await h.company('Tokens SAS');
    other = await h.company('Otra SAS');
    customer = await createCustomer(co);
  });
  after(() => h.close());

  test('POST /tokens with the publishable key → a single-use token; POST /cards/tokenized → a card', async () => {
    const res = await tokenize(co);
    assert.equal(res.status, 200, res.raw);
    assert.match(res.body.id, /^tok_[0-9a-z]{26}$/);
    assert.deepEqual(res.body.card, { brand: 'visa', last4: '4242', exp_month: 12, exp_year: YEAR + 3, holder_name: 'Ana Gómez' });
    assert.equal(res.body.used, false);
    assert.equal(res.body.is_test, true);
    assert.equal(new Date(res.body.expires_at).getTime() - new Date(res.body.created_at).getTime(), 10 * 60_000);
    assert.ok(!res.raw.includes(VISA_OK));

    const card = await co.req({ url: '/v1/cards/tokenized', body: { card_token: res.body.id, customer_id: customer, authorization: true } });
    assert.equal(card.status, 200, card.raw);
    assert.equal(card.body.brand, 'visa');
    assert.equal(card.body.last4, '4242');
    assert.equal(card.body.authorization, true);
    assert.equal(card.body.customer_id, customer);
    const direct = await createCard(co, customer);
    assert.equal(card.body.fingerprint, direct.fingerprint, 'same card, same fingerprint');

    const again = await co.req({ url: '/v1/cards/tokenized', body: { card_token: res.body.id, customer_id: customer } });
    expectValidation(again, 'card_token');
    assert.match(again.body.errors.card_token[0], /already used/);
  });

  test('the card checks apply to tokens (10104, 10102, 10122)', async () => {
    expectError(await tokenize(co, 'test', { ...tokenBody(), card_number: '4242424242424241' }), 422, 'card_number', 10104);
    expectError(await tokenize(co, 'test', { ...tokenBody(), cvv: '1' }), 422, 'card_cvv', 10102);
    expectError(await tokenize(co, 'test', { ...tokenBody(), expiration_year: YEAR - 1 }), 422, 'card_expired', 10122);
  });

  test('a token lasts 10 minutes, and only in its company and environment', async () => {
    const old = (await tokenize(co)).body.id;
    h.clock.advance(10 * 60_000 + 1);
    const expired = await co.req({ url: '/v1/cards/tokenized', body: { card_token: old, customer_id: customer } });
    expectValidation(expired, 'card_token');
    assert.match(expired.body.errors.card_token[0], /expired/);

    const theirs = (await tokenize(other)).body.id;
    expectValidation(await co.req({ url: '/v1/cards/tokenized', body: { card_token: theirs, customer_id: customer } }), 'card_token');
    const live = await tokenize(co, 'live');
    assert.equal(live.status, 200, live.raw);
    assert.equal(live.body.is_test, false);
    expectValidation(await co.req({ url: '/v1/cards/tokenized', body: { card_token: live.body.id, customer_id: customer } }), 'card_token');
    expectValidation(await co.req({ url: '/v1/cards/tokenized', body: { card_token: 'tok_nope', customer_id: customer } }), 'card_token');
    // Still unused: the failed attempts did not spend it.
    const liveCustomer = await createCustomer(co, 'live');
    assert.equal(
      (await co.req({ url: '/v1/cards/tokenized', body: { card_token: live.body.id, customer_id: liveCustomer }, env: 'live' })).status,
      200,
    );
  });

  test('keys: publishable keys only tokenize; secret keys cannot tokenize', async () => {
    expectError(await co.req({ url: '/v1/tokens', body: tokenBody() }), 404, 'record_not_found', 10002);
    expectError(await co.req({ url: '/v1/cards', body: cardBody(customer), key: co.publishable_keys.test }), 404, 'record_not_found', 10002);
    expectError(
      await co.req({ url: '/v1/cards/tokenized', body: { card_token: 'tok_x', customer_id: customer }, key: co.publishable_keys.test }),
      404,
      'record_not_found',
      10002,
    );
    expectError(await co.req({ url: '/v1/tokens', body: tokenBody(), key: null }), 401, 'unauthenticated', 10000);
    expectError(
      await co.req({ url: '/v1/tokens', body: tokenBody(), key: 'pk_test_doesnotexist00000000000000000000000' }),
      404,
      'record_not_found',
      10002,
    );
    expectError(await co.req({ url: '/v1/tokens', body: tokenBody(), key: co.publishable_keys.test, idem: false }), 409, 'idempotency_error', 10003);
  });
});
