import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHarness, expectError, expectValidation, type Company, type Harness } from '../../../test/harness.ts';
import { installFakeLiveConnector } from '../../../test/fakes/live-connectors.ts';
import { expectScoped } from '../../../test/auth-matrix.ts';
import { createCustomer } from '../../../test/support/cards.ts';
import { getPage, postForm, tokenOf } from '../../../test/support/pages.ts';
import { parseEmvco } from '../../rails/emvco.ts';
import { balance, chargeEvents, runExpireJobs } from '../../../test/support/charges.ts';
import { sql } from 'kysely';
import { createSandboxMoneyRails } from '../../rails/index.ts';
import { RECONCILE_JOB } from './jobs.ts';
import { runReconcile } from './settle.ts';

/** POST /v1/charges/rtkey: the instant-key QR (docs/charges.md "Instant key"). */
describe('rtkey (instant-key QR) charges', () => {
  let h: Harness;
  let co: Company;
  let other: Company;
  let customer: string;
  const create = (body: Record<string, unknown>, env: 'test' | 'live' = 'test', c: Company = co) =>
    c.req({ url: '/v1/charges/rtkey', env, body: { customer_id: customer, ...body } });
  const pathOf = (url: string) => new URL(url).pathname;
  const rtkeyCount = async () => (await co.req({ url: '/v1/charges?filter[payment_method_type]=rtkey&per_page=1' })).body.total as number;

  before(async () => {
    h = await createHarness();
    co = await h.company('Café Ñandú SAS');
    // Live calls in these tests run through a stand-in connector (without one: rail_not_configured, test/live-money.test.ts).
    installFakeLiveConnector(h.runtime.deps, { companyId: co.company.id });
    other = await h.company('Otra SAS');
    customer = await createCustomer(co);
  });
  after(() => h.close());

  test('answers processing with qr {payload, image}: an EMVCo payload with a valid CRC-16, a PNG; url; expires_at', async () => {
    const res = await create({ amount: 150000.5, expires_in: 45, reference: 'FAC-2025-0012', external_id: 'pedido-9' });
    assert.equal(res.status, 200, res.raw);
    const c = res.body;
    assert.equal(c.status, 'processing');
    assert.equal(c.payment_method_type, 'rtkey');
    assert.equal(c.amount, 150000.5);
    assert.equal(c.reference, 'FAC-2025-0012');
    assert.equal(c.external_id, 'pedido-9');
    assert.equal(c.title, 'Pago con código QR');
    assert.equal(c.url, `http://recaudo.test/pay/${c.id}`);
    assert.equal(c.network_id, `sbx_rtkey_${c.id}`);
    assert.equal(new Date(c.expires_at).getTime() - new Date(c.created_at).getTime(), 45 * 60_000);

    const { tags, order, crcValid } = parseEmvco(c.qr.payload);
    assert.ok(crcValid, 'tag 63 is the CRC-16/CCITT-FALSE of everything before it');
    assert.deepEqual(order, ['00', '01', '26', '52', '53', '54', '58', '59', '60', '62', '63']);
    assert.equal(tags['00'], '01');
    assert.equal(tags['01'], '12');
    assert.ok(tags['26'].includes('CO.RECAUDO.RTKEY'));
    assert.ok(tags['26'].includes(c.network_id));
    assert.equal(tags['53'], '170');
    assert.equal(tags['54'], '150000.50');
    assert.equal(tags['58'], 'CO');
    assert.equal(tags['59'], 'Cafe Nandu SAS');
    assert.equal(tags['62'], '0513FAC-2025-0012');
    assert.match(c.qr.image, /^data:image\/png;base64,/);
    const png = Buffer.from(c.qr.image.split(',')[1], 'base64');
    assert.equal(png.subarray(1, 4).toString('ascii'), 'PNG');

    assert.deepEqual(
      (await chargeEvents(h, co, c.id)).map((e) => `${e.type}:${e.data.status}`),
      ['charge.created:created', 'charge.processing:processing'],
    );
    const events = await chargeEvents(h, co, c.id);
    assert.equal(events[1].data.qr.payload, c.qr.payload, 'the event carries the QR');
    assert.deepEqual((await co.req({ url: `/v1/charges/${c.id}` })).body, c);
    assert.equal((await co.req({ url: `/v1/payment-intents/${c.id}` })).body.method, 'rtkey');

    // Without a reference the tag 62 label is the charge id without its prefix; expires_in defaults to 30.
    const plain = (await create({ amount: 1000 })).body;
    assert.equal(parseEmvco(plain.qr.payload).tags['62'], `05${25}${plain.id.slice(3, 28)}`);
    assert.equal(new Date(plain.expires_at).getTime() - new Date(plain.created_at).getTime(), 30 * 60_000);
  });

  test('rules: amount ≥ 1000 and below 11,552,000, expires_in 5–64800 whole minutes, a customer, test_scenario only with a test key', async () => {
    expectValidation(await create({ amount: 999 }), 'amount');
    expectValidation(await create({ amount: 'mil' }), 'amount');
    expectValidation(await create({ amount: 5000, expires_in: 4 }), 'expires_in');
    expectValidation(await create({ amount: 5000, expires_in: 64801 }), 'expires_in');
    expectValidation(await create({ amount: 5000, expires_in: 10.5 }), 'expires_in');
    expectValidation(await create({ amount: 5000, expires_in: '30' }), 'expires_in');
    expectValidation(await create({ amount: 5000, reference: 'x'.repeat(26) }), 'reference');
    expectValidation(await create({ amount: 5000, customer_id: await createCustomer(other) }), 'customer_id');
    expectValidation(await create({ amount: 5000, test_scenario: 'nope' }), 'test_scenario');
    expectValidation(
      await create({ amount: 5000, customer_id: await createCustomer(co, 'live'), test_scenario: 'qr_failure' }, 'live'),
      'test_scenario',
    );
    // SPEC.md "Limits": an instant-key movement is below COP 11,552,000 (the limit itself is refused).
    const before = (await co.req({ url: '/v1/charges?filter[payment_method_type]=rtkey' })).body.total;
    const atLimit = await create({ amount: 11_552_000 });
    expectValidation(atLimit, 'amount');
    assert.match(atLimit.body.errors.amount[0], /less than/);
    expectValidation(await create({ amount: '11552000.01' }), 'amount');
    assert.equal((await co.req({ url: '/v1/charges?filter[payment_method_type]=rtkey' })).body.total, before, 'no charge');
    const below = await create({ amount: 11_551_999.99 });
    assert.equal(below.status, 200, below.raw);
    assert.equal(below.body.amount, 11_551_999.99);
    for (const minutes of [5, 64800]) {
      const ok = await create({ amount: 5000, expires_in: minutes });
      assert.equal(ok.status, 200, ok.raw);
      assert.equal(new Date(ok.body.expires_at).getTime() - new Date(ok.body.created_at).getTime(), minutes * 60_000);
    }
  });

  test('a failed registration is 400 90100 and creates no charge (amount ending in 13 pesos, or test_scenario qr_failure)', async () => {
    const before = await rtkeyCount();
    const eventsBefore = await h.runtime.deps.database.db.selectFrom('events').select('id').where('company_id', '=', co.company.id).execute();
    for (const body of [{ amount: 1013 }, { amount: 25013 }, { amount: '4013.00' }, { amount: 5000, test_scenario: 'qr_failure' }]) {
      const res = await create(body);
      expectError(res, 400, 'qr_generation_failed', 90100);
      assert.match(res.body.message, /No charge was created/);
    }
    assert.equal(await rtkeyCount(), before, 'no charge');
    const eventsAfter = await h.runtime.deps.database.db.selectFrom('events').select('id').where('company_id', '=', co.company.id).execute();
    assert.equal(eventsAfter.length, eventsBefore.length, 'no event');
    const stuck = await h.runtime.deps.database.db
      .selectFrom('idempotency_keys')
      .select('key')
      .where('company_id', '=', co.company.id)
      .where('status_code', 'is', null)
      .execute();
    assert.deepEqual(stuck, [], 'the claim was released: the same key may be retried');

    // With cents it registers normally. (A live key never reaches the sandbox or its triggers: its
    // connector decides, or it is refused with rail_not_configured, test/live-money.test.ts.)
    assert.equal((await create({ amount: 1013.5 })).status, 200);
    // The same idempotency value works once the failure is gone.
    const failed = await co.req({ url: '/v1/charges/rtkey', body: { customer_id: customer, amount: 2013 }, idem: 'rtkey-retry' });
    expectError(failed, 400, 'qr_generation_failed', 90100);
    const retried = await co.req({ url: '/v1/charges/rtkey', body: { customer_id: customer, amount: 2014 }, idem: 'rtkey-retry' });
    assert.equal(retried.status, 200, retried.raw);
  });

  test('a registration whose answer never comes: 400 90100, no charge, and the reconciler withdraws the QR at the scheme', async () => {
    const shop = await h.company('QR Perdido SAS');
    const buyer = await createCustomer(shop);
    const registered: string[] = [];
    const withdrawn: string[] = [];
    const sandbox = createSandboxMoneyRails(h.runtime.deps.config, h.clock).rtkey;
    // A scheme that registers the QR and then loses its answer (a timeout on the way back).
    const remove = h.runtime.deps.rails.connectors.install(
      'rtkey',
      {
        ...sandbox,
        name: 'lossy',
        registerQr: async (r) => {
          registered.push(r.reference);
          throw new Error('socket hang up');
        },
        cancel: async (reference) => {
          withdrawn.push(reference);
        },
        refund: sandbox.refund.bind(sandbox),
      },
      { environment: 'test', companyId: shop.company.id },
    );
    try {
      const res = await shop.req({ url: '/v1/charges/rtkey', body: { customer_id: buyer, amount: 5000 } });
      expectError(res, 400, 'qr_generation_failed', 90100);
      assert.equal(registered.length, 1);
      const listed = await shop.req({ url: '/v1/charges?filter[payment_method_type]=rtkey' });
      assert.equal(listed.body.data.length, 0, 'no charge');
      const jobs = await h.runtime.deps.database.db
        .selectFrom('jobs')
        .select(['id', 'payload'])
        .where('kind', '=', RECONCILE_JOB)
        .where(sql<string>`payload->>'charge_id'`, '=', registered[0])
        .execute();
      assert.equal(jobs.length, 1, 'the safety job was committed with the claim');
      await runReconcile(h.runtime.deps, jobs[0].payload);
      assert.deepEqual(withdrawn, registered, 'the QR no charge holds is withdrawn by its reference');
      // A registration that answers leaves no safety job behind.
      h.runtime.deps.rails.connectors.install('rtkey', sandbox, { environment: 'test', companyId: shop.company.id });
      const ok = await shop.req({ url: '/v1/charges/rtkey', body: { customer_id: buyer, amount: 5000 } });
      assert.equal(ok.status, 200, ok.raw);
      const left = await h.runtime.deps.database.db
        .selectFrom('jobs')
        .select('id')
        .where('kind', '=', RECONCILE_JOB)
        .where(sql<string>`payload->>'charge_id'`, '=', ok.body.id)
        .execute();
      assert.deepEqual(left, []);
    } finally {
      remove();
    }
  });

  test('the same x-idempotency replays the charge and its QR', async () => {
    const first = await co.req({ url: '/v1/charges/rtkey', body: { customer_id: customer, amount: 7700 }, idem: 'rtkey-idem' });
    const again = await co.req({ url: '/v1/charges/rtkey', body: { customer_id: customer, amount: 7700 }, idem: 'rtkey-idem' });
    assert.equal(again.status, 200);
    assert.deepEqual(again.body, first.body);
  });

  test('the QR page pays it with "Simular pago": paid, charge.paid, the ledger collects', async () => {
    const c = (await create({ amount: 12000, reference: 'PEDIDO-1' })).body;
    const before = await balance(co);
    const page = await getPage(h, pathOf(c.url));
    assert.equal(page.status, 200);
    assert.match(page.body, /Escanea para pagar \$ 12\.000/);
    assert.match(page.body, /Simular pago \(pruebas\)/);
    assert.ok(page.body.includes(c.qr.payload), 'the payload to copy');
    assert.doesNotMatch(page.body, /Cancelar y elegir otro medio/);
    const paid = await postForm(h, pathOf(c.url), { token: tokenOf(page.body), action: 'approve' });
    assert.equal(paid.status, 303);
    assert.equal(paid.location, `/pay/${c.id}`);
    const got = (await co.req({ url: `/v1/charges/${c.id}` })).body;
    assert.equal(got.status, 'paid');
    assert.equal((await balance(co)).available, before.available + 12000);
    assert.deepEqual(
      (await chargeEvents(h, co, c.id)).map((e) => e.type),
      ['charge.created', 'charge.processing', 'charge.paid'],
    );
    assert.match((await getPage(h, pathOf(c.url))).body, /Pago recibido/);
    // rtkey has no rejection on the QR page.
    const other = (await create({ amount: 12001 })).body;
    const p2 = await getPage(h, pathOf(other.url));
    const rejected = await postForm(h, pathOf(other.url), { token: tokenOf(p2.body), action: 'reject' });
    assert.equal(rejected.status, 303);
    assert.equal((await co.req({ url: `/v1/charges/${other.id}` })).body.status, 'processing');
  });

  test('expiry by the scheduler: failed with remarks EXPIRED (charge.failed); a late payment is refused', async () => {
    const c = (await create({ amount: 8000, expires_in: 5 })).body;
    const late = (await create({ amount: 8001, expires_in: 5 })).body;
    const page = await getPage(h, pathOf(late.url));
    h.clock.advance(4 * 60_000);
    assert.equal(await runExpireJobs(h, [c.id]), 0);
    assert.equal((await co.req({ url: `/v1/charges/${c.id}` })).body.status, 'processing');
    h.clock.advance(60_000);
    assert.equal(await runExpireJobs(h, [c.id]), 1);
    const expired = (await co.req({ url: `/v1/charges/${c.id}` })).body;
    assert.equal(expired.status, 'failed');
    assert.equal(expired.remarks, 'EXPIRED');
    assert.ok(expired.failed_at);
    assert.equal(expired.cancelled_at, null);
    const events = await chargeEvents(h, co, c.id);
    assert.deepEqual(
      events.map((e) => e.type),
      ['charge.created', 'charge.processing', 'charge.failed'],
    );
    assert.equal(events[2].data.remarks, 'EXPIRED');
    assert.equal((await co.req({ url: `/v1/payment-intents/${c.id}` })).body.status, 'declined');
    assert.equal(await runExpireJobs(h, [c.id]), 0, 'once');

    // "Simular pago" after the expiry, before the job: it expires instead of paying.
    const answer = await postForm(h, pathOf(late.url), { token: tokenOf(page.body), action: 'approve' });
    assert.equal(answer.status, 303);
    const lateCharge = (await co.req({ url: `/v1/charges/${late.id}` })).body;
    assert.equal(lateCharge.status, 'failed');
    assert.equal(lateCharge.remarks, 'EXPIRED');
    assert.match((await getPage(h, pathOf(late.url))).body, /Este pago venció/);
    assert.equal(await runExpireJobs(h, [late.id]), 1, 'the job finds it settled and does nothing more');
    assert.equal((await chargeEvents(h, co, late.id)).filter((e) => e.type === 'charge.failed').length, 1);
  });

  test('scoping: another company sees nothing, the live key gets environment_key_mismatch', async () => {
    const c = (await create({ amount: 9000 })).body;
    await expectScoped(co, other, { url: `/v1/charges/${c.id}` });
    await expectScoped(co, other, { url: `/v1/charges/${c.id}/cancel`, body: {} });
    assert.equal((await co.req({ url: `/v1/charges/${c.id}` })).body.status, 'processing');
  });
});
