import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomInt, randomUUID } from 'node:crypto';
import { createHarness, expectError, expectValidation, type Company, type Harness } from '../../../test/harness.ts';
import { cardBody, createCard } from '../../../test/support/cards.ts';
import { chargeEvents, createAccount, runChargeJobs, runExpireJobs, walletAccount } from '../../../test/support/charges.ts';
import type { SandboxMessaging } from '../../rails/messaging/sandbox.ts';
import { TEST_LOGIN_CODE } from './service.ts';
import { expireHeldCharge } from '../charges/held.ts';

/**
 * The payer session's payment methods and charges (SPEC.md "Customer session", docs/session.md),
 * black box over HTTP, time on the manual clock: the grouped methods, saving a card from a token,
 * held charges (approve, reject, the payer's reply, expiry, one at a time), reads of the
 * customer's own charges only, and SPEC's per-customer read and write limits.
 */
describe('customer session: payment methods and charges', () => {
  let h: Harness;
  let co: Company;
  let other: Company;
  let customer: string;
  let token: string;
  let secondToken: string;
  let card: string;
  let counter = 0;
  const PHONE = '+573005556677';
  const SECOND = '+573005556688';

  const minutes = (n: number) => h.clock.advance(n * 60_000);
  const messaging = () => h.runtime.deps.rails.test.messaging as SandboxMessaging;
  /** Every call in its own minute: the per-customer limits are tested on their own below. */
  const as = (t: string, opts: { url: string; body?: unknown; method?: 'GET' | 'POST' | 'DELETE'; env?: 'test' | 'live' }) => {
    minutes(1);
    return co.req({ ...opts, headers: { 'x-customer-token': t } });
  };

  async function login(c: Company, phone: string): Promise<string> {
    minutes(61);
    const req = await c.req({ url: '/v1/customers/login/request', body: { phone } });
    assert.equal(req.status, 200, req.raw);
    const ver = await c.req({ url: '/v1/customers/login/verify', body: { phone, otp: TEST_LOGIN_CODE } });
    assert.equal(ver.status, 200, ver.raw);
    return ver.body.token;
  }

  async function newCustomer(c: Company, phone: string): Promise<string> {
    const res = await c.req({ url: '/v1/customers', body: { first_name: 'Lucía', last_name: 'Mora', phone, email: `l${++counter}@example.com` } });
    assert.equal(res.status, 200, res.raw);
    return res.body.id;
  }

  const cardToken = async (c: Company, number = '4242424242424242') => {
    const { customer_id: _c, authorization: _a, ...body } = cardBody('x', { card_number: number });
    const res = await c.req({ url: '/v1/tokens', body, key: c.publishable_keys.test });
    assert.equal(res.status, 200, res.raw);
    return res.body.id as string;
  };

  before(async () => {
    h = await createHarness();
    h.clock.freeze();
    co = await h.company('Tienda Pagos');
    other = await h.company('Otra Tienda');
    customer = await newCustomer(co, PHONE);
    await newCustomer(co, SECOND);
    token = await login(co, PHONE);
    secondToken = await login(co, SECOND);
    card = (await createCard(co, customer)).id;
  });
  after(() => h.close());

  test('payment methods: grouped {cards, wallets, pse}; a card saved from a single-use token', async () => {
    await createAccount(h, co, customer);
    await walletAccount(co, customer, '3005556677');
    const res = await as(token, { url: '/v1/customers/session/payment-methods' });
    assert.equal(res.status, 200, res.raw);
    const { cards, wallets, pse } = res.body.data;
    assert.deepEqual(
      cards.map((c: any) => [c.id, c.brand, c.last_four, c.label]),
      [[card, 'visa', '4242', 'Visa ····4242']],
    );
    assert.match(cards[0].expiration_date, /^\d{4}-12-31$/);
    assert.equal(wallets.length, 1);
    assert.equal(wallets[0].subtype, 'nequi');
    assert.ok(!wallets[0].phone.includes('3005556677'), 'the number is masked');
    assert.equal(pse.length, 1);
    assert.equal(pse[0].bank_name, 'Bancolombia');

    const tok = await cardToken(co, '5555555555554444');
    const saved = await as(token, { url: '/v1/customers/session/payment-methods', body: { token: tok } });
    assert.equal(saved.status, 200, saved.raw);
    assert.equal(saved.body.last_four, '4444');
    assert.equal(saved.body.brand, 'mastercard');
    const after = await as(token, { url: '/v1/customers/session/payment-methods' });
    assert.deepEqual(after.body.data.cards.map((c: any) => c.last_four).sort(), ['4242', '4444']);
    const stored = await co.req({ url: `/v1/cards/${saved.body.id}` });
    assert.equal(stored.body.customer_id, customer);
    assert.equal(stored.body.authorization, true);

    expectValidation(await as(token, { url: '/v1/customers/session/payment-methods', body: { token: tok } }), 'token');
    expectValidation(await as(token, { url: '/v1/customers/session/payment-methods', body: { token: await cardToken(other) } }), 'token');
    expectValidation(await as(token, { url: '/v1/customers/session/payment-methods', body: {} }), 'token');
  });

  test('auth matrix: no token, a wrong or revoked token, another company’s key, the other environment, an expired token → 401', async () => {
    const url = '/v1/customers/session/payment-methods';
    for (const res of [
      await co.req({ url }),
      await co.req({ url, headers: { 'x-customer-token': 'cst_nope' } }),
      await other.req({ url, headers: { 'x-customer-token': token } }),
      await co.req({ url, env: 'live', headers: { 'x-customer-token': token } }),
      await co.req({ url: '/v1/customers/session/charges', body: { payment_method_id: card, amount: 100, description: 'x' } }),
      await co.req({ url: '/v1/customers/session/charges/ch_x' }),
    ]) {
      expectError(res, 401);
      assert.equal(res.body.code, undefined, res.raw);
    }
  });

  test('charges: approve true pays at once (an ordinary charge); false rejects; cents, min 100; 422 without a code for another’s card', async () => {
    const paid = await as(token, {
      url: '/v1/customers/session/charges',
      body: { payment_method_id: card, amount: 12_345, currency: 'COP', description: 'Recarga', approve: true },
    });
    assert.equal(paid.status, 200, paid.raw);
    assert.equal(paid.body.status, 'paid');
    assert.match(paid.body.charge_id, /^ch_/);
    const ordinary = await co.req({ url: `/v1/charges/${paid.body.charge_id}` });
    assert.equal(ordinary.body.status, 'paid');
    assert.equal(ordinary.body.amount, 123.45, 'cents: 12345 is COP 123.45');
    assert.deepEqual((await chargeEvents(h, co, paid.body.charge_id)).map((e) => e.type).sort(), [
      'charge.created',
      'charge.paid',
      'charge.processing',
    ]);
    const view = await as(token, { url: `/v1/customers/session/charges/${paid.body.charge_id}` });
    assert.equal(view.status, 200, view.raw);
    assert.equal(view.body.amount, 12_345);
    assert.equal(view.body.description, 'Recarga');
    assert.ok(view.body.paid_at);

    const rejected = await as(token, {
      url: '/v1/customers/session/charges',
      body: { payment_method_id: card, amount: 500, description: 'Recarga', approve: false },
    });
    assert.equal(rejected.status, 200, rejected.raw);
    assert.equal(rejected.body.status, 'failed');
    assert.equal((await co.req({ url: `/v1/charges/${rejected.body.charge_id}` })).body.remarks, 'APPROVAL_REJECTED');

    expectValidation(
      await as(token, { url: '/v1/customers/session/charges', body: { payment_method_id: card, amount: 99, description: 'x' } }),
      'amount',
    );
    expectValidation(
      await as(token, { url: '/v1/customers/session/charges', body: { payment_method_id: card, amount: 100.5, description: 'x' } }),
      'amount',
    );
    expectValidation(
      await as(token, { url: '/v1/customers/session/charges', body: { payment_method_id: card, amount: 100, description: 'x', currency: null } }),
      'currency',
    );
    const othersCard = (await createCard(co, await newCustomer(co, '+573005550000'))).id;
    for (const method of [othersCard, 'card_doesnotexist', '']) {
      const res = await as(token, { url: '/v1/customers/session/charges', body: { payment_method_id: method, amount: 100, description: 'x' } });
      assert.equal(res.status, 422, res.raw);
      if (method) assert.equal(res.body.code, undefined, res.raw);
    }
    // Another customer's charge is not this session's: 404 without a code.
    const notMine = await as(secondToken, { url: `/v1/customers/session/charges/${paid.body.charge_id}` });
    expectError(notMine, 404);
    assert.equal(notMine.body.code, undefined);
    expectError(await as(token, { url: '/v1/customers/session/charges/ch_00000000000000000000000000' }), 404);
  });

  test('held charges: one at a time; the payer’s reply approves it (then the rail debits it); unanswered it expires after 5 minutes', async () => {
    const held = await as(token, {
      url: '/v1/customers/session/charges',
      body: { payment_method_id: card, amount: 20_000, description: 'Pedido 1' },
    });
    assert.equal(held.status, 200, held.raw);
    assert.equal(held.body.status, 'created');
    assert.equal(new Date(held.body.expires_at).getTime() - h.clock.now().getTime(), 5 * 60_000);
    const second = await as(token, {
      url: '/v1/customers/session/charges',
      body: { payment_method_id: card, amount: 100, description: 'Pedido 2', approve: true },
    });
    expectError(second, 422);
    assert.equal(second.body.code, undefined);
    // A reply that merely names the charge (another message, another phone) answers nothing.
    const forged = await messaging().send({ to: '+573009998877', text: 'x', reference: held.body.charge_id });
    await messaging().report(forged.providerMessageId, 'replied', { replyText: 'SI' });
    const untouched = await co.req({ url: `/v1/charges/${held.body.charge_id}` });
    assert.equal(untouched.body.status, 'created');
    assert.ok(untouched.body.expires_at, 'still held');
    // The approval request went to the payer's phone; they answer "Sí".
    const request = messaging().sent.find((m) => m.reference === held.body.charge_id);
    assert.ok(request, 'approval request sent');
    assert.equal(request.to, PHONE);
    await messaging().report(request.providerMessageId, 'replied', { replyText: ' Sí ' });
    const approved = await co.req({ url: `/v1/charges/${held.body.charge_id}` });
    assert.equal(approved.body.status, 'created', 'approved, not yet debited');
    assert.equal(approved.body.expires_at, null, 'no longer held: it will not expire');
    // An expire job that read the charge before the approval committed decides under the lock: it does nothing.
    minutes(6);
    await expireHeldCharge(h.runtime.deps, { companyId: co.company.id, environment: 'test' }, held.body.charge_id);
    assert.equal((await co.req({ url: `/v1/charges/${held.body.charge_id}` })).body.status, 'created');
    assert.equal(await runChargeJobs(h, [held.body.charge_id]), 1);
    assert.equal((await co.req({ url: `/v1/charges/${held.body.charge_id}` })).body.status, 'paid');
    // A second reply changes nothing.
    await messaging().report(request.providerMessageId, 'replied', { replyText: 'NO' });
    assert.equal((await co.req({ url: `/v1/charges/${held.body.charge_id}` })).body.status, 'paid');

    // Unanswered: the expire job fails it (remarks EXPIRED), the rail never saw it; then a new one may be made.
    const late = await as(token, { url: '/v1/customers/session/charges', body: { payment_method_id: card, amount: 3_000, description: 'Pedido 3' } });
    assert.equal(late.body.status, 'created');
    minutes(2);
    expectError(
      await as(token, { url: '/v1/customers/session/charges', body: { payment_method_id: card, amount: 100, description: 'Pedido 4' } }),
      422,
    );
    minutes(2);
    assert.equal(await runExpireJobs(h, [late.body.charge_id]), 1);
    const expired = await as(token, { url: `/v1/customers/session/charges/${late.body.charge_id}` });
    assert.equal(expired.body.status, 'failed');
    assert.equal(expired.body.remarks, 'EXPIRED');
    assert.deepEqual((await chargeEvents(h, co, late.body.charge_id)).map((e) => e.type).sort(), ['charge.created', 'charge.failed']);
    const next = await as(token, { url: '/v1/customers/session/charges', body: { payment_method_id: card, amount: 100, description: 'Pedido 5' } });
    assert.equal(next.status, 200, next.raw);
    // A "no" rejects it at once.
    const reqNo = messaging().sent.find((m) => m.reference === next.body.charge_id)!;
    await messaging().report(reqNo.providerMessageId, 'replied', { replyText: 'no' });
    const no = await co.req({ url: `/v1/charges/${next.body.charge_id}` });
    assert.equal(no.body.status, 'failed');
    assert.equal(no.body.remarks, 'APPROVAL_REJECTED');
  });

  test('concurrency: two simultaneous held charges of one customer → exactly one is created', async () => {
    minutes(10);
    const body = { payment_method_id: card, amount: 1_000, description: 'Doble' };
    const answers = await Promise.all(
      [0, 1].map(() => co.req({ url: '/v1/customers/session/charges', body, headers: { 'x-customer-token': secondToken } })),
    );
    // The second customer has no card of its own: both are refused alike, nothing recorded.
    assert.deepEqual(
      answers.map((a) => a.status),
      [422, 422],
    );
    minutes(1);
    const both = await Promise.all([0, 1].map(() => co.req({ url: '/v1/customers/session/charges', body, headers: { 'x-customer-token': token } })));
    assert.deepEqual(both.map((a) => a.status).sort(), [200, 422], both.map((a) => a.raw).join('\n'));
    minutes(10);
  });

  test('live key: approve is refused; without a card connector nothing is recorded (rail_not_configured)', async () => {
    const liveCustomer = await co.req({ url: '/v1/customers', env: 'live', body: { first_name: 'Ana', last_name: 'Ruiz', phone: PHONE } });
    assert.equal(liveCustomer.status, 200, liveCustomer.raw);
    minutes(61);
    assert.equal((await co.req({ url: '/v1/customers/login/request', env: 'live', body: { phone: PHONE } })).status, 200);
    const row = await h.runtime.deps.database.db
      .selectFrom('customer_login_codes')
      .select('id')
      .where('customer_id', '=', liveCustomer.body.id)
      .executeTakeFirstOrThrow();
    // The live code is random: set a known one the way the service stores it (a keyed digest).
    const { keyedDigest } = await import('../../platform/secrets.ts');
    const { LOGIN_CODE_DIGEST } = await import('./service.ts');
    await h.runtime.deps.database.db
      .updateTable('customer_login_codes')
      .set({ code_hash: keyedDigest(h.runtime.deps.secrets, LOGIN_CODE_DIGEST, `${row.id}:654321`) })
      .where('id', '=', row.id)
      .execute();
    const ver = await co.req({ url: '/v1/customers/login/verify', env: 'live', body: { phone: PHONE, otp: '654321' } });
    assert.equal(ver.status, 200, ver.raw);
    const live = ver.body.token;
    const liveCard = await co.req({ url: '/v1/cards', env: 'live', body: cardBody(liveCustomer.body.id) });
    assert.equal(liveCard.status, 200, liveCard.raw);
    expectValidation(
      await as(live, {
        url: '/v1/customers/session/charges',
        env: 'live',
        body: { payment_method_id: liveCard.body.id, amount: 100, description: 'x', approve: true },
      }),
      'approve',
    );
    const refused = await as(live, {
      url: '/v1/customers/session/charges',
      env: 'live',
      body: { payment_method_id: liveCard.body.id, amount: 100, description: 'x' },
    });
    expectError(refused, 422, 'rail_not_configured', 10900);
    // The test card is of the other environment: refused like an unknown one.
    expectError(
      await as(live, { url: '/v1/customers/session/charges', env: 'live', body: { payment_method_id: card, amount: 100, description: 'x' } }),
      422,
    );
  });

  test('limits per customer: reads 30 per minute, writes 5 per minute shared by both POSTs; 429 with Retry-After', async () => {
    minutes(2);
    const url = '/v1/customers/session/payment-methods';
    const headers = { 'x-customer-token': secondToken };
    for (let i = 0; i < 30; i++) assert.equal((await co.req({ url, headers })).status, 200);
    const limited = await co.req({ url, headers });
    expectError(limited, 429);
    assert.ok(Number(limited.headers['retry-after']) >= 1);
    assert.equal(limited.headers['x-ratelimit-limit'], '30');
    assert.equal(limited.headers['x-ratelimit-remaining'], '0');
    expectError(await co.req({ url: '/v1/customers/session/charges/ch_x', headers }), 429);
    // Another customer is not limited by this one.
    assert.equal((await co.req({ url, headers: { 'x-customer-token': token } })).status, 200);
    minutes(1);
    assert.equal((await co.req({ url, headers })).status, 200);

    const write = (i: number) =>
      i % 2
        ? co.req({ url, body: { token: 'tok_nope' }, headers })
        : co.req({ url: '/v1/customers/session/charges', body: { payment_method_id: 'card_nope', amount: 100, description: 'x' }, headers });
    for (let i = 0; i < 5; i++) assert.equal((await write(i)).status, 422);
    expectError(await write(5), 429);
    expectError(await write(6), 429);
    minutes(1);
    assert.equal((await write(7)).status, 422);
  });
});

describe('customer session: daily caps on login codes sent', () => {
  let h: Harness;
  let co: Company;
  let other: Company;
  before(async () => {
    h = await createHarness({ LOGIN_CODES_PER_IP_DAY: '2', LOGIN_CODES_PER_COMPANY_DAY: '3' });
    h.clock.freeze();
    co = await h.company('Tienda Topes');
    other = await h.company('Otra Tienda');
  });
  after(() => h.close());

  const customerOf = async (c: Company, phone: string) =>
    assert.equal((await c.req({ url: '/v1/customers', body: { first_name: 'Ana', last_name: 'Mora', phone } })).status, 200);
  // Client addresses of this file's own: on PostgreSQL other test files ask for codes from 127.0.0.1 at the same time.
  const addressOf = () => `10.${randomInt(256)}.${randomInt(256)}.${randomInt(1, 255)}`;
  const [A, B, C] = [addressOf(), addressOf(), addressOf()];
  const ask = async (c: Company, phone: string, address: string) => {
    const res = await h.app.inject({
      method: 'POST',
      url: '/v1/customers/login/request',
      remoteAddress: address,
      headers: { authorization: `Bearer ${c.keys.test}`, 'x-idempotency': randomUUID(), 'content-type': 'application/json' },
      payload: JSON.stringify({ phone }),
    });
    return { status: res.statusCode, body: res.json(), headers: res.headers, raw: res.body };
  };

  test('per address within the company, then per company: 429 for every phone, known or not; other companies untouched; a day later it sends again', async () => {
    for (const p of ['+573100000001', '+573100000002', '+573100000003', '+573100000004']) await customerOf(co, p);
    await customerOf(other, '+573100000009');
    // Unknown phones get no code, so they do not count.
    assert.equal((await ask(co, '+573199999999', A)).status, 200);
    assert.equal((await ask(co, '+573100000001', A)).status, 200);
    assert.equal((await ask(co, '+573100000002', A)).status, 200);
    // Two codes from A for this company: A is capped, known phone or not (no enumeration).
    const capped = await ask(co, '+573100000003', A);
    expectError(capped, 429);
    assert.ok(Number(capped.headers['retry-after']) > 86_000, 'until the oldest code of the window is a day old');
    const unknown = await ask(co, '+573199999998', A);
    expectError(unknown, 429);
    assert.deepEqual(unknown.body, capped.body);
    // Another company from the same address is not capped by this company's codes.
    assert.equal((await ask(other, '+573100000009', A)).status, 200);
    // Another address of the company: one more code, then the company's 3 a day are spent, from any address.
    assert.equal((await ask(co, '+573100000003', B)).status, 200);
    expectError(await ask(co, '+573100000004', B), 429);
    expectError(await ask(co, '+573100000004', C), 429);
    h.clock.advance(86_400_000 + 1000);
    assert.equal((await ask(co, '+573100000004', A)).status, 200);
  });
});
