import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHarness, expectError, expectValidation, type Company, type Harness } from '../../../test/harness.ts';
import { expectScoped } from '../../../test/auth-matrix.ts';
import { settleIntent, startIntent } from './intents.ts';
import { activeWallet, basePayment, createPayment, eventTypes, forceStatus, paymentEvents, scopeOf } from '../../../test/support/payments.ts';

describe('payments: create', () => {
  let h: Harness;
  let co: Company;
  let partner: Company;
  let wallet: string;
  before(async () => {
    h = await createHarness();
    co = await h.company('Acme SAS');
    partner = await h.company('Aliado SAS');
    wallet = await activeWallet(h, co, partner);
  });
  after(() => h.close());

  const create = (body: Record<string, unknown>, env: 'test' | 'live' = 'test') => co.req({ url: '/v1/payments', body, env });

  test('every request field, the response, payment_link and payment.created', async () => {
    const third = await h.company('Tercero SAS');
    const expires = new Date(h.clock.now().getTime() + 86_400_000).toISOString();
    const body = {
      title: 'Factura FV-1001',
      amount: 150000.5,
      description: 'Servicio de mantenimiento de octubre',
      reference: 'FV-1001',
      external_id: 'erp-1001',
      currency: 'COP',
      phone: '+573001234567',
      email: 'Pagador@Example.com',
      template_id: 'tpl_cobro_general',
      target_wallet_id: wallet,
      partial_payment_config: { enabled: true, minimum_amount: 50000 },
      options: { rtkey: { expires_in: 60 } },
      splits: [{ wallet_id: third.company.id, percentage: 10 }],
      document_url: 'https://erp.example.com/fv-1001.pdf',
      tax: { rate: 19 },
      allows: ['card', 'rtkey', 'card'],
      expires_at: expires,
      redirect_url: 'https://shop.example.com/gracias',
      metadata: { pedido: 'A-77', cliente: 42 },
      unknown_field: 'ignored',
    };
    const res = await create(body);
    assert.equal(res.status, 200, res.raw);
    const p = res.body;
    assert.match(p.id, /^pay_[0-9a-z]{26}$/);
    assert.equal(p.status, 'pending');
    assert.equal(p.payment_link, `http://recaudo.test/pay/${p.id}`);
    assert.equal(p.amount, 150000.5);
    assert.equal(p.open_amount, false);
    assert.equal(p.amount_paid, 0);
    assert.equal(p.amount_due, 150000.5);
    assert.equal(p.currency, 'COP');
    assert.equal(p.channel, 'messaging', 'phone wins over email');
    assert.equal(p.email, 'pagador@example.com');
    assert.equal(p.template_id, 'tpl_cobro_general');
    assert.equal(p.target_wallet_id, wallet);
    assert.deepEqual(p.partial_payment_config, { enabled: true, minimum_amount: 50000 });
    assert.deepEqual(p.options, { rtkey: { expires_in: 60 } });
    assert.deepEqual(p.splits, [{ account_id: null, wallet_id: third.company.id, amount: null, percentage: 10 }]);
    assert.deepEqual(p.tax, { rate: 19, amount: 23949.66 }, 'the tax included in 150,000.50 at 19 % (150,000.50 − 126,050.84)');
    assert.deepEqual(p.allows, ['card', 'rtkey']);
    assert.equal(p.expires_at, expires);
    assert.equal(p.redirect_url, 'https://shop.example.com/gracias');
    assert.deepEqual(p.metadata, { pedido: 'A-77', cliente: '42' });
    assert.equal(p.is_test, true);
    assert.equal(p.source, 'api');
    assert.equal('unknown_field' in p, false);
    assert.equal(p.created_at, p.updated_at);

    const stored = await h.runtime.deps.database.db
      .selectFrom('payments')
      .select(['amount', 'tax_amount', 'partial_minimum'])
      .where('id', '=', p.id)
      .executeTakeFirstOrThrow();
    assert.equal(stored.amount, 15000050n, 'stored as centavos');
    assert.equal(stored.tax_amount, 2394966n);
    assert.equal(stored.partial_minimum, 5000000n);

    const events = await paymentEvents(h, co, p.id);
    assert.deepEqual(
      events.map((e) => e.type),
      ['payment.created'],
    );
    assert.deepEqual(events[0].data, p, 'the event carries the payment as the API returns it');
    assert.deepEqual((await co.req({ url: `/v1/payments/${p.id}` })).body, p);
  });

  test('the delivery channel: phone → messaging, email → email, reference → portal, else manual', async () => {
    assert.equal((await createPayment(co, { phone: '+573001234567' })).channel, 'messaging');
    assert.equal((await createPayment(co, { email: 'a@example.com' })).channel, 'email');
    assert.equal((await createPayment(co, { email: 'a@example.com', reference: 'REF-0001' })).channel, 'email');
    assert.equal((await createPayment(co, { reference: 'REF-0001' })).channel, 'portal');
    const manual = await createPayment(co, {});
    assert.equal(manual.channel, 'manual');
    assert.deepEqual(manual.allows, ['card', 'banklink', 'rtkey', 'walleta', 'walletb'], 'every method by default');
    assert.equal(manual.expires_at, null);
  });

  test('open-amount links: amount omitted with open_amount true', async () => {
    const open = await createPayment(co, { amount: undefined, open_amount: true, title: 'Donación' });
    assert.equal(open.amount, null);
    assert.equal(open.open_amount, true);
    assert.equal(open.amount_due, null);
    const lenient = await createPayment(co, { amount: null, open_amount: 'true' });
    assert.equal(lenient.open_amount, true);
    expectValidation(await create({ title: 'Donación', amount: 5000, open_amount: true }), 'amount');
    expectValidation(await create({ title: 'Donación' }), 'amount');
    expectValidation(await create({ title: 'Donación', amount: null }), 'amount');
    expectValidation(await create({ title: 'Donación', open_amount: true, partial_payment_config: { enabled: true } }), 'partial_payment_config');
    expectValidation(await create({ title: 'Donación', open_amount: true, tax: { amount: 100 } }), 'tax.amount');
    expectValidation(
      await create({ title: 'Donación', open_amount: true, splits: [{ wallet_id: partner.company.id, amount: 1000 }] }),
      'splits.0.amount',
    );
    const withShare = await createPayment(co, {
      amount: undefined,
      open_amount: true,
      splits: [{ wallet_id: partner.company.id, percentage: 12.5 }],
      tax: { rate: 19 },
    });
    assert.deepEqual(withShare.splits[0], { account_id: null, wallet_id: partner.company.id, amount: null, percentage: 12.5 });
    assert.deepEqual(withShare.tax, { rate: 19, amount: null });
  });

  test('money: pesos with at most 2 decimals, as numbers or numeric strings; minimums per currency', async () => {
    assert.equal((await createPayment(co, { amount: '15000.50' })).amount, 15000.5);
    assert.equal((await createPayment(co, { amount: 1000 })).amount, 1000);
    assert.equal((await createPayment(co, { amount: 1, currency: 'USD' })).amount, 1);
    assert.equal((await createPayment(co, { amount: 5, currency: 'MXN' })).amount, 5);
    assert.equal((await createPayment(co, { amount: 0.1 + 0.2 === 0.3 ? 1000 : 1000.1 })).amount, 1000.1);
    for (const amount of [999.99, 1000.001, -5000, 0, 'abc', '1e5', 1e21, '', true]) {
      expectValidation(await create({ title: 'Factura', amount }), 'amount');
    }
    expectValidation(await create({ title: 'Factura', amount: 0.99, currency: 'USD' }), 'amount');
    expectValidation(await create({ title: 'Factura', amount: 4.99, currency: 'MXN' }), 'amount');
    expectValidation(await create({ title: 'Factura', amount: 5000, currency: 'EUR' }), 'currency');
    expectValidation(await create({ title: 'Factura', amount: 5000, currency: 'cop' }), 'currency');
  });

  test('the per-company maximum applies to COP (default 500,000,000, configurable per company)', async () => {
    assert.equal((await createPayment(co, { amount: 500_000_000 })).amount, 500_000_000);
    expectValidation(await create({ title: 'Factura', amount: 500_000_000.01 }), 'amount');
    assert.equal((await createPayment(co, { amount: 600_000_000, currency: 'USD' })).currency, 'USD');
    const small = await h.company('Pequeña SAS');
    await h.runtime.deps.database.db.updateTable('companies').set({ max_transaction_cop: 2_000_000n }).where('id', '=', small.company.id).execute();
    expectValidation(await small.req({ url: '/v1/payments', body: { title: 'Factura', amount: 2_000_000.01 } }), 'amount');
    assert.equal((await small.req({ url: '/v1/payments', body: { title: 'Factura', amount: 2_000_000 } })).status, 200);
  });

  test('text limits: title 4–255, description 4–2000, reference 6–30, external_id 4–100', async () => {
    const cases: [string, unknown][] = [
      ['title', 'abc'],
      ['title', 'x'.repeat(256)],
      ['description', 'abc'],
      ['description', 'x'.repeat(2001)],
      ['reference', 'ABCDE'],
      ['reference', 'x'.repeat(31)],
      ['external_id', 'abc'],
      ['external_id', 'x'.repeat(101)],
    ];
    for (const [field, value] of cases) expectValidation(await create({ ...basePayment, [field]: value }), field);
    expectValidation(await create({ amount: 5000 }), 'title');
    const edges = await createPayment(co, { title: 'abcd', description: 'abcd', reference: 'ABCDEF', external_id: 'abcd' });
    assert.equal(edges.title, 'abcd');
    const longest = await createPayment(co, {
      title: 'x'.repeat(255),
      description: 'x'.repeat(2000),
      reference: 'x'.repeat(30),
      external_id: 'x'.repeat(100),
    });
    assert.equal(longest.reference.length, 30);
  });

  test('phone, email, document_url, redirect_url, allows', async () => {
    expectValidation(await create({ ...basePayment, phone: '3001234567' }), 'phone');
    expectValidation(await create({ ...basePayment, email: 'no-es-correo' }), 'email');
    expectValidation(await create({ ...basePayment, document_url: 'http://erp.example.com/a.pdf' }), 'document_url');
    expectValidation(await create({ ...basePayment, document_url: 'no url' }), 'document_url');
    expectValidation(await create({ ...basePayment, redirect_url: 'gracias' }), 'redirect_url');
    expectValidation(await create({ ...basePayment, redirect_url: 'ftp://example.com' }), 'redirect_url');
    assert.equal(
      (await createPayment(co, { redirect_url: 'http://localhost:3000/ok' })).redirect_url,
      'http://localhost:3000/ok',
      'http with a test key',
    );
    expectValidation(await create({ ...basePayment, redirect_url: 'http://shop.example.com/ok' }, 'live'), 'redirect_url');
    assert.equal((await create({ ...basePayment, redirect_url: 'https://shop.example.com/ok' }, 'live')).status, 200);
    expectValidation(await create({ ...basePayment, allows: [] }), 'allows');
    expectValidation(await create({ ...basePayment, allows: ['cash'] }), 'allows.0');
    expectValidation(await create({ ...basePayment, allows: ['card'], options: { rtkey: { expires_in: 30 } } }), 'options.rtkey');
    expectValidation(await create({ ...basePayment, options: { rtkey: { expires_in: 4 } } }), 'options.rtkey.expires_in');
    expectValidation(await create({ ...basePayment, options: { rtkey: { expires_in: 64801 } } }), 'options.rtkey.expires_in');
    assert.deepEqual((await createPayment(co, { options: { rtkey: {} } })).options, { rtkey: { expires_in: 30 } });
  });

  test('template_id: top level only, selectable, fit for the channel', async () => {
    expectValidation(await create({ ...basePayment, metadata: { template_id: 'tpl_cobro_general' } }), 'metadata.template_id');
    expectValidation(await create({ ...basePayment, metadata: [{ key: 'template_id', value: 'tpl_cobro_general' }] }), 'metadata.template_id');
    expectValidation(await create({ ...basePayment, template_id: 'tpl_no_existe' }), 'template_id');
    expectValidation(await create({ ...basePayment, template_id: 'tpl_recordatorio_pago' }), 'template_id');
    expectValidation(await create({ ...basePayment, template_id: 'tpl_cobro_promocional' }), 'template_id');
    expectValidation(await create({ ...basePayment, phone: '+573001234567', template_id: 'tpl_cobro_correo' }), 'template_id');
    expectValidation(await create({ ...basePayment, email: 'a@example.com', template_id: 'tpl_cobro_sms' }), 'template_id');
    assert.equal((await createPayment(co, { email: 'a@example.com', template_id: 'tpl_cobro_correo' })).template_id, 'tpl_cobro_correo');
    assert.equal((await createPayment(co, { phone: '+573001234567', template_id: 'tpl_cobro_sms' })).template_id, 'tpl_cobro_sms');
  });

  test('target_wallet_id and splits', async () => {
    const third = await h.company('Tercero SAS');
    assert.equal((await createPayment(co, { target_wallet_id: partner.company.id })).target_wallet_id, partner.company.id);
    expectValidation(await create({ ...basePayment, target_wallet_id: co.company.id }), 'target_wallet_id');
    expectValidation(await create({ ...basePayment, target_wallet_id: 'cmp_doesnotexist' }), 'target_wallet_id');
    expectValidation(await create({ ...basePayment, target_wallet_id: '01a1ffd1-03aa-73c7-a9ea-9767dccc73e5' }), 'target_wallet_id');
    const customer = (await co.req({ url: '/v1/customers', body: { first_name: 'Ana' } })).body;
    const savings = (
      await co.req({ url: '/v1/accounts', body: { subtype: 'ELECTRONIC_DEPOSIT', account_number: '3001234567', customer_id: customer.id } })
    ).body;
    expectValidation(await create({ ...basePayment, target_wallet_id: savings.id }), 'target_wallet_id');

    const split = await createPayment(co, {
      amount: 100000,
      splits: [
        { account_id: wallet, amount: 20000 },
        { wallet_id: third.company.id, percentage: 50 },
      ],
    });
    assert.deepEqual(split.splits, [
      { account_id: wallet, wallet_id: partner.company.id, amount: 20000, percentage: null },
      { account_id: null, wallet_id: third.company.id, amount: null, percentage: 50 },
    ]);
    expectValidation(
      await create({
        ...basePayment,
        amount: 100000,
        splits: [
          { account_id: wallet, amount: 60000 },
          { wallet_id: third.company.id, percentage: 50 },
        ],
      }),
      'splits',
    );
    expectValidation(
      await create({
        ...basePayment,
        splits: [
          { account_id: wallet, percentage: 60 },
          { wallet_id: third.company.id, percentage: 50 },
        ],
      }),
      'splits',
    );
    expectValidation(await create({ ...basePayment, splits: [{ account_id: wallet, wallet_id: third.company.id, amount: 1000 }] }), 'splits.0');
    expectValidation(await create({ ...basePayment, splits: [{ amount: 1000 }] }), 'splits.0');
    expectValidation(await create({ ...basePayment, splits: [{ wallet_id: third.company.id }] }), 'splits.0');
    expectValidation(await create({ ...basePayment, splits: [{ wallet_id: third.company.id, amount: 1000, percentage: 5 }] }), 'splits.0');
    expectValidation(await create({ ...basePayment, splits: [{ wallet_id: third.company.id, percentage: 101 }] }), 'splits.0.percentage');
    expectValidation(await create({ ...basePayment, splits: [{ wallet_id: third.company.id, amount: 10.001 }] }), 'splits.0.amount');
    expectValidation(await create({ ...basePayment, splits: [{ wallet_id: 'cmp_doesnotexist', amount: 1000 }] }), 'splits.0.wallet_id');
    expectValidation(await create({ ...basePayment, splits: [{ account_id: savings.id, amount: 1000 }] }), 'splits.0.account_id');
    expectValidation(
      await create({
        ...basePayment,
        splits: [
          { account_id: wallet, amount: 1000 },
          { wallet_id: partner.company.id, amount: 1000 },
        ],
      }),
      'splits.1.wallet_id',
    );
    expectValidation(
      await create({ ...basePayment, splits: Array.from({ length: 11 }, () => ({ wallet_id: third.company.id, percentage: 1 })) }),
      'splits',
    );
  });

  test('partial_payment_config and tax', async () => {
    const partial = await createPayment(co, { amount: 100000, partial_payment_config: { enabled: true } });
    assert.deepEqual(partial.partial_payment_config, { enabled: true, minimum_amount: 1000 }, 'default minimum: the currency minimum');
    assert.equal((await createPayment(co, { partial_payment_config: { enabled: false, minimum_amount: 5 } })).partial_payment_config, null);
    expectValidation(
      await create({ ...basePayment, amount: 100000, partial_payment_config: { enabled: true, minimum_amount: 100000 } }),
      'partial_payment_config.minimum_amount',
    );
    expectValidation(
      await create({ ...basePayment, partial_payment_config: { enabled: true, minimum_amount: 999 } }),
      'partial_payment_config.minimum_amount',
    );
    expectValidation(await create({ ...basePayment, partial_payment_config: { minimum_amount: 5000 } }), 'partial_payment_config.enabled');
    assert.deepEqual((await createPayment(co, { amount: 119000, tax: { rate: 19 } })).tax, { rate: 19, amount: 19000 });
    assert.deepEqual((await createPayment(co, { amount: 119000, tax: { amount: 19000 } })).tax, { rate: null, amount: 19000 });
    assert.deepEqual((await createPayment(co, { amount: 119000, tax: { rate: 0 } })).tax, { rate: 0, amount: 0 });
    assert.equal((await createPayment(co, { tax: {} })).tax, null);
    expectValidation(await create({ ...basePayment, tax: { rate: 101 } }), 'tax.rate');
    expectValidation(await create({ ...basePayment, tax: { rate: -1 } }), 'tax.rate');
    expectValidation(await create({ ...basePayment, tax: { amount: 150000 } }), 'tax.amount');
    expectValidation(await create({ ...basePayment, tax: { amount: 1.234 } }), 'tax.amount');
  });

  test('expiration: expires_at or expiration_date, in the future', async () => {
    const now = h.clock.now().getTime();
    const at = await createPayment(co, { expires_at: new Date(now + 3_600_000).toISOString() });
    assert.equal(at.expires_at, new Date(now + 3_600_000).toISOString());
    const noOffset = await createPayment(co, { expires_at: '2099-03-01T10:00:00' });
    assert.equal(noOffset.expires_at, '2099-03-01T15:00:00.000Z', 'without an offset it is Bogotá time');
    const date = await createPayment(co, { expiration_date: '2099-03-01' });
    assert.equal(date.expires_at, '2099-03-02T04:59:59.999Z', 'the end of that day in Bogotá');
    expectValidation(await create({ ...basePayment, expires_at: new Date(now - 1000).toISOString() }), 'expires_at');
    expectValidation(await create({ ...basePayment, expires_at: 'mañana' }), 'expires_at');
    expectValidation(await create({ ...basePayment, expires_at: '2099-02-30T10:00:00Z' }), 'expires_at');
    expectValidation(await create({ ...basePayment, expiration_date: '2020-01-01' }), 'expiration_date');
    expectValidation(await create({ ...basePayment, expiration_date: '2099-13-01' }), 'expiration_date');
    expectValidation(await create({ ...basePayment, expiration_date: '2099-03-01', expires_at: '2099-03-01T10:00:00Z' }), 'expiration_date');
    const job = await h.runtime.deps.database.db
      .selectFrom('jobs')
      .select(['run_at', 'kind'])
      .where('kind', '=', 'payments.expire')
      .where('payload', '@>', JSON.stringify({ payment_id: at.id }) as never)
      .executeTakeFirst();
    assert.equal(job?.run_at.toISOString(), at.expires_at, 'the expiration job runs at expires_at');
  });

  test('test_scenario: test keys only', async () => {
    assert.equal((await createPayment(co, { test_scenario: 'INSUFFICIENT_FUNDS' })).test_scenario, 'INSUFFICIENT_FUNDS');
    expectValidation(await create({ ...basePayment, test_scenario: 'approved' }, 'live'), 'test_scenario');
    expectValidation(await create({ ...basePayment, test_scenario: 'explode' }), 'test_scenario');
    const live = await create(basePayment, 'live');
    assert.equal(live.status, 200, live.raw);
    assert.equal(live.body.is_test, false);
  });

  test('null means absent; failed creates leave nothing behind', async () => {
    const p = await createPayment(co, {
      description: null,
      reference: null,
      phone: null,
      email: null,
      currency: null,
      allows: null,
      metadata: null,
      splits: null,
      tax: null,
    });
    assert.equal(p.currency, 'COP');
    assert.equal(p.channel, 'manual');
    const before = await h.runtime.deps.database.db
      .selectFrom('payments')
      .select((eb) => eb.fn.countAll<string>().as('n'))
      .where('company_id', '=', co.company.id)
      .executeTakeFirstOrThrow();
    await create({ ...basePayment, phone: 'bad' });
    await create({ ...basePayment, template_id: 'tpl_no_existe' });
    const afterCount = await h.runtime.deps.database.db
      .selectFrom('payments')
      .select((eb) => eb.fn.countAll<string>().as('n'))
      .where('company_id', '=', co.company.id)
      .executeTakeFirstOrThrow();
    assert.equal(Number(afterCount.n), Number(before.n));
  });

  test('idempotency: 409 without x-idempotency; a repeat replays without a second payment or event', async () => {
    expectError(await co.req({ url: '/v1/payments', body: basePayment, idem: false }), 409, 'idempotency_error', 10003);
    const first = await co.req({ url: '/v1/payments', body: { ...basePayment, external_id: 'idem-0001' }, idem: 'pay-idem-1' });
    const again = await co.req({ url: '/v1/payments', body: { ...basePayment, external_id: 'idem-0001' }, idem: 'pay-idem-1' });
    assert.equal(again.status, 200);
    assert.deepEqual(again.body, first.body);
    const list = await co.req({ url: '/v1/payments?filter[external_id]=idem-0001' });
    assert.equal(list.body.total, 1);
    assert.deepEqual(await eventTypes(h, co, first.body.id), ['payment.created']);
    const p = first.body;
    expectError(await co.req({ url: `/v1/payments/${p.id}`, body: {}, idem: false }), 409, 'idempotency_error', 10003);
    expectError(await co.req({ url: `/v1/payments/${p.id}/resolve`, body: { action: 'approve' }, idem: false }), 409, 'idempotency_error', 10003);
  });
});

describe('payments: list, read, scoping', () => {
  let h: Harness;
  let co: Company;
  before(async () => {
    h = await createHarness();
    co = await h.company('Lista SAS');
  });
  after(() => h.close());

  test('filters id, status, reference, external_id; invalid id or status → empty list', async () => {
    const a = await createPayment(co, { reference: 'REF-AAAA', external_id: 'ext-aaaa' });
    h.clock.advance(1000);
    const b = await createPayment(co, { reference: 'REF-BBBB', external_id: 'ext-bbbb' });
    h.clock.advance(1000);
    const c = await createPayment(co, { reference: 'REF-AAAA' });
    await co.req({ url: `/v1/payments/${b.id}/resolve`, body: { action: 'approve' } });
    const ids = async (q: string) => {
      const res = await co.req({ url: `/v1/payments${q}` });
      assert.equal(res.status, 200, res.raw);
      return res.body.data.map((p: { id: string }) => p.id);
    };
    assert.deepEqual(await ids(''), [c.id, b.id, a.id], 'newest first');
    assert.deepEqual(await ids(`?filter[id]=${a.id}`), [a.id]);
    assert.deepEqual(await ids('?filter[id]=not-a-payment-id'), []);
    assert.deepEqual(await ids('?filter[id]=01a1ffd1-03aa-73c7-a9ea-9767dccc73e5'), []);
    assert.deepEqual(await ids('?filter[status]=approved'), [b.id]);
    assert.deepEqual(await ids('?filter[status]=pending'), [c.id, a.id]);
    assert.deepEqual(await ids('?filter[status]=PAID'), []);
    assert.deepEqual(await ids('?filter[status]=whatever'), []);
    assert.deepEqual(await ids('?filter[reference]=REF-AAAA'), [c.id, a.id]);
    assert.deepEqual(await ids('?filter[external_id]=ext-bbbb'), [b.id]);
    assert.deepEqual(await ids('?sort=created_at'), [a.id, b.id, c.id]);
    assert.deepEqual((await ids('?sort=-paid_at'))[0], b.id, 'paid first, unpaid (null) last');
    assert.deepEqual((await ids('?sort=paid_at')).at(-1), b.id);
    const page = await co.req({ url: '/v1/payments?per_page=2&page=2&sort=created_at' });
    assert.equal(page.body.total, 3);
    assert.equal(page.body.path, 'http://recaudo.test/v1/payments');
    assert.deepEqual(
      page.body.data.map((p: { id: string }) => p.id),
      [c.id],
    );
    expectError(await co.req({ url: '/v1/payments?filter[amount]=1000' }), 400);
    expectError(await co.req({ url: '/v1/payments?sort=amount' }), 400);
    expectValidation(await co.req({ url: '/v1/payments?per_page=101' }), 'per_page');
    const live = await co.req({ url: '/v1/payments', env: 'live' });
    assert.equal(live.body.total, 0, 'test payments never show with a live key');
  });

  test('GET by id; malformed and unknown ids are 404 record_not_found', async () => {
    const p = await createPayment(co);
    const got = await co.req({ url: `/v1/payments/${p.id}` });
    assert.equal(got.status, 200);
    assert.equal(got.body.id, p.id);
    expectError(await co.req({ url: '/v1/payments/pay_00000000000000000000000000' }), 404, 'record_not_found', 10002);
    expectError(await co.req({ url: '/v1/payments/not-an-id' }), 404, 'record_not_found', 10002);
    expectError(await co.req({ url: '/v1/payments/01a1ffd1-03aa-73c7-a9ea-9767dccc73e5' }), 404, 'record_not_found', 10002);
  });

  test('every payment route is scoped by company and environment', async () => {
    const p = await createPayment(co);
    const intent = await startIntent(scopeOf(h, co), p.id, { method: 'card' });
    const other = await h.company('Otra SAS');
    for (const req of [
      { url: `/v1/payments/${p.id}` },
      { method: 'PUT' as const, url: `/v1/payments/${p.id}`, body: { title: 'Otro título' } },
      { url: `/v1/payments/${p.id}`, body: {} },
      { method: 'DELETE' as const, url: `/v1/payments/${p.id}` },
      { url: `/v1/payments/${p.id}/intents` },
      { url: `/v1/payments/${p.id}/resolve`, body: { action: 'approve' } },
      { url: `/v1/payment-intents/${intent.id}` },
    ]) {
      await expectScoped(co, other, req);
    }
    const after = await co.req({ url: `/v1/payments/${p.id}` });
    assert.equal(after.body.status, 'in_progress', 'nothing changed');
    assert.equal(after.body.title, basePayment.title);
    assert.equal(after.body.resend_count, 0);
    assert.equal((await co.req({ url: '/v1/payment-intents', env: 'live' })).body.total, 0);
  });
});

describe('payments: update, resend, cancel', () => {
  let h: Harness;
  let co: Company;
  before(async () => {
    h = await createHarness();
    co = await h.company('Cambios SAS');
  });
  after(() => h.close());

  const put = (id: string, body: Record<string, unknown>) => co.req({ method: 'PUT', url: `/v1/payments/${id}`, body });

  test('PUT changes the sent fields, keeps the others, null clears', async () => {
    const p = await createPayment(co, {
      description: 'Primera versión',
      phone: '+573001234567',
      tax: { rate: 19 },
      amount: 119000,
      metadata: { a: '1' },
    });
    h.clock.advance(1000);
    const res = await put(p.id, { title: 'Factura corregida', amount: 238000, phone: null, email: 'pagos@example.com' });
    assert.equal(res.status, 200, res.raw);
    const u = res.body;
    assert.equal(u.title, 'Factura corregida');
    assert.equal(u.amount, 238000);
    assert.deepEqual(u.tax, { rate: 19, amount: 38000 }, 'the tax follows the new amount');
    assert.equal(u.description, 'Primera versión');
    assert.equal(u.phone, null);
    assert.equal(u.channel, 'email', 'the channel follows phone and email');
    assert.deepEqual(u.metadata, { a: '1' });
    assert.notEqual(u.updated_at, p.updated_at);
    assert.equal(u.status, 'pending');
    assert.deepEqual(await eventTypes(h, co, p.id), ['payment.created'], 'an update emits no event');

    expectValidation(await put(p.id, { title: null }), 'title');
    expectValidation(await put(p.id, { amount: 999 }), 'amount');
    expectValidation(await put(p.id, { metadata: { template_id: 'tpl_cobro_general' } }), 'metadata.template_id');
    expectValidation(await put(p.id, { template_id: 'tpl_recordatorio_pago' }), 'template_id');
    expectValidation(await put(p.id, { expires_at: new Date(h.clock.now().getTime() - 1).toISOString() }), 'expires_at');
    expectValidation(await put(p.id, { title: 'x' }), 'title');
    expectValidation(await put(p.id, { test_scenario: 'explode', amount: 999 }), 'test_scenario', 'amount');

    const open = await put(p.id, { open_amount: true, tax: null });
    assert.equal(open.status, 200, open.raw);
    assert.equal(open.body.amount, null);
    const fixed = await put(p.id, { amount: 5000 });
    assert.equal(fixed.body.amount, 5000);
    assert.equal(fixed.body.open_amount, false);
  });

  test('PUT: 15007 cant_update_payment once final; 15004 when an attempt is in progress and amount or tax change', async () => {
    for (const status of ['approved', 'paid_externally', 'cancelled', 'expired', 'refunded', 'disputed'] as const) {
      const p = await createPayment(co);
      await forceStatus(h, p.id, status);
      expectError(await put(p.id, { title: 'Nuevo título' }), 422, 'cant_update_payment', 15007);
    }
    const p = await createPayment(co, { amount: 100000 });
    await startIntent(scopeOf(h, co), p.id, { method: 'card' });
    expectError(await put(p.id, { amount: 120000 }), 422, 'payment_charge_in_progress', 15004);
    expectError(await put(p.id, { tax: { rate: 19 } }), 422, 'payment_charge_in_progress', 15004);
    const title = await put(p.id, { title: 'Cambio de título', amount: 100000 });
    assert.equal(title.status, 200, 'other fields (and the same amount) may change during an attempt');
    assert.equal(title.body.status, 'in_progress');
  });

  test('PUT on a partially paid payment: the amount may grow, not shrink below what was paid, turn open or change currency', async () => {
    const scope = scopeOf(h, co);
    const p = await createPayment(co, { amount: 100000, partial_payment_config: { enabled: true } });
    const i = await startIntent(scope, p.id, { method: 'card', amount: 40000_00n });
    expectError(await put(p.id, { currency: 'USD' }), 422, 'payment_charge_in_progress', 15004);
    await settleIntent(scope, i.id, { status: 'approved' });
    expectValidation(await put(p.id, { amount: 40000 }), 'amount');
    expectValidation(await put(p.id, { open_amount: true }), 'open_amount');
    expectValidation(await put(p.id, { currency: 'USD' }), 'currency');
    const grown = await put(p.id, { amount: 120000 });
    assert.equal(grown.status, 200, grown.raw);
    assert.equal(grown.body.status, 'partially_paid');
    assert.equal(grown.body.amount_due, 80000);
  });

  test('concurrent cancels and resolves of one payment: one wins, its event is written once', async () => {
    const p = await createPayment(co);
    const results = await Promise.all([
      ...Array.from({ length: 4 }, () => co.req({ method: 'DELETE', url: `/v1/payments/${p.id}` })),
      ...Array.from({ length: 4 }, () => co.req({ url: `/v1/payments/${p.id}/resolve`, body: { action: 'approve' } })),
    ]);
    const ok = results.filter((r) => r.status === 200);
    assert.equal(ok.length, 1, results.map((r) => `${r.status} ${r.body.code_name ?? ''}`).join(', '));
    const final = (await co.req({ url: `/v1/payments/${p.id}` })).body.status;
    assert.ok(final === 'cancelled' || final === 'approved');
    assert.deepEqual(await eventTypes(h, co, p.id), ['payment.created', final === 'cancelled' ? 'payment.deleted' : 'payment.approved']);
    for (const r of results.filter((x) => x.status !== 200)) assert.equal(r.status, 422, r.raw);
  });

  test('PUT status paid_externally goes through the state machine', async () => {
    const p = await createPayment(co);
    const res = await put(p.id, { status: 'paid_externally' });
    assert.equal(res.status, 200, res.raw);
    assert.equal(res.body.status, 'paid_externally');
    assert.ok(res.body.paid_at);
    expectError(await put(p.id, { status: 'paid_externally' }), 422, 'cant_update_payment', 15007);
    expectValidation(await put(p.id, { status: 'approved' }), 'status');
    const busy = await createPayment(co);
    await startIntent(scopeOf(h, co), busy.id, { method: 'card' });
    expectError(await put(busy.id, { status: 'paid_externally' }), 422, 'payment_charge_in_progress', 15004);
  });

  test('resend: counts, optional template; 15002 cant_retry_payment when closed', async () => {
    const p = await createPayment(co, { phone: '+573001234567' });
    h.clock.advance(1000);
    const before = h.clock.now().getTime();
    const res = await co.req({ url: `/v1/payments/${p.id}`, body: {} });
    assert.equal(res.status, 200, res.raw);
    assert.equal(res.body.resend_count, 1);
    // The clock runs in this file: the resend's time lies between the two readings (a loaded machine may cross a second).
    const resentAt = new Date(res.body.last_resent_at).getTime();
    assert.ok(resentAt >= before - 1 && resentAt <= h.clock.now().getTime(), res.body.last_resent_at);
    const withTemplate = await co.req({ url: `/v1/payments/${p.id}`, body: { template_id: 'tpl_cobro_sms' } });
    assert.equal(withTemplate.body.resend_count, 2);
    assert.equal(withTemplate.body.template_id, 'tpl_cobro_sms');
    expectValidation(await co.req({ url: `/v1/payments/${p.id}`, body: { template_id: 'tpl_cobro_correo' } }), 'template_id');
    expectValidation(await co.req({ url: `/v1/payments/${p.id}`, body: { template_id: 'tpl_aviso_vencimiento' } }), 'template_id');
    for (const status of ['cancelled', 'expired', 'refunded', 'approved', 'paid_externally', 'disputed'] as const) {
      const closed = await createPayment(co);
      await forceStatus(h, closed.id, status);
      expectError(await co.req({ url: `/v1/payments/${closed.id}`, body: {} }), 422, 'cant_retry_payment', 15002);
    }
    for (const status of ['declined', 'partially_paid', 'in_progress'] as const) {
      const open = await createPayment(co);
      await forceStatus(h, open.id, status);
      assert.equal((await co.req({ url: `/v1/payments/${open.id}`, body: {} })).status, 200, status);
    }
  });

  test('cancel: the cancelled payment, payment.deleted once, notify from body or query', async () => {
    const p = await createPayment(co, { phone: '+573001234567' });
    const res = await co.req({ method: 'DELETE', url: `/v1/payments/${p.id}`, body: { notify: true } });
    assert.equal(res.status, 200, res.raw);
    assert.equal(res.body.status, 'cancelled');
    assert.ok(res.body.cancelled_at);
    assert.deepEqual(await eventTypes(h, co, p.id), ['payment.created', 'payment.deleted']);
    const stored = await h.runtime.deps.database.db.selectFrom('payments').select('cancel_notify').where('id', '=', p.id).executeTakeFirstOrThrow();
    assert.equal(stored.cancel_notify, true);
    expectError(await co.req({ method: 'DELETE', url: `/v1/payments/${p.id}` }), 422, 'payment_cancelled', 15004);
    assert.deepEqual(await eventTypes(h, co, p.id), ['payment.created', 'payment.deleted'], 'a second cancel emits nothing');
    assert.equal((await co.req({ url: `/v1/payments/${p.id}` })).body.status, 'cancelled', 'a cancelled payment is still readable');

    const q = await createPayment(co);
    assert.equal((await co.req({ method: 'DELETE', url: `/v1/payments/${q.id}?notify=false` })).status, 200);
    const stored2 = await h.runtime.deps.database.db.selectFrom('payments').select('cancel_notify').where('id', '=', q.id).executeTakeFirstOrThrow();
    assert.equal(stored2.cancel_notify, false);
    const r = await createPayment(co);
    expectValidation(await co.req({ method: 'DELETE', url: `/v1/payments/${r.id}?notify=maybe` }), 'notify');
    expectValidation(await co.req({ method: 'DELETE', url: `/v1/payments/${r.id}`, body: { notify: 'sí' } }), 'notify');
    for (const status of ['declined', 'partially_paid'] as const) {
      const s = await createPayment(co);
      await forceStatus(h, s.id, status);
      assert.equal((await co.req({ method: 'DELETE', url: `/v1/payments/${s.id}` })).body.status, 'cancelled', status);
    }
  });

  test('cancel refusals: 15003 paid, 15004 in progress, 15001 utility-service invoices', async () => {
    for (const status of ['approved', 'paid_externally', 'refunded', 'disputed'] as const) {
      const p = await createPayment(co);
      await forceStatus(h, p.id, status);
      expectError(await co.req({ method: 'DELETE', url: `/v1/payments/${p.id}` }), 422, 'payment_already_paid', 15003);
    }
    const busy = await createPayment(co);
    await startIntent(scopeOf(h, co), busy.id, { method: 'banklink' });
    expectError(await co.req({ method: 'DELETE', url: `/v1/payments/${busy.id}` }), 422, 'payment_charge_in_progress', 15004);
    const utility = await createPayment(co);
    await h.runtime.deps.database.db.updateTable('payments').set({ source: 'utility' }).where('id', '=', utility.id).execute();
    expectError(await co.req({ method: 'DELETE', url: `/v1/payments/${utility.id}` }), 422, 'cant_cancel_payment', 15001);
    const expired = await createPayment(co);
    await forceStatus(h, expired.id, 'expired');
    expectValidation(await co.req({ method: 'DELETE', url: `/v1/payments/${expired.id}` }), 'status');
    assert.deepEqual(await eventTypes(h, co, busy.id), ['payment.created'], 'refused cancels emit nothing');
  });
});
