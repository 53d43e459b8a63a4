import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHarness, ENGINE, expectError, expectValidation, type Company, type Harness } from '../../../test/harness.ts';
import { installFakeLiveConnector } from '../../../test/fakes/live-connectors.ts';
import { expectScoped } from '../../../test/auth-matrix.ts';
import { createCustomer } from '../../../test/support/cards.ts';
import {
  BANCOLOMBIA,
  balance,
  banklinkBody,
  chargeBody,
  chargeEvents,
  createAccount,
  customerWithDocument,
  DAVIPLATA,
  payer,
  runExpireJobs,
  walletAccount,
} from '../../../test/support/charges.ts';

const APPROVES = '+573991111111';
const DECLINES = '+573992222222';

/** Wallet request-to-pay: walleta and walletb (docs/charges.md "Wallet request-to-pay"). */
describe('wallet request-to-pay', () => {
  let h: Harness;
  let co: Company;
  let other: Company;

  before(async () => {
    h = await createHarness();
    co = await h.company('Billeteras SAS');
    // Live calls in these tests run through a stand-in connector (without one: rail_not_configured, test/live-money.test.ts).
    installFakeLiveConnector(h.runtime.deps, { companyId: co.company.id });
    other = await h.company('Otra SAS');
  });
  after(() => h.close());

  describe('walleta', () => {
    let customer: string;
    let n = 0;
    const ext = () => `orden-${++n}-${Date.now().toString(36)}`;
    const request = (body: Record<string, unknown>, c: Company = co, env: 'test' | 'live' = 'test') =>
      c.req({ url: '/v1/request-to-pay/walleta', env, body: { amount: 25000, customer_id: customer, phone: APPROVES, external_id: ext(), ...body } });
    const confirm = (id: string, c: Company = co) => c.req({ url: `/v1/request-to-pay/walleta/${id}/confirm`, body: {}, idem: false });

    before(async () => {
      customer = await createCustomer(co);
    });

    test('a request is a walleta charge in processing; confirm (no x-idempotency) pays it: charge.paid, the ledger collects', async () => {
      const before = await balance(co);
      const res = await request({ external_id: 'orden-a-1', metadata: { tienda: 'centro' } });
      assert.equal(res.status, 200, res.raw);
      const r = res.body;
      assert.match(r.id, /^ch_/);
      assert.equal(r.status, 'processing');
      assert.equal(r.payment_method_type, 'walleta');
      assert.equal(r.phone, APPROVES);
      assert.equal(r.external_id, 'orden-a-1');
      assert.equal(r.amount, 25000);
      assert.equal(r.url, null);
      assert.equal(r.expires_at, null);
      assert.equal(r.network_id, `sbx_walleta_${r.id}`);
      assert.deepEqual(
        (await chargeEvents(h, co, r.id)).map((e) => e.type),
        ['charge.created', 'charge.processing'],
      );

      const confirmed = await confirm(r.id);
      assert.equal(confirmed.status, 200, confirmed.raw);
      assert.equal(confirmed.body.status, 'paid');
      assert.ok(confirmed.body.paid_at);
      assert.equal((await balance(co)).available, before.available + 25000);
      assert.deepEqual(
        (await chargeEvents(h, co, r.id)).map((e) => e.type),
        ['charge.created', 'charge.processing', 'charge.paid'],
      );
      assert.equal((await co.req({ url: `/v1/payment-intents/${r.id}` })).body.status, 'approved');

      // Confirming again answers the request as it is, and changes nothing.
      const again = await confirm(r.id);
      assert.equal(again.status, 200);
      assert.deepEqual(again.body, confirmed.body);
      assert.equal((await chargeEvents(h, co, r.id)).length, 3);
      // The intent id works too.
      assert.equal((await confirm(r.payment_intent_id)).body.id, r.id);
    });

    test('the declining phone: confirm answers 200 with status failed and the reason in remarks', async () => {
      const r = (await request({ phone: DECLINES })).body;
      const res = await confirm(r.id);
      assert.equal(res.status, 200, res.raw);
      assert.equal(res.body.status, 'failed');
      assert.equal(res.body.remarks, 'TRANSACTION_REJECTED');
      assert.deepEqual(
        (await chargeEvents(h, co, r.id)).map((e) => e.type),
        ['charge.created', 'charge.processing', 'charge.failed'],
      );
    });

    test('rules: amount ≥ 500 and within the company maximum, a +57 mobile phone, external_id, a customer', async () => {
      expectValidation(await request({ amount: 499.99 }), 'amount');
      assert.equal((await request({ amount: 500 })).status, 200);
      expectValidation(await request({ phone: '3991111111' }), 'phone');
      expectValidation(await request({ phone: '+57399111111' }), 'phone');
      expectValidation(await request({ phone: '+13991111111' }), 'phone');
      expectValidation(await request({ phone: '+576011234567' }), 'phone');
      expectValidation(await request({ external_id: undefined }), 'external_id');
      expectValidation(await request({ external_id: '' }), 'external_id');
      expectValidation(await request({ customer_id: await createCustomer(other) }), 'customer_id');
      await h.runtime.deps.database.db.updateTable('companies').set({ max_transaction_cop: 100_000n }).where('id', '=', co.company.id).execute();
      try {
        expectValidation(await request({ amount: 100_000.01 }), 'amount');
        assert.equal((await request({ amount: 100_000 })).status, 200);
      } finally {
        await h.runtime.deps.database.db
          .updateTable('companies')
          .set({ max_transaction_cop: 500_000_000n })
          .where('id', '=', co.company.id)
          .execute();
      }
    });

    test('10141 while an open request has the same external_id; once it ends the external_id is free again', async () => {
      const first = await request({ external_id: 'orden-unica' });
      assert.equal(first.status, 200);
      const dup = await request({ external_id: 'orden-unica', amount: 9999, phone: DECLINES });
      expectError(dup, 422, 'request_to_pay_in_progress', 10141);
      assert.equal(dup.body.previous_payment_id, first.body.id);
      // Another external_id, another company, the other environment: not the same request.
      assert.equal((await request({ external_id: 'orden-otra' })).status, 200);
      assert.equal(
        (
          await other.req({
            url: '/v1/request-to-pay/walleta',
            body: { amount: 25000, customer_id: await createCustomer(other), phone: APPROVES, external_id: 'orden-unica' },
          })
        ).status,
        200,
      );
      assert.equal((await request({ external_id: 'orden-unica', customer_id: await createCustomer(co, 'live') }, co, 'live')).status, 200);

      await confirm(first.body.id);
      const after = await request({ external_id: 'orden-unica' });
      assert.equal(after.status, 200, after.raw);
      // A cancelled request frees it too.
      assert.equal((await co.req({ url: `/v1/charges/${after.body.id}/cancel`, body: {} })).body.status, 'failed');
      assert.equal((await request({ external_id: 'orden-unica' })).status, 200);
    });

    test(`20 parallel requests with one external_id: one open request, 19 × 10141 (${ENGINE})`, async () => {
      const results = await Promise.all(Array.from({ length: 20 }, () => request({ external_id: 'orden-paralela' })));
      assert.equal(results.filter((r) => r.status === 200).length, 1, results.map((r) => r.status).join(','));
      for (const r of results.filter((x) => x.status !== 200)) expectError(r, 422, 'request_to_pay_in_progress', 10141);
    });

    test('confirm: 10140 for an id that is not a walleta request; scoping', async () => {
      const p = await payer(h, co);
      const card = (await co.req({ url: '/v1/charges', body: chargeBody(p.customer, { card_id: p.card }) })).body;
      expectError(await confirm(card.id), 422, 'request_to_pay_not_available', 10140);
      const link = (await co.req({ url: '/v1/charges/banklink', body: banklinkBody(p.customer) })).body;
      expectError(await confirm(link.id), 422, 'request_to_pay_not_available', 10140);
      expectError(await confirm('ch_01m800jmks947bdw72bbhg5694'), 404, 'record_not_found', 10002);
      expectError(await confirm('nada'), 404, 'record_not_found', 10002);

      const r = (await request({})).body;
      await expectScoped(co, other, { url: `/v1/request-to-pay/walleta/${r.id}/confirm`, body: {}, idem: false });
      await expectScoped(co, other, { url: `/v1/charges/${r.id}` });
      assert.equal((await co.req({ url: `/v1/charges/${r.id}` })).body.status, 'processing', 'nothing changed');
    });
  });

  describe('walletb', () => {
    let customer: string;
    let nequi: string;
    let daviplata: string;
    const request = (body: Record<string, unknown> = {}, env: 'test' | 'live' = 'test') =>
      co.req({
        url: '/v1/request-to-pay/walletb',
        env,
        body: { amount: 42000, document: '1020304050', document_type: 'CC', customer_id: customer, phone: APPROVES, ...body },
      });
    const confirm = (id: string, otp: string, c: Company = co) => c.req({ url: `/v1/request-to-pay/walletb/${id}/confirm`, body: { otp } });
    const status = async (id: string) => (await co.req({ url: `/v1/charges/${id}` })).body;
    /** Each test its own customer and wallet accounts: one open request per wallet account. */
    const freshPayer = async () => {
      customer = await customerWithDocument(co, '1020304050');
      nequi = await walletAccount(co, customer, '3991111111');
      daviplata = await walletAccount(co, customer, '3992222222', DAVIPLATA);
    };

    test('a request is a walletb charge in processing for 10 minutes; the right OTP pays it', async () => {
      await freshPayer();
      const before = await balance(co);
      const res = await request({ external_id: 'orden-b-1' });
      assert.equal(res.status, 200, res.raw);
      const r = res.body;
      assert.equal(r.status, 'processing');
      assert.equal(r.payment_method_type, 'walletb');
      assert.equal(r.account_id, nequi, 'the wallet account the phone matched');
      assert.equal(r.phone, APPROVES);
      assert.equal(r.document_type, 'CC');
      assert.equal(r.document, '1020304050');
      assert.equal(r.external_id, 'orden-b-1');
      assert.equal(new Date(r.expires_at).getTime() - new Date(r.created_at).getTime(), 10 * 60_000);
      assert.deepEqual(
        (await chargeEvents(h, co, r.id)).map((e) => e.type),
        ['charge.created', 'charge.processing'],
      );

      const paid = await confirm(r.id, '123456');
      assert.equal(paid.status, 200, paid.raw);
      assert.equal(paid.body.status, 'paid');
      assert.equal((await balance(co)).available, before.available + 42000);
      assert.deepEqual(
        (await chargeEvents(h, co, r.id)).map((e) => e.type),
        ['charge.created', 'charge.processing', 'charge.paid'],
      );
      // Settled: it takes no OTP (the same x-idempotency value replays the 200 instead).
      expectError(await confirm(r.id, '123456'), 422, 'request_to_pay_not_available', 10140);
    });

    test('a wrong OTP: 10136, the request is failed (charge.failed) and takes no other OTP', async () => {
      await freshPayer();
      const r = (await request()).body;
      const wrong = await confirm(r.id, '654321');
      expectError(wrong, 422, 'transaction_otp_invalid', 10136);
      const failed = await status(r.id);
      assert.equal(failed.status, 'failed');
      assert.equal(failed.remarks, 'OTP_INVALID');
      assert.deepEqual(
        (await chargeEvents(h, co, r.id)).map((e) => e.type),
        ['charge.created', 'charge.processing', 'charge.failed'],
      );
      // The right one now: still 10136, nothing changes.
      expectError(await confirm(r.id, '123456'), 422, 'transaction_otp_invalid', 10136);
      expectError(await confirm(r.id, '000000'), 422, 'transaction_otp_invalid', 10136);
      assert.equal((await status(r.id)).status, 'failed');
      assert.equal((await chargeEvents(h, co, r.id)).length, 3);
      // The account is free for a new request.
      assert.equal((await request()).status, 200);
    });

    test('after 10 minutes: 10148, the request is failed (EXPIRED) and stays so', async () => {
      await freshPayer();
      const r = (await request()).body;
      h.clock.advance(10 * 60_000 - 1_000);
      const early = (await request({ phone: DECLINES })).body; // the other wallet account
      h.clock.advance(1_000);
      const expired = await confirm(r.id, '123456');
      expectError(expired, 422, 'transaction_otp_expired', 10148);
      const failed = await status(r.id);
      assert.equal(failed.status, 'failed');
      assert.equal(failed.remarks, 'EXPIRED');
      assert.deepEqual(
        (await chargeEvents(h, co, r.id)).map((e) => e.type),
        ['charge.created', 'charge.processing', 'charge.failed'],
      );
      expectError(await confirm(r.id, '123456'), 422, 'transaction_otp_expired', 10148);
      expectError(await confirm(r.id, '999999'), 422, 'transaction_otp_expired', 10148);
      // The job finds it settled; the other request is still within its 10 minutes.
      assert.equal(await runExpireJobs(h, [r.id, early.id]), 1);
      assert.equal((await status(early.id)).status, 'processing');
      assert.equal((await chargeEvents(h, co, r.id)).length, 3);
    });

    test('the scheduler expires an unconfirmed request at 10 minutes (charge.failed, EXPIRED)', async () => {
      await freshPayer();
      const r = (await request()).body;
      h.clock.advance(10 * 60_000);
      assert.equal(await runExpireJobs(h, [r.id]), 1);
      const failed = await status(r.id);
      assert.equal(failed.status, 'failed');
      assert.equal(failed.remarks, 'EXPIRED');
      expectError(await confirm(r.id, '123456'), 422, 'transaction_otp_expired', 10148);
    });

    test('the declining phone with the right OTP: 200, failed TRANSACTION_REJECTED', async () => {
      await freshPayer();
      const r = (await request({ phone: DECLINES })).body;
      assert.equal(r.account_id, daviplata);
      const res = await confirm(r.id, '123456');
      assert.equal(res.status, 200, res.raw);
      assert.equal(res.body.status, 'failed');
      assert.equal(res.body.remarks, 'TRANSACTION_REJECTED');
      expectError(await confirm(r.id, '123456'), 422, 'request_to_pay_not_available', 10140);
    });

    test('10141 while an open request exists for the same wallet account; an overdue one does not count', async () => {
      await freshPayer();
      const first = (await request()).body;
      const dup = await request({ amount: 1000 });
      expectError(dup, 422, 'request_to_pay_in_progress', 10141);
      assert.equal(dup.body.previous_payment_id, first.id);
      // The customer's other wallet account is another account.
      assert.equal((await request({ phone: DECLINES })).status, 200);
      // Past its 10 minutes, before the job: the new request expires it and goes ahead.
      h.clock.advance(10 * 60_000);
      const next = await request();
      assert.equal(next.status, 200, next.raw);
      const old = await status(first.id);
      assert.equal(old.status, 'failed');
      assert.equal(old.remarks, 'EXPIRED');
      assert.deepEqual(
        (await chargeEvents(h, co, first.id)).map((e) => e.type),
        ['charge.created', 'charge.processing', 'charge.failed'],
      );
    });

    test(`20 parallel requests for one wallet account: one open request, 19 × 10141 (${ENGINE})`, async () => {
      await freshPayer();
      const results = await Promise.all(Array.from({ length: 20 }, (_, i) => request({ amount: 1000 + i })));
      assert.equal(results.filter((r) => r.status === 200).length, 1, results.map((r) => r.status).join(','));
      for (const r of results.filter((x) => x.status !== 200)) expectError(r, 422, 'request_to_pay_in_progress', 10141);
    });

    test('10126 when the document, its type or the phone does not match a wallet account of the customer', async () => {
      await freshPayer();
      expectError(await request({ document: '1020304051' }), 422, 'customer_data_invalid', 10126);
      expectError(await request({ document_type: 'CE' }), 422, 'customer_data_invalid', 10126);
      expectError(await request({ phone: '+573001112233' }), 422, 'customer_data_invalid', 10126);
      // A wallet account not confirmed by its holder (PENDING) does not count.
      await walletAccount(co, customer, '3005556677', DAVIPLATA, { validate: false });
      expectError(await request({ phone: '+573005556677' }), 422, 'customer_data_invalid', 10126);
      // Nor an account at a bank that is not a wallet (connection_type DATA).
      await createAccount(h, co, customer, { bank_id: BANCOLOMBIA, account_number: '3007778899' });
      expectError(await request({ phone: '+573007778899' }), 422, 'customer_data_invalid', 10126);
      // Nor another customer's wallet account.
      const someoneElse = await customerWithDocument(co, '79123456');
      await walletAccount(co, someoneElse, '3008889900');
      expectError(await request({ phone: '+573008889900' }), 422, 'customer_data_invalid', 10126);
      // A customer without a document on file.
      const noDocument = await createCustomer(co);
      await walletAccount(co, noDocument, '3009990011');
      expectError(await request({ customer_id: noDocument, phone: '+573009990011' }), 422, 'customer_data_invalid', 10126);
      // Nothing was created.
      const listed = await co.req({ url: `/v1/charges?filter[customer_id]=${customer}` });
      assert.equal(listed.body.total, 0);
    });

    test('rules: amount ≥ 500, document 7–11 characters, a document type, a +57 phone, a 6-character OTP', async () => {
      await freshPayer();
      expectValidation(await request({ amount: 499 }), 'amount');
      expectValidation(await request({ document: '123456' }), 'document');
      expectValidation(await request({ document: '123456789012' }), 'document');
      expectValidation(await request({ document_type: 'RUT' }), 'document_type');
      expectValidation(await request({ phone: '3991111111' }), 'phone');
      expectValidation(await request({ customer_id: await createCustomer(other) }), 'customer_id');
      const r = (await request({ amount: 500 })).body;
      assert.equal(r.status, 'processing');
      expectValidation(await confirm(r.id, '12345'), 'otp');
      expectValidation(await confirm(r.id, '1234567'), 'otp');
      expectError(
        await co.req({ url: `/v1/request-to-pay/walletb/${r.id}/confirm`, body: { otp: '123456' }, idem: false }),
        409,
        'idempotency_error',
        10003,
      );
      assert.equal((await status(r.id)).status, 'processing', 'refused requests change nothing');
      // A document of 7 and of 11 characters.
      const seven = await customerWithDocument(co, '7654321', 'CE');
      await walletAccount(co, seven, '3011234567');
      assert.equal((await request({ customer_id: seven, document: '7654321', document_type: 'CE', phone: '+573011234567' })).status, 200);
      const eleven = await customerWithDocument(co, 'AB123456789', 'PASSPORT');
      await walletAccount(co, eleven, '3021234567');
      assert.equal((await request({ customer_id: eleven, document: 'AB123456789', document_type: 'PASSPORT', phone: '+573021234567' })).status, 200);
    });

    test('confirm: 10140 for a walleta request or a card charge; scoping', async () => {
      await freshPayer();
      const walleta = (
        await co.req({
          url: '/v1/request-to-pay/walleta',
          body: { amount: 1000, customer_id: customer, phone: APPROVES, external_id: `b-${Date.now()}` },
        })
      ).body;
      expectError(await confirm(walleta.id, '123456'), 422, 'request_to_pay_not_available', 10140);
      assert.equal((await status(walleta.id)).status, 'processing');
      expectError(
        await co.req({ url: `/v1/request-to-pay/walleta/${(await request()).body.id}/confirm`, body: {}, idem: false }),
        422,
        'request_to_pay_not_available',
        10140,
      );

      await freshPayer();
      const r = (await request()).body;
      await expectScoped(co, other, { url: `/v1/request-to-pay/walletb/${r.id}/confirm`, body: { otp: '123456' } });
      await expectScoped(co, other, { url: `/v1/request-to-pay/walletb/${r.id}/confirm`, body: { otp: '000000' } });
      const after = await status(r.id);
      assert.equal(after.status, 'processing', 'other keys changed nothing');
    });
  });
});
