import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ENGINE, createHarness, expectError, expectValidation, type Company, type Harness } from '../../../test/harness.ts';
import { expectScoped } from '../../../test/auth-matrix.ts';
import { PLATFORM_BANK_ID, bankId } from '../banks/catalogue.ts';
import { SANDBOX_KEY_DIRECTORY } from '../../rails/sandbox-table.ts';
import { checkEnrollment } from './service.ts';

const BANCOLOMBIA = bankId('1007');
const DAVIVIENDA = bankId('1051');
const NEQUI = bankId('1507');
const DAVIPLATA = bankId('1551');
const CITIBANK = bankId('1009');
const NU = bankId('1809');
const DELAY = 1000; // SANDBOX_ACCOUNT_DELAY_MS in the harness

describe('accounts', () => {
  let h: Harness;
  let co: Company;
  let customer: { id: string };

  const newCustomer = async (c: Company = co, env: 'test' | 'live' = 'test') => {
    const res = await c.req({
      url: '/v1/customers',
      env,
      body: {
        first_name: 'Ana',
        last_name: 'Gómez',
        email: 'ana@example.com',
        phone: '+573001234567',
        document_type: 'CC',
        document_number: '1020304050',
      },
    });
    assert.equal(res.status, 200, res.raw);
    return res.body as { id: string };
  };
  const create = (body: Record<string, unknown>, c: Company = co) => c.req({ url: '/v1/accounts', body: { customer_id: customer.id, ...body } });
  const savings = (extra: Record<string, unknown> = {}) =>
    create({ subtype: 'SAVINGS', bank_id: BANCOLOMBIA, account_number: '123-456789-01', authorization: true, ...extra });
  /** The account's events as stored in the outbox, in order. */
  const eventsOf = async (accountId: string) => {
    const rows = await h.runtime.deps.database.db
      .selectFrom('events')
      .select(['type', 'data', 'environment', 'company_id', 'created_at', 'id'])
      .orderBy('created_at')
      .execute();
    return rows.filter((r) => (r.data as { id?: string }).id === accountId);
  };
  const eventTypes = async (accountId: string) => (await eventsOf(accountId)).map((e) => e.type);
  const settle = async () => {
    h.clock.advance(DELAY);
    await h.runtime.deps.jobs.tick();
  };

  before(async () => {
    h = await createHarness();
    co = await h.company();
    customer = await newCustomer();
  });
  after(() => h.close());

  test('create a savings account: the Account object, masked number, PENDING then ACTIVE', async () => {
    const res = await savings({ title: 'Nómina', external_id: 'ext-1', 're-enrollment': true });
    assert.equal(res.status, 200, res.raw);
    const a = res.body;
    assert.match(a.id, /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    assert.equal(a.title, 'Nómina');
    assert.equal(a.subtype, 'SAVINGS');
    assert.equal(a.status, 'PENDING');
    assert.equal(a.authorization, true);
    assert.equal(a.re_enroll, true);
    assert.equal(a.external_id, 'ext-1');
    assert.equal(a.customer_id, customer.id);
    assert.equal(a.account_number, '****8901');
    assert.equal(a.bank_id, BANCOLOMBIA);
    assert.deepEqual(Object.keys(a.bank).sort(), ['base64_logo', 'id', 'logo', 'name']);
    assert.equal(a.bank.name, 'Bancolombia');
    assert.equal(a.bank.logo, `http://recaudo.test/v1/banks/${BANCOLOMBIA}/logo.svg`);
    assert.deepEqual(Object.keys(a.customer).sort(), [
      'created_at',
      'document_number',
      'document_type',
      'email',
      'first_name',
      'id',
      'is_test',
      'last_name',
      'phone',
    ]);
    assert.equal(a.customer.id, customer.id);
    assert.equal(a.customer.document_number, '1020304050');
    assert.equal(a.is_test, true);
    assert.equal(a.related_customer_id, null);
    assert.equal(JSON.stringify(a).includes('12345678901'), false, 'the full number never leaves the service');

    const stored = await h.runtime.deps.database.db.selectFrom('accounts').select('account_number').where('id', '=', a.id).executeTakeFirstOrThrow();
    assert.equal(stored.account_number, '12345678901', 'stored without separators');

    const events = await eventsOf(a.id);
    assert.deepEqual(
      events.map((e) => e.type),
      ['account.pending'],
    );
    assert.equal(events[0].company_id, co.company.id);
    assert.equal(events[0].environment, 'test');
    assert.deepEqual(events[0].data, a, 'the event carries the account as the API returns it');

    if (ENGINE === 'pglite') {
      await h.runtime.deps.jobs.tick();
      assert.equal((await co.req({ url: `/v1/accounts/${a.id}` })).body.status, 'PENDING', 'nothing happens before the delay');
    }
    await settle();
    const got = await co.req({ url: `/v1/accounts/${a.id}` });
    assert.equal(got.status, 200);
    assert.equal(got.body.status, 'ACTIVE');
    assert.deepEqual(await eventTypes(a.id), ['account.pending', 'account.connected']);
    const connected = (await eventsOf(a.id))[1];
    assert.equal((connected.data as { status: string }).status, 'ACTIVE');

    // A second run of the job (redelivery, another worker) changes nothing and emits nothing.
    await checkEnrollment(h.runtime.deps, { company_id: co.company.id, environment: 'test', account_id: a.id });
    await settle();
    assert.deepEqual(await eventTypes(a.id), ['account.pending', 'account.connected']);
  });

  test('an account number ending in 9999 is REJECTED (account.uncompleted)', async () => {
    const a = (await savings({ account_number: '00012349999' })).body;
    assert.equal(a.status, 'PENDING');
    await settle();
    assert.equal((await co.req({ url: `/v1/accounts/${a.id}` })).body.status, 'REJECTED');
    assert.deepEqual(await eventTypes(a.id), ['account.pending', 'account.uncompleted']);
  });

  test('authorization false: a payout destination, ACTIVE at once (account.connected), debit_authorized false; a debit on it is a coded 422; the same in live', async () => {
    const a = (await savings({ authorization: false })).body;
    assert.deepEqual([a.authorization, a.status, a.debit_authorized], [false, 'ACTIVE', false]);
    await settle();
    assert.equal((await co.req({ url: `/v1/accounts/${a.id}` })).body.status, 'ACTIVE');
    assert.deepEqual(await eventTypes(a.id), ['account.connected']);
    const omitted = (await create({ subtype: 'CHECKING', bank_id: DAVIVIENDA, account_number: '000012345678' })).body;
    assert.equal(omitted.authorization, false, 'authorization defaults to false');
    assert.equal(omitted.status, 'ACTIVE');
    expectValidation(await co.req({ method: 'POST', url: `/v1/accounts/${a.id}/validate`, body: {} }), 'bank_id');
    const debit = await co.req({
      url: '/v1/charges',
      body: { customer_id: customer.id, account_id: a.id, amount: 10_000, title: 'Cuota', description: 'Cuota' },
    });
    expectValidation(debit, 'account_id');
    assert.match(debit.body.errors.account_id[0], /authorization is false/);
    // An account with debit authorization says so once the bank enrolled it.
    const enrolled = (await savings({ authorization: true, account_number: '555-000111-22' })).body;
    assert.equal(enrolled.debit_authorized, false, 'not yet: PENDING');
    await settle();
    assert.equal((await co.req({ url: `/v1/accounts/${enrolled.id}` })).body.debit_authorized, true);

    // Live: no connector is needed to record where money goes.
    const liveCustomer = await newCustomer(co, 'live');
    const live = await co.req({
      url: '/v1/accounts',
      env: 'live',
      body: { subtype: 'SAVINGS', bank_id: BANCOLOMBIA, account_number: '123-456789-02', customer_id: liveCustomer.id, authorization: false },
    });
    assert.equal(live.status, 200, live.raw);
    assert.deepEqual([live.body.status, live.body.debit_authorized, live.body.is_test], ['ACTIVE', false, false]);
    expectError(
      await co.req({
        url: '/v1/accounts',
        env: 'live',
        body: { subtype: 'SAVINGS', bank_id: BANCOLOMBIA, account_number: '123-456789-03', customer_id: liveCustomer.id, authorization: true },
      }),
      422,
      'rail_not_configured',
    );
  });

  test('wallets with CONFIRMATION wait for /validate; the OTP is checked', async () => {
    const a = (await create({ subtype: 'ELECTRONIC_DEPOSIT', bank_id: NEQUI, account_number: '+57 300 123 4567', authorization: true })).body;
    assert.equal(a.status, 'PENDING');
    assert.equal(a.account_number, '****4567');
    await settle();
    assert.equal((await co.req({ url: `/v1/accounts/${a.id}` })).body.status, 'PENDING', 'no job settles a wallet');

    const wrong = await co.req({ method: 'POST', url: `/v1/accounts/${a.id}/validate`, body: { otp: '000000' } });
    expectValidation(wrong, 'otp');
    assert.equal((await co.req({ url: `/v1/accounts/${a.id}` })).body.status, 'PENDING', 'a wrong OTP changes nothing');
    expectError(
      await co.req({ method: 'POST', url: `/v1/accounts/${a.id}/validate`, body: { otp: '123456' }, idem: false }),
      409,
      'idempotency_error',
      10003,
    );

    const ok = await co.req({ method: 'POST', url: `/v1/accounts/${a.id}/validate`, body: { otp: '123456' } });
    assert.equal(ok.status, 200, ok.raw);
    assert.equal(ok.body.status, 'ACTIVE');
    assert.equal(ok.body.id, a.id);
    const types = await eventTypes(a.id);
    assert.equal(types[0], 'account.pending');
    assert.deepEqual(types.slice(1).sort(), ['account.connected', 'account.validated']);

    expectValidation(await co.req({ method: 'POST', url: `/v1/accounts/${a.id}/validate`, body: { otp: '123456' } }), 'status');
    assert.equal((await eventTypes(a.id)).length, 3, 'validating twice emits nothing');

    // Daviplata: the holder confirmed in the app, no OTP sent; an empty body is fine.
    const b = (await create({ subtype: 'ELECTRONIC_DEPOSIT', bank_id: DAVIPLATA, account_number: '3109876543', authorization: true })).body;
    const noOtp = await co.req({ method: 'POST', url: `/v1/accounts/${b.id}/validate` });
    assert.equal(noOtp.status, 200, noOtp.raw);
    assert.equal(noOtp.body.status, 'ACTIVE');

    // The reject trigger also applies to wallets: the job rejects it before any confirmation.
    const c = (await create({ subtype: 'ELECTRONIC_DEPOSIT', bank_id: NEQUI, account_number: '3001239999', authorization: true })).body;
    await settle();
    assert.equal((await co.req({ url: `/v1/accounts/${c.id}` })).body.status, 'REJECTED');
    expectValidation(await co.req({ method: 'POST', url: `/v1/accounts/${c.id}/validate`, body: { otp: '123456' } }), 'status');

    // Without authorization the holder never got the request.
    const d = (await create({ subtype: 'ELECTRONIC_DEPOSIT', bank_id: NEQUI, account_number: '3001230000', authorization: false })).body;
    expectValidation(await co.req({ method: 'POST', url: `/v1/accounts/${d.id}/validate`, body: { otp: '123456' } }), 'authorization');
    expectError(
      await co.req({ method: 'POST', url: '/v1/accounts/00000000-0000-4000-8000-000000000000/validate', body: {} }),
      404,
      'record_not_found',
      10002,
    );
  });

  test('delete: 204, INACTIVE, account.disconnected, then 404', async () => {
    const a = (await savings()).body;
    const del = await co.req({ method: 'DELETE', url: `/v1/accounts/${a.id}` });
    assert.equal(del.status, 204);
    assert.equal(del.raw, '');
    expectError(await co.req({ url: `/v1/accounts/${a.id}` }), 404, 'record_not_found', 10002);
    expectError(await co.req({ method: 'DELETE', url: `/v1/accounts/${a.id}` }), 404, 'record_not_found', 10002);
    const row = await h.runtime.deps.database.db
      .selectFrom('accounts')
      .select(['status', 'deleted_at'])
      .where('id', '=', a.id)
      .executeTakeFirstOrThrow();
    assert.equal(row.status, 'INACTIVE');
    assert.ok(row.deleted_at);
    const events = await eventsOf(a.id);
    assert.deepEqual(
      events.map((e) => e.type),
      ['account.pending', 'account.disconnected'],
    );
    assert.equal((events[1].data as { status: string }).status, 'INACTIVE');
    await settle();
    assert.deepEqual(await eventTypes(a.id), ['account.pending', 'account.disconnected'], 'the pending job does nothing on a deleted account');
    const list = await co.req({ url: `/v1/accounts?customer_id=${customer.id}&per_page=100` });
    assert.equal(
      list.body.data.some((x: { id: string }) => x.id === a.id),
      false,
    );
    expectError(await co.req({ method: 'DELETE', url: `/v1/accounts/${a.id}`, key: null }), 401, 'unauthenticated', 10000);
  });

  test('instant-key accounts', async () => {
    const k = await create({ subtype: 'KEY', account_number: '@Ana.Gomez', authorization: true });
    assert.equal(k.status, 200, k.raw);
    assert.equal(k.body.subtype, 'KEY');
    assert.equal(k.body.bank_id, BANCOLOMBIA, 'the sandbox directory names the bank of a known key');
    assert.equal(k.body.account_number, '****omez');
    const phone = await create({ subtype: 'KEY', account_number: '+573001234567', bank_id: NU });
    assert.equal(phone.status, 200, phone.raw);
    assert.equal(phone.body.bank_id, NU);
    const unknown = await create({ subtype: 'KEY', account_number: '@nadie.aqui' });
    assert.equal(unknown.status, 200, unknown.raw);
    assert.equal(unknown.body.bank_id, null, 'the bank is optional for a key');
    assert.equal(unknown.body.bank, null);
    await settle();
    assert.equal((await co.req({ url: `/v1/accounts/${k.body.id}` })).body.status, 'ACTIVE');
    expectValidation(await create({ subtype: 'KEY', account_number: 'ana gomez' }), 'account_number');
    expectValidation(await create({ subtype: 'KEY', account_number: '@a' }), 'account_number');
  });

  test('WALLET accounts point at another company balance and the platform bank', async () => {
    const other = await h.company('Aliado SAS');
    const w = await create({ subtype: 'WALLET', account_number: other.company.id, authorization: true });
    assert.equal(w.status, 200, w.raw);
    assert.equal(w.body.bank_id, PLATFORM_BANK_ID);
    assert.equal(w.body.bank.name, 'Recaudo');
    assert.equal(w.body.account_number, `****${other.company.id.slice(-4)}`);
    const stored = await h.runtime.deps.database.db
      .selectFrom('accounts')
      .select('wallet_company_id')
      .where('id', '=', w.body.id)
      .executeTakeFirstOrThrow();
    assert.equal(stored.wallet_company_id, other.company.id);
    const explicit = await create({ subtype: 'WALLET', account_number: other.company.id, bank_id: PLATFORM_BANK_ID });
    assert.equal(explicit.status, 200, explicit.raw);
    await settle();
    assert.equal((await co.req({ url: `/v1/accounts/${w.body.id}` })).body.status, 'ACTIVE');

    expectValidation(await create({ subtype: 'WALLET', account_number: co.company.id }), 'account_number');
    expectValidation(await create({ subtype: 'WALLET', account_number: 'cmp_doesnotexist' }), 'account_number');
    expectValidation(await create({ subtype: 'WALLET', account_number: '1234567890' }), 'account_number');
    expectValidation(await create({ subtype: 'WALLET', account_number: other.company.id, bank_id: BANCOLOMBIA }), 'bank_id');
  });

  test('validation errors name each field', async () => {
    const empty = await co.req({ url: '/v1/accounts', body: {} });
    expectValidation(empty, 'subtype', 'account_number', 'customer_id');
    expectValidation(await savings({ subtype: 'CREDIT' }), 'subtype');
    expectValidation(await savings({ customer_id: 'nope' }), 'customer_id');
    expectValidation(await savings({ customer_id: '00000000-0000-4000-8000-000000000000' }), 'customer_id');
    const stranger = await h.company('Stranger SAS');
    const theirs = await newCustomer(stranger);
    expectValidation(await savings({ customer_id: theirs.id }), 'customer_id');
    const liveCustomer = await newCustomer(co, 'live');
    expectValidation(await savings({ customer_id: liveCustomer.id }), 'customer_id');
    expectValidation(await savings({ bank_id: null }), 'bank_id');
    expectValidation(await create({ subtype: 'CHECKING', account_number: '123456789' }), 'bank_id');
    expectValidation(await savings({ bank_id: 'x' }), 'bank_id');
    expectValidation(await savings({ bank_id: '00000000-0000-4000-8000-000000000000' }), 'bank_id');
    expectValidation(await savings({ bank_id: PLATFORM_BANK_ID }), 'bank_id');
    expectValidation(await create({ subtype: 'CHECKING', bank_id: NEQUI, account_number: '3001234567' }), 'bank_id');
    expectValidation(await create({ subtype: 'ELECTRONIC_DEPOSIT', bank_id: NU, account_number: '3001234567' }), 'bank_id');
    expectValidation(await savings({ bank_id: CITIBANK }), 'bank_id');
    expectValidation(await savings({ account_number: '12ab' }), 'account_number');
    expectValidation(await savings({ account_number: '' }), 'account_number');
    expectValidation(await savings({ authorization: 'maybe' }), 'authorization');
    expectValidation(await savings({ related_customer_id: '00000000-0000-4000-8000-000000000000' }), 'related_customer_id');
    expectValidation(await savings({ related_customer_id: customer.id }), 'related_customer_id');
    expectValidation(await savings({ title: 'x'.repeat(256) }), 'title');
    const both = await savings({ customer_id: '00000000-0000-4000-8000-000000000000', bank_id: '00000000-0000-4000-8000-000000000000' });
    expectValidation(both, 'customer_id', 'bank_id');

    const noKey = await co.req({ url: '/v1/accounts', body: { subtype: 'SAVINGS' }, idem: false });
    expectError(noKey, 409, 'idempotency_error', 10003);
    expectError(await co.req({ url: '/v1/accounts', body: {}, key: null }), 401, 'unauthenticated', 10000);
  });

  test('optional fields: aliases, null means absent, related customer', async () => {
    const related = await newCustomer();
    const r1 = await savings({ re_enrollment: true, related_customer_id: related.id, external_id: null, title: null });
    assert.equal(r1.status, 200, r1.raw);
    assert.equal(r1.body.re_enroll, true);
    assert.equal(r1.body.related_customer_id, related.id);
    assert.equal(r1.body.external_id, null);
    assert.equal(r1.body.title, 'Bancolombia ****8901');
    assert.equal((await savings({ re_enroll: true })).body.re_enroll, true);
    assert.equal((await savings({ 're-enrollment': false })).body.re_enroll, false);
    assert.equal((await savings({ authorization: 'true', unknown: 1 })).body.authorization, true);
    const viaAlias = await savings({ related_to: related.id });
    assert.equal(viaAlias.body.related_customer_id, related.id);
  });

  test('lists: filters, limit, envelope, customer collection', async () => {
    const c2 = await h.company('Lists SAS');
    const alice = await newCustomer(c2);
    const bob = await newCustomer(c2);
    const mk = (cust: { id: string }, number: string, authorization = true) =>
      c2.req({
        url: '/v1/accounts',
        body: { subtype: 'SAVINGS', bank_id: BANCOLOMBIA, account_number: number, customer_id: cust.id, authorization },
      });
    for (const n of ['1111111111', '2222222222', '3333339999']) {
      assert.equal((await mk(alice, n)).status, 200);
      h.clock.advance(10);
    }
    await mk(bob, '4444444444', false);
    await settle();

    const all = await c2.req({ url: '/v1/accounts' });
    assert.equal(all.status, 200, all.raw);
    assert.equal(all.body.total, 4);
    assert.equal(all.body.path, 'http://recaudo.test/v1/accounts');
    for (const k of ['data', 'current_page', 'first_page_url', 'from', 'next_page_url', 'path', 'per_page', 'prev_page_url', 'to'])
      assert.ok(k in all.body, k);
    assert.equal(all.body.data[0].customer_id, bob.id, 'newest first');

    const ofAlice = await c2.req({ url: `/v1/accounts?customer_id=${alice.id}` });
    assert.equal(ofAlice.body.total, 3);
    const bracket = await c2.req({ url: `/v1/accounts?filter[customer_id]=${alice.id}&filter[status]=ACTIVE` });
    assert.deepEqual(bracket.body.data.map((a: { account_number: string }) => a.account_number).sort(), ['****1111', '****2222']);
    const rejected = await c2.req({ url: '/v1/accounts?status=REJECTED' });
    assert.deepEqual(
      rejected.body.data.map((a: { account_number: string }) => a.account_number),
      ['****9999'],
    );
    const active = await c2.req({ url: '/v1/accounts?status=active' });
    assert.equal(active.body.total, 3, 'status is case-insensitive (two enrolled, one payout destination)');

    const limited = await c2.req({ url: '/v1/accounts?limit=2&page=2&sort=created_at' });
    assert.equal(limited.body.per_page, 2);
    assert.equal(limited.body.current_page, 2);
    assert.deepEqual(
      limited.body.data.map((a: { account_number: string }) => a.account_number),
      ['****9999', '****4444'],
    );
    assert.match(limited.body.prev_page_url, /limit=2/);
    assert.equal((await c2.req({ url: '/v1/accounts?limit=100' })).status, 200);
    expectValidation(await c2.req({ url: '/v1/accounts?limit=101' }), 'limit');
    expectValidation(await c2.req({ url: '/v1/accounts?per_page=0' }), 'per_page');
    expectValidation(await c2.req({ url: '/v1/accounts?status=DELETED' }), 'status');
    expectValidation(await c2.req({ url: '/v1/accounts?filter[status]=nope' }), 'filter[status]');
    expectValidation(await c2.req({ url: '/v1/accounts?customer_id=abc' }), 'customer_id');
    expectError(await c2.req({ url: '/v1/accounts?filter[bank_id]=x' }), 400);
    expectError(await c2.req({ url: '/v1/accounts?sort=status' }), 400);
    assert.equal((await c2.req({ url: '/v1/accounts?foo=bar' })).status, 200);
    assert.equal((await c2.req({ url: '/v1/accounts', env: 'live' })).body.total, 0, 'test data never shows in live lists');
    assert.equal((await co.req({ url: `/v1/accounts?customer_id=${alice.id}` })).body.total, 0, 'other companies see nothing');

    const coll = await c2.req({ url: `/v1/customers/${alice.id}/accounts?status=ACTIVE` });
    assert.equal(coll.status, 200, coll.raw);
    assert.equal(coll.body.total, 2);
    assert.equal(coll.body.path, `http://recaudo.test/v1/customers/${alice.id}/accounts`);
    const bobs = await c2.req({ url: `/v1/customers/${bob.id}/accounts?limit=1` });
    assert.equal(bobs.body.total, 1);
    assert.equal(bobs.body.data[0].customer.id, bob.id);
    expectError(await c2.req({ url: `/v1/customers/${bob.id}/accounts?filter[customer_id]=${alice.id}` }), 400);
    expectError(await c2.req({ url: '/v1/customers/00000000-0000-4000-8000-000000000000/accounts' }), 404, 'record_not_found', 10002);
    expectError(await c2.req({ url: '/v1/customers/nope/accounts' }), 404, 'record_not_found', 10002);
  });

  test('instant-key lookup (sandbox directory)', async () => {
    const ana = await co.req({ url: '/v1/accounts/rtkey/@ana.gomez' });
    assert.equal(ana.status, 200, ana.raw);
    assert.deepEqual(ana.body, {
      document_type: 'CC',
      document_number: '1020304050',
      first_name: 'Ana',
      last_name: 'Gómez',
      status: 'ACTIVE',
      key_type: 'ALPHANUM',
      key_value: '@ana.gomez',
      bank: { id: BANCOLOMBIA, name: 'Bancolombia', logo: `http://recaudo.test/v1/banks/${BANCOLOMBIA}/logo.svg` },
    });
    assert.deepEqual((await co.req({ url: '/v1/accounts/rtkey/%40ANA.GOMEZ' })).body, ana.body);
    const phone = await co.req({ url: '/v1/accounts/rtkey/%2B573001234567' });
    assert.equal(phone.body.key_type, 'PHONE');
    assert.equal(phone.body.bank.id, NEQUI);
    assert.equal((await co.req({ url: '/v1/accounts/rtkey/3109876543' })).body.bank.name, 'Daviplata');
    assert.equal((await co.req({ url: '/v1/accounts/rtkey/maria.lopez@example.com' })).body.key_type, 'EMAIL');
    assert.equal((await co.req({ url: '/v1/accounts/rtkey/1032456789' })).body.key_type, 'ID');
    assert.equal((await co.req({ url: '/v1/accounts/rtkey/@cuenta.cerrada' })).body.status, 'INACTIVE');
    for (const entry of SANDBOX_KEY_DIRECTORY) {
      const res = await co.req({ url: `/v1/accounts/rtkey/${encodeURIComponent(entry.key_value)}` });
      assert.equal(res.status, 200, `${entry.key_value}: ${res.raw}`);
      assert.equal(res.body.key_value, entry.key_value);
    }
    expectError(await co.req({ url: '/v1/accounts/rtkey/@nadie.aqui' }), 404, 'record_not_found', 10002);
    expectError(await co.req({ url: '/v1/accounts/rtkey/not a key' }), 404, 'record_not_found', 10002);
    // Live has no key directory without a connector: refused, never a sandbox answer (PRODUCT.md "Live money").
    const live = await co.req({ url: '/v1/accounts/rtkey/@ana.gomez', env: 'live' });
    expectError(live, 422, 'rail_not_configured', 10900);
    assert.equal(live.body.rail, 'key_directory');
    expectError(await co.req({ url: '/v1/accounts/rtkey/@ana.gomez', key: null }), 401, 'unauthenticated', 10000);
  });

  test('scoping: other company and other environment', async () => {
    const a = (await savings({ authorization: false })).body;
    const nequi = (await create({ subtype: 'ELECTRONIC_DEPOSIT', bank_id: NEQUI, account_number: '3005550000', authorization: true })).body;
    const other = await h.company('Other SAS');
    for (const req of [
      { url: `/v1/accounts/${a.id}` },
      { method: 'DELETE' as const, url: `/v1/accounts/${a.id}` },
      { method: 'POST' as const, url: `/v1/accounts/${nequi.id}/validate`, body: { otp: '123456' } },
      { url: `/v1/customers/${customer.id}/accounts` },
    ]) {
      await expectScoped(co, other, req);
    }
    assert.equal((await co.req({ url: `/v1/accounts/${a.id}` })).body.status, 'ACTIVE', 'nothing changed');
    assert.equal((await co.req({ url: `/v1/accounts/${nequi.id}` })).body.status, 'PENDING', 'nothing changed');
    expectError(await co.req({ url: '/v1/accounts/not-a-uuid' }), 404, 'record_not_found', 10002);
    expectError(await co.req({ method: 'DELETE', url: '/v1/accounts/not-a-uuid' }), 404, 'record_not_found', 10002);
    expectError(await co.req({ url: '/v1/accounts/00000000-0000-4000-8000-000000000000' }), 404, 'record_not_found', 10002);
    expectError(await co.req({ url: `/v1/accounts/${a.id}`, key: 'sk_test_invalid' }), 404, 'record_not_found', 10002);
  });
});
