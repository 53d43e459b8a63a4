import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { ENGINE, createHarness, expectError, expectValidation, type Company, type Harness } from '../../../test/harness.ts';
import { expectScoped } from '../../../test/auth-matrix.ts';
import { customerWithDocument } from '../../../test/support/charges.ts';
import type { IssuerPort, SandboxIssuer } from '../../rails/index.ts';
import { auditLedger, recordCollection } from '../ledger/service.ts';
import { runIssuingReconcile, runIssuingSync } from './service.ts';

/** Issuing cards (docs/issuing.md): black-box HTTP tests on the sandbox issuer. */
describe(`issuing cards (${ENGINE})`, () => {
  let h: Harness;
  let co: Company;
  let customer: string;

  before(async () => {
    h = await createHarness();
    co = await h.company('Tarjetas Andinas SAS');
    customer = await customerWithDocument(co, '1020304050');
  });
  after(() => h.close());

  const issue = (body: Record<string, unknown> = {}, c: Company = co, env: 'test' | 'live' = 'test', idem?: string) =>
    c.req({ url: '/v1/issuing/cards', body: { customer_id: customer, nickname: 'Compras', ...body }, env, idem });

  /** Money into the company's balance (minor units), then into the customer's wallet through the API. */
  async function fundWallet(pesos: number, who = customer) {
    await h.runtime.deps.database.db
      .transaction()
      .execute((trx) =>
        recordCollection(
          trx,
          { companyId: co.company.id, environment: 'test', deps: h.runtime.deps },
          { currency: 'COP', amount: BigInt(pesos) * 100n, source: { type: 'test', id: randomUUID() } },
        ),
      );
    const res = await co.req({ url: `/v1/customers/${who}/transactions`, body: { amount: pesos, concept: 'Recarga' } });
    assert.equal(res.status, 200, res.raw);
  }

  const walletOf = async (who = customer) => (await co.req({ url: `/v1/customers/${who}/balance` })).body.balance as number;
  const spend = (card: string, amount: number | string, env: 'test' | 'live' = 'test') =>
    co.req({ url: `/v1/issuing/cards/${card}/test-authorizations`, body: { amount, merchant_name: 'Tienda La 14' }, env });

  async function expectClean() {
    assert.deepEqual(await auditLedger(h.runtime.deps.database.db, [co.company.id]), { unbalanced: [], mismatched: [], negative: [] });
  }

  test('a live key without an issuer connector: 422 10900 rail issuer, nothing recorded', async () => {
    const live = await customerWithDocument(co, '1020304050', 'CC', 'live');
    const res = await issue({ customer_id: live }, co, 'live');
    expectError(res, 422, 'rail_not_configured', 10900);
    assert.equal(res.body.rail, 'issuer');
    const rows = await h.runtime.deps.database.db
      .selectFrom('issuing_cards')
      .select('id')
      .where('company_id', '=', co.company.id)
      .where('environment', '=', 'live')
      .execute();
    assert.equal(rows.length, 0);
    // An unknown card with a live key: 404 like any missing object (the live key's 403 test_only is for a live card).
    expectError(
      await co.req({ url: '/v1/issuing/cards/icard_00000000000000000000000000/test-authorizations', body: { amount: 10 }, env: 'live' }),
      404,
      'record_not_found',
      10002,
    );
  });

  test('a virtual card is active at once with last_4, brand and expiry; never a full number or a security code', async () => {
    const res = await issue();
    assert.equal(res.status, 200, res.raw);
    const card = res.body;
    assert.match(card.id, /^icard_/);
    assert.equal(card.status, 'active');
    assert.equal(card.type, 'virtual');
    assert.match(card.last_4, /^\d{4}$/);
    assert.equal(card.brand, 'Visa');
    assert.equal(card.exp_year, h.clock.now().getUTCFullYear() + 4);
    assert.equal(card.customer_id, customer);
    assert.equal(card.wallet_id, customer);
    assert.deepEqual(card.wallet, { id: customer, balance: 0, label: '$ 0' });
    assert.equal(card.customer.document_number, '1020304050');
    assert.equal(card.is_test, true);
    assert.ok(card.activated_at);
    assert.doesNotMatch(res.raw, /\d{12,}/, 'no card-number-like digits');
    for (const key of ['number', 'pan', 'cvv', 'cvc', 'card_number']) assert.equal(key in card, false, key);
    const stored = await h.runtime.deps.database.db.selectFrom('issuing_cards').selectAll().where('id', '=', card.id).executeTakeFirstOrThrow();
    assert.doesNotMatch(JSON.stringify(stored), /\d{12,}/);
    const got = await co.req({ url: `/v1/issuing/cards/${card.id}` });
    assert.deepEqual(got.body, card);
  });

  test('validation: customer, document, wallet_id, physical address, type', async () => {
    expectValidation(await issue({ customer_id: randomUUID() }), 'customer_id');
    const noDocument = (await co.req({ url: '/v1/customers', body: { first_name: 'Sin', last_name: 'Documento' } })).body.id;
    expectValidation(await issue({ customer_id: noDocument }), 'customer_id');
    expectValidation(await issue({ wallet_id: randomUUID() }), 'wallet_id');
    expectValidation(await issue({ type: 'physical' }), 'address');
    expectValidation(await issue({ type: 'metal' }), 'type');
    expectValidation(await issue({ customer_id: 'nope' }), 'customer_id');
    const physical = await issue({ type: 'physical', wallet_id: customer, address: { line_1: 'Cra 7 # 12-34', city: 'Bogotá' } });
    assert.equal(physical.status, 200, physical.raw);
    assert.deepEqual(physical.body.address, { line_1: 'Cra 7 # 12-34', line_2: null, city: 'Bogotá', state: null, country: 'CO', zip_code: null });
  });

  test('the sandbox issuer refuses a holder whose document ends in 9999: canceled, KYC_REJECTED', async () => {
    const refused = await customerWithDocument(co, '1010109999');
    const res = await issue({ customer_id: refused });
    assert.equal(res.status, 200, res.raw);
    assert.equal(res.body.status, 'canceled');
    assert.equal(res.body.remarks, 'KYC_REJECTED');
    assert.equal(res.body.last_4, null);
    expectError(await co.req({ url: `/v1/issuing/cards/${res.body.id}/unblock`, body: {} }), 422, 'issuing_card_transition_not_allowed', 11100);
  });

  test('one state machine: active ↔ blocked → canceled (final); forbidden moves are 422 11100; the issuer is told', async () => {
    const card = (await issue()).body.id;
    const act = (action: string) => co.req({ url: `/v1/issuing/cards/${card}/${action}`, body: {} });
    expectError(await act('unblock'), 422, 'issuing_card_transition_not_allowed', 11100);
    const blocked = await act('block');
    assert.equal(blocked.body.status, 'blocked', blocked.raw);
    expectError(await act('block'), 422, 'issuing_card_transition_not_allowed', 11100);
    assert.equal((await act('unblock')).body.status, 'active');
    assert.equal((await act('block')).body.status, 'blocked');
    const canceled = await act('cancel');
    assert.equal(canceled.body.status, 'canceled');
    assert.ok(canceled.body.canceled_at);
    for (const action of ['block', 'unblock', 'cancel']) expectError(await act(action), 422, 'issuing_card_transition_not_allowed', 11100);
    const jobs = await h.runtime.deps.database.db.selectFrom('jobs').select('payload').where('kind', '=', 'issuing.sync_status').execute();
    const mine = jobs.filter((j) => (j.payload as { card_id: string }).card_id === card);
    assert.equal(mine.length, 4);
    await runIssuingSync(h.runtime.deps, mine[0].payload as Record<string, unknown>);
    assert.equal((h.runtime.deps.rails.sandbox.issuer as SandboxIssuer).statuses.get(card), 'canceled', 'the issuer hears the status as it is now');
  });

  test('test authorizations spend from the wallet through the ledger; short or inactive: 422, nothing recorded', async () => {
    const holder = await customerWithDocument(co, '52333444');
    const card = (await issue({ customer_id: holder })).body;
    await fundWallet(10000, holder);
    const ok = await spend(card.id, 2500.5);
    assert.equal(ok.status, 200, ok.raw);
    assert.match(ok.body.id, /^iauth_/);
    assert.equal(ok.body.approved, true);
    assert.equal(ok.body.amount, 2500.5);
    assert.deepEqual(ok.body.wallet, { id: holder, balance: 7499.5, label: '$ 7.499,50' });
    assert.equal(await walletOf(holder), 7499.5);
    const movements = (await co.req({ url: `/v1/customers/${holder}/transactions?filter[type]=withdrawal` })).body.data;
    assert.equal(movements.length, 1);
    assert.equal(movements[0].node_type, 'IssuingAuthorization');
    assert.deepEqual(movements[0].node, { id: ok.body.id });
    assert.equal(movements[0].confirmed, true);
    assert.equal(movements[0].amount, 2500.5);

    expectError(await spend(card.id, 7499.51), 422, 'insufficient_funds', 10501);
    assert.equal(await walletOf(holder), 7499.5);
    expectValidation(await spend(card.id, 0), 'amount');
    expectValidation(await spend(card.id, '1.001'), 'amount');
    await co.req({ url: `/v1/issuing/cards/${card.id}/block`, body: {} });
    expectError(await spend(card.id, 10), 422, 'issuing_card_not_active', 11101);
    await co.req({ url: `/v1/issuing/cards/${card.id}/unblock`, body: {} });
    assert.equal((await spend(card.id, 7499.5)).status, 200);
    assert.equal(await walletOf(holder), 0);
    const count = await h.runtime.deps.database.db.selectFrom('issuing_authorizations').select('id').where('card_id', '=', card.id).execute();
    assert.equal(count.length, 2);
    assert.equal((await co.req({ url: `/v1/issuing/cards/${card.id}` })).body.wallet.balance, 0);
    await expectClean();
  });

  test('lists: filters, the customer’s cards, scoping', async () => {
    const holder = await customerWithDocument(co, '80111222');
    const a = (await issue({ customer_id: holder })).body.id;
    const b = (await issue({ customer_id: holder, type: 'physical', address: { line_1: 'Calle 10 # 5-5', city: 'Cali' } })).body.id;
    await co.req({ url: `/v1/issuing/cards/${a}/block`, body: {} });
    const mine = await co.req({ url: `/v1/customers/${holder}/issuing-cards` });
    assert.equal(mine.status, 200, mine.raw);
    assert.deepEqual(
      mine.body.data.map((c: { id: string }) => c.id),
      [b, a],
    );
    assert.deepEqual(
      (await co.req({ url: `/v1/customers/${holder}/issuing-cards?filter[status]=blocked` })).body.data.map((c: { id: string }) => c.id),
      [a],
    );
    assert.deepEqual(
      (await co.req({ url: `/v1/issuing/cards?filter[customer_id]=${holder}&filter[type]=physical` })).body.data.map((c: { id: string }) => c.id),
      [b],
    );
    assert.equal((await co.req({ url: '/v1/issuing/cards?filter[status]=nonsense' })).body.total, 0);
    expectError(await co.req({ url: '/v1/issuing/cards?filter[nickname]=x' }), 400);
    expectError(await co.req({ url: `/v1/customers/${randomUUID()}/issuing-cards` }), 404, 'record_not_found', 10002);
    const other = await h.company('Otra SAS');
    for (const req of [
      { url: `/v1/issuing/cards/${a}` },
      { url: `/v1/customers/${holder}/issuing-cards` },
      { method: 'POST' as const, url: `/v1/issuing/cards/${a}/cancel`, body: {} },
      { method: 'POST' as const, url: `/v1/issuing/cards/${a}/test-authorizations`, body: { amount: 10 } },
    ]) {
      await expectScoped(co, other, req);
    }
    assert.equal((await other.req({ url: '/v1/issuing/cards' })).body.total, 0);
    // A live card (stored directly: live issuing needs a connector) with the live key: 403 test_only, no code.
    const db = h.runtime.deps.database.db;
    const row = await db.selectFrom('issuing_cards').selectAll().where('id', '=', a).executeTakeFirstOrThrow();
    const liveId = `icard_${'1'.repeat(a.length - 'icard_'.length)}`;
    await db
      .insertInto('issuing_cards')
      .values({
        ...row,
        id: liveId,
        environment: 'live',
        status: 'active',
        customer_id: await customerWithDocument(co, '80111222', 'CC', 'live'),
        address: null,
        metadata: null,
      })
      .execute();
    const liveSpend = await co.req({ url: `/v1/issuing/cards/${liveId}/test-authorizations`, body: { amount: 10 }, env: 'live' });
    expectError(liveSpend, 403);
    assert.equal(liveSpend.body.code_name, undefined);
    expectError(await spend(liveId, 10), 404, 'environment_key_mismatch');
  });

  test('an issuer without an answer: the card stays created, the reconciler activates it; a retry of the key answers the card', async () => {
    const sandbox = h.runtime.deps.rails.sandbox;
    const real = sandbox.issuer;
    const silent: IssuerPort = {
      name: 'silent',
      issue: () => Promise.reject(new Error('connection reset')),
      setStatus: () => Promise.resolve(),
    };
    sandbox.issuer = silent;
    const idem = randomUUID();
    let card;
    try {
      const res = await issue({}, co, 'test', idem);
      assert.equal(res.status, 200, res.raw);
      card = res.body;
      assert.equal(card.status, 'created');
      assert.equal(card.last_4, null);
    } finally {
      sandbox.issuer = real;
    }
    const retry = await issue({}, co, 'test', idem);
    assert.equal(retry.status, 200, retry.raw);
    assert.equal(retry.body.id, card.id);
    const count = await h.runtime.deps.database.db.selectFrom('issuing_cards').select('id').where('company_id', '=', co.company.id).execute();
    assert.equal(count.filter((r) => r.id === card.id).length, 1);
    await runIssuingReconcile(h.runtime.deps, { company_id: co.company.id, environment: 'test', card_id: card.id });
    const after = (await co.req({ url: `/v1/issuing/cards/${card.id}` })).body;
    assert.equal(after.status, 'active');
    assert.match(after.last_4, /^\d{4}$/);
    await runIssuingReconcile(h.runtime.deps, { company_id: co.company.id, environment: 'test', card_id: card.id });
    assert.deepEqual((await co.req({ url: `/v1/issuing/cards/${card.id}` })).body, after, 'settled once');
  });

  test('parallel authorizations against one wallet: exactly what it covers goes through', { skip: ENGINE !== 'postgres' }, async () => {
    const holder = await customerWithDocument(co, '71222333');
    const card = (await issue({ customer_id: holder })).body.id;
    await fundWallet(5000, holder);
    const results = await Promise.all(Array.from({ length: 20 }, () => spend(card, 1000)));
    assert.equal(results.filter((r) => r.status === 200).length, 5);
    for (const r of results.filter((x) => x.status !== 200)) expectError(r, 422, 'insufficient_funds', 10501);
    assert.equal(await walletOf(holder), 0);
    await expectClean();
  });
});
