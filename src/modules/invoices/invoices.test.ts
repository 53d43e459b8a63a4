import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHarness, expectError, expectValidation, type Company, type Harness } from '../../../test/harness.ts';
import { expectScoped } from '../../../test/auth-matrix.ts';
import { drainJobs, eventsOf, invoiceableCustomer, LINES } from '../../../test/support/invoices.ts';
import { runStamping } from './stamping.ts';
import { readAttachedDocument } from '../../documents/dian/attached-document.ts';
import type { NumberingRangesQuery, SubmitInput } from '../../rails/tax-authority/port.ts';

describe('invoices', () => {
  let h: Harness;
  let co: Company;
  let other: Company;
  let customer: any;
  before(async () => {
    h = await createHarness({ SANDBOX_STAMP_DELAY_MS: '0' });
    co = await h.company();
    other = await h.company('Other SAS');
    customer = await invoiceableCustomer(co);
  });
  after(() => h.close());

  const create = (body: Record<string, unknown>, opts: { env?: 'test' | 'live'; c?: Company } = {}) =>
    (opts.c ?? co).req({ url: '/v1/invoices', body, env: opts.env });

  test('with items: 201, the SPEC object, its payment in GET /payments, invoice.created', async () => {
    const res = await create({
      customer_id: customer.id,
      items: LINES,
      name: 'Servicios de marzo',
      reference: 'REF-000123',
      due_date: '2026-12-31',
      metadata: [{ key: 'order', value: 77 }],
    });
    assert.equal(res.status, 201, res.raw);
    const inv = res.body;
    assert.match(inv.id, /^inv_[0-9a-z]{26}$/);
    assert.equal(inv.status, 'CREATED');
    assert.equal(inv.fiscal_status, null);
    assert.equal(inv.stamp_policy, 'none');
    assert.equal(inv.currency, 'COP');
    assert.deepEqual(inv.customer, { id: customer.id, name: 'Ana Pérez', document_number: '1020304050' });
    // 2 × 10,000.00 + 19 % = 23,800.00; 5,950.00 inclusive of 19 % = 5,000.00 + 950.00
    assert.deepEqual(inv.items[0], {
      description: 'Consultoría',
      quantity: 2,
      unit_amount: 1_000_000,
      subtotal: 2_000_000,
      tax_rate: 19,
      tax_amount: 380_000,
      total: 2_380_000,
    });
    assert.deepEqual(inv.items[1], {
      description: 'Soporte',
      quantity: 1,
      unit_amount: 595_000,
      subtotal: 500_000,
      tax_rate: 19,
      tax_amount: 95_000,
      total: 595_000,
    });
    assert.deepEqual(inv.totals, { subtotal: 2_500_000, tax_amount: 475_000, total: 2_975_000 });
    assert.equal(inv.amount, 29_750);
    assert.deepEqual(inv.stampings, []);
    assert.deepEqual(inv.metadata, { order: '77' });
    assert.equal(inv.due_date, '2026-12-31');
    assert.equal(inv.is_test, true);

    const pay = await co.req({ url: `/v1/payments?filter[id]=${inv.payment_id}` });
    assert.equal(pay.body.total, 1);
    assert.equal(pay.body.data[0].amount, 29_750);
    assert.equal(pay.body.data[0].status, 'pending');
    assert.equal(pay.body.data[0].external_id, inv.id);

    const got = await co.req({ url: `/v1/invoices/${inv.id}` });
    assert.equal(got.status, 200);
    assert.deepEqual(got.body.credit_notes, []);
    const { credit_notes, updated_at, ...rest } = got.body;
    void credit_notes;
    void updated_at;
    const { updated_at: u2, ...created } = inv;
    void u2;
    assert.deepEqual(rest, created, 'GET is the create shape plus credit notes');

    const events = await eventsOf(co, 'invoice.created');
    assert.ok(events.some((e) => e.data.id === inv.id));
  });

  test('without items: imported, amount an integer number of pesos, never stamped', async () => {
    // SPEC.md: the invoice field amount is in pesos, an integer; decimals are a 422 and create nothing.
    expectValidation(await create({ provider: 'siigo', provider_id: 'FV-1001', reference: 'FV-1001', amount: 150000.5 }), 'amount');
    expectValidation(await create({ provider: 'siigo', provider_id: 'FV-1001', reference: 'FV-1001', amount: '150000.50' }), 'amount');
    expectValidation(await create({ provider: 'siigo', provider_id: 'FV-1001', reference: 'FV-1001', amount: -5 }), 'amount');
    assert.equal((await co.req({ url: '/v1/invoices?filter[provider_id]=FV-1001' })).body.total, 0, 'nothing was created');
    const res = await create({ provider: 'siigo', provider_id: 'FV-1001', reference: 'FV-1001', amount: 150000 });
    assert.equal(res.status, 201, res.raw);
    assert.equal(res.body.amount, 150000);
    assert.deepEqual(res.body.totals, { subtotal: 15_000_000, tax_amount: 0, total: 15_000_000 });
    assert.deepEqual(res.body.items, []);
    assert.equal(res.body.customer, null);
    assert.equal(res.body.provider, 'siigo');
    assert.equal(res.body.provider_id, 'FV-1001');
    assert.equal(res.body.stamp_policy, 'none');
    const pay = await co.req({ url: `/v1/payments/${res.body.payment_id}` });
    assert.equal(pay.body.amount, 150000);
    // A numeric string of whole pesos is accepted as well.
    assert.equal((await create({ provider: 'siigo', provider_id: 'FV-1002', amount: '98000' })).body.amount, 98000);
    expectError(await co.req({ url: `/v1/invoices/${res.body.id}/stamp`, body: {} }), 422, 'invoice_not_stampable', 'invoice_not_stampable');
    const list = await co.req({ url: '/v1/invoices?filter[provider_id]=FV-1001' });
    assert.equal(list.body.total, 1);
    assert.equal(list.body.data[0].id, res.body.id);
  });

  test('validation: each mode names its missing fields; nothing is created', async () => {
    const before = (await co.req({ url: '/v1/invoices' })).body.total;
    expectValidation(await create({ items: LINES }), 'customer_id');
    expectValidation(await create({ customer_id: customer.id, items: [] }), 'items');
    expectValidation(await create({ customer_id: '01a1ffd1-03aa-73c7-a9ea-9767dccc73e5', items: LINES }), 'customer_id');
    expectValidation(await create({}), 'provider', 'provider_id', 'amount');
    expectValidation(await create({ provider: 'x', provider_id: 'y', amount: 'ten' }), 'amount');
    expectValidation(await create({ provider: 'x', provider_id: 'y', amount: 10.123 }), 'amount');
    expectValidation(await create({ provider: 'x', provider_id: 'y', amount: 5000, stamp_policy: 'on_issue' }), 'stamp_policy');
    expectValidation(await create({ customer_id: customer.id, items: LINES, stamp_policy: 'sometimes' }), 'stamp_policy');
    expectValidation(await create({ customer_id: customer.id, items: LINES, currency: 'USD' }), 'currency');
    expectValidation(await create({ customer_id: customer.id, items: LINES, test_scenario: 'explode' }), 'test_scenario');
    expectValidation(await create({ customer_id: customer.id, items: LINES, due_date: '2026-13-45x' }), 'due_date');
    // Another company's customer does not exist here.
    expectValidation(await create({ customer_id: customer.id, items: LINES }, { c: other }), 'customer_id');
    const bad = await create({ customer_id: customer.id, items: [{ description: 'x', unit_amount: 100 }, { quantity: 2 }] });
    expectError(bad, 422, 'invalid_invoice_line', 'invalid_invoice_line');
    assert.equal((await co.req({ url: '/v1/invoices' })).body.total, before);
  });

  test('test_scenario with a live key is 422 validation_error', async () => {
    const liveCustomer = await co.req({ url: '/v1/customers', env: 'live', body: { first_name: 'Live', email: 'l@example.com' } });
    const res = await create({ customer_id: liveCustomer.body.id, items: LINES, test_scenario: 'stamp_rejected' }, { env: 'live' });
    expectValidation(res, 'test_scenario');
  });

  test('customer_not_invoiceable lists every missing receiver field at once; none requires nothing', async () => {
    const bare = await co.req({
      url: '/v1/customers',
      body: { first_name: 'Empresa', type: 'company', document_type: 'NIT', document_number: '900123456' },
    });
    assert.equal(bare.status, 200, bare.raw);
    for (const policy of ['on_issue', 'on_payment', 'manual']) {
      const res = await create({ customer_id: bare.body.id, items: LINES, stamp_policy: policy });
      expectError(res, 422, 'customer_not_invoiceable', 'customer_not_invoiceable');
      assert.deepEqual(res.body.errors, {
        'customer.email': ['required'],
        'customer.address': ['required'],
        'customer.document_verification': ['required'],
        'customer.fiscal_responsibilities': ['required'],
      });
    }
    const natural = await co.req({ url: '/v1/customers', body: { first_name: 'Solo nombre' } });
    const res = await create({ customer_id: natural.body.id, items: LINES, stamp_policy: 'on_issue' });
    expectError(res, 422, 'customer_not_invoiceable');
    assert.deepEqual(Object.keys(res.body.errors).sort(), [
      'customer.address',
      'customer.document_number',
      'customer.document_type',
      'customer.email',
    ]);
    assert.equal((await create({ customer_id: bare.body.id, items: LINES })).status, 201);
  });

  test('on_issue: answers at once with fiscal_status null, then stamped: invoice.stamped payload, XML, PDF, e-mail', async () => {
    h.runtime.deps.rails.test.email.clear();
    const res = await create({ customer_id: customer.id, items: LINES, stamp_policy: 'on_issue' });
    assert.equal(res.status, 201, res.raw);
    assert.equal(res.body.fiscal_status, null);
    await drainJobs(h, co);
    const inv = (await co.req({ url: `/v1/invoices/${res.body.id}` })).body;
    assert.equal(inv.fiscal_status, 'stamped');
    assert.equal(inv.status, 'CREATED');
    assert.equal(inv.stampings.length, 1);
    const st = inv.stampings[0];
    assert.equal(st.type, 'invoice');
    assert.equal(st.status, 'accepted');
    assert.match(st.number, /^[A-Z]*\d+$/);
    assert.match(st.cufe, /^[0-9a-f]{96}$/);
    assert.equal(st.total, 2_975_000);
    assert.equal(st.xml_url, `http://recaudo.test/v1/invoices/${inv.id}/xml`);
    assert.equal(st.pdf_url, `http://recaudo.test/v1/invoices/${inv.id}/pdf`);
    assert.equal(inv.number, st.number);
    assert.equal(inv.cufe, st.cufe);

    const ev = (await eventsOf(co, 'invoice.stamped')).find((e) => e.data.invoice_id === inv.id);
    assert.deepEqual(ev.data, {
      invoice_id: inv.id,
      stamping: { type: 'invoice', status: 'accepted', number: st.number, cufe: st.cufe, xml_url: st.xml_url, pdf_url: st.pdf_url, total: 2_975_000 },
    });

    const xml = await co.req({ url: `/v1/invoices/${inv.id}/xml` });
    assert.equal(xml.status, 200);
    assert.match(String(xml.headers['content-type']), /^application\/xml/);
    assert.ok(xml.raw.includes(st.cufe) && xml.raw.includes(st.number));
    const pdf = await h.app.inject({ url: `/v1/invoices/${inv.id}/pdf`, headers: { authorization: `Bearer ${co.keys.test}` } });
    assert.equal(pdf.statusCode, 200);
    assert.equal(pdf.headers['content-type'], 'application/pdf');
    assert.equal(pdf.rawPayload.subarray(0, 5).toString(), '%PDF-');

    const mails = h.runtime.deps.rails.test.email.to(customer.email);
    assert.equal(mails.length, 1);
    assert.deepEqual(
      mails[0].attachments.map((a) => a.filename),
      [`ad-${st.number}.xml`, `${st.number}.pdf`],
    );
    assert.equal(
      readAttachedDocument(String(mails[0].attachments[0].content)).document,
      xml.raw,
      'the AttachedDocument carries the served XML byte for byte',
    );

    // Stamped: no second stamping, ever.
    expectError(await co.req({ url: `/v1/invoices/${inv.id}/stamp`, body: {} }), 422, 'invoice_not_stampable');
    const list = await co.req({ url: '/v1/invoices?filter[fiscal_status]=stamped' });
    assert.ok(list.body.data.some((i: any) => i.id === inv.id));
  });

  test('test_scenario stamp_rejected: invoice.stamp_rejected with a DIAN-style reason', async () => {
    const res = await create({ customer_id: customer.id, items: LINES, stamp_policy: 'on_issue', test_scenario: 'stamp_rejected' });
    assert.equal(res.status, 201, res.raw);
    await drainJobs(h, co);
    const inv = (await co.req({ url: `/v1/invoices/${res.body.id}` })).body;
    assert.equal(inv.fiscal_status, 'rejected');
    assert.equal(inv.stampings[0].status, 'rejected');
    assert.match(inv.stampings[0].rejection_reason, /^Regla: FAJ43b, Rechazo: /);
    const ev = (await eventsOf(co, 'invoice.stamp_rejected')).find((e) => e.data.invoice_id === inv.id);
    assert.deepEqual(ev.data, {
      invoice_id: inv.id,
      stamping: { status: 'rejected', number: inv.stampings[0].number, rejection_reason: inv.stampings[0].rejection_reason },
    });
    expectError(await co.req({ url: `/v1/invoices/${inv.id}/xml` }), 404, 'record_not_found');
  });

  test('manual: POST /stamp queues it once; policies none/on_issue/on_payment and lineless refuse', async () => {
    const manual = (await create({ customer_id: customer.id, items: LINES, stamp_policy: 'manual' })).body;
    await drainJobs(h, co);
    assert.equal((await co.req({ url: `/v1/invoices/${manual.id}` })).body.fiscal_status, null, 'manual waits for the trigger');
    const stamp = await co.req({ url: `/v1/invoices/${manual.id}/stamp`, body: {} });
    assert.equal(stamp.status, 200, stamp.raw);
    assert.equal(stamp.body.fiscal_status, 'pending');
    expectError(await co.req({ url: `/v1/invoices/${manual.id}/stamp`, body: {} }), 422, 'invoice_not_stampable');
    await drainJobs(h, co);
    assert.equal((await co.req({ url: `/v1/invoices/${manual.id}` })).body.fiscal_status, 'stamped');
    for (const policy of ['none', 'on_payment']) {
      const inv = (await create({ customer_id: customer.id, items: LINES, stamp_policy: policy })).body;
      expectError(await co.req({ url: `/v1/invoices/${inv.id}/stamp`, body: {} }), 422, 'invoice_not_stampable', 'invoice_not_stampable');
    }
    const onIssue = (await create({ customer_id: customer.id, items: LINES, stamp_policy: 'on_issue' })).body;
    expectError(await co.req({ url: `/v1/invoices/${onIssue.id}/stamp`, body: {} }), 422, 'invoice_not_stampable');
    expectError(await co.req({ url: '/v1/invoices/inv_nope/stamp', body: {} }), 404, 'record_not_found');
    await drainJobs(h, co);
  });

  test('a rejected manual invoice may be stamped again: same number, one accepted document', async () => {
    const inv = (await create({ customer_id: customer.id, items: LINES, stamp_policy: 'manual', test_scenario: 'stamp_rejected' })).body;
    await co.req({ url: `/v1/invoices/${inv.id}/stamp`, body: {} });
    await drainJobs(h, co);
    const rejected = (await co.req({ url: `/v1/invoices/${inv.id}` })).body;
    assert.equal(rejected.fiscal_status, 'rejected');
    await h.runtime.deps.database.db.updateTable('invoices').set({ test_scenario: null }).where('id', '=', inv.id).execute();
    assert.equal((await co.req({ url: `/v1/invoices/${inv.id}/stamp`, body: {} })).status, 200);
    await drainJobs(h, co);
    const done = (await co.req({ url: `/v1/invoices/${inv.id}` })).body;
    assert.equal(done.fiscal_status, 'stamped');
    assert.deepEqual(
      done.stampings.map((s: any) => s.status),
      ['rejected', 'accepted'],
    );
    assert.equal(done.stampings[0].number, done.stampings[1].number, 'the retry keeps the folio');
  });

  test('a job run twice (a retry) consumes one folio and accepts one document', async () => {
    const inv = (await create({ customer_id: customer.id, items: LINES, stamp_policy: 'on_issue' })).body;
    const job = await h.runtime.deps.database.db
      .selectFrom('jobs')
      .selectAll()
      .where('kind', '=', 'invoices.stamp')
      .orderBy('run_at', 'desc')
      .executeTakeFirstOrThrow();
    await Promise.all([runStamping(h.runtime.deps, job.payload), runStamping(h.runtime.deps, job.payload)]);
    await runStamping(h.runtime.deps, job.payload);
    await drainJobs(h, co);
    const rows = await h.runtime.deps.database.db.selectFrom('stampings').selectAll().where('invoice_id', '=', inv.id).execute();
    assert.equal(rows.length, 1);
    assert.equal(rows[0].status, 'accepted');
    const events = (await eventsOf(co, 'invoice.stamped')).filter((e) => e.data.invoice_id === inv.id);
    assert.equal(events.length, 1);
  });

  test('a submission whose answer is lost is settled by status, never submitted twice', async () => {
    const real = h.runtime.deps.rails.taxAuthority.test;
    const calls: string[] = [];
    let lose = true;
    const authority = {
      async submit(input: SubmitInput) {
        calls.push('submit');
        const out = await real.submit(input);
        if (lose) {
          lose = false;
          throw new Error('connection reset after the document was handed over');
        }
        return out;
      },
      async status(input: SubmitInput & { trackId: string }) {
        calls.push(`status:${input.trackId === input.built.identityCode ? 'identity' : 'track'}`);
        return real.status(input);
      },
      numberingRanges: (query: NumberingRangesQuery) => real.numberingRanges(query),
    };
    h.runtime.deps.rails.taxAuthority.test = authority;
    try {
      const inv = (await create({ customer_id: customer.id, items: LINES, stamp_policy: 'on_issue' })).body;
      const job = await h.runtime.deps.database.db
        .selectFrom('jobs')
        .selectAll()
        .where('kind', '=', 'invoices.stamp')
        .orderBy('run_at', 'desc')
        .executeTakeFirstOrThrow();
      await assert.rejects(runStamping(h.runtime.deps, job.payload), /connection reset/);
      await runStamping(h.runtime.deps, job.payload); // the queue's retry
      assert.deepEqual(calls, ['submit', 'status:identity']);
      await drainJobs(h, co);
      assert.equal((await co.req({ url: `/v1/invoices/${inv.id}` })).body.fiscal_status, 'stamped');
    } finally {
      h.runtime.deps.rails.taxAuthority.test = real;
    }
  });

  test('on_payment: approved → PAID (invoice.paid) and stamped; cancel → CANCELED (invoice.canceled)', async () => {
    const inv = (await create({ customer_id: customer.id, items: LINES, stamp_policy: 'on_payment' })).body;
    await drainJobs(h, co);
    assert.equal((await co.req({ url: `/v1/invoices/${inv.id}` })).body.fiscal_status, null);
    const paid = await co.req({ url: `/v1/payments/${inv.payment_id}/resolve`, body: { action: 'approve' } });
    assert.equal(paid.status, 200, paid.raw);
    const after = (await co.req({ url: `/v1/invoices/${inv.id}` })).body;
    assert.equal(after.status, 'PAID');
    assert.equal(after.fiscal_status, 'pending');
    assert.ok((await eventsOf(co, 'invoice.paid')).some((e) => e.data.id === inv.id));
    await drainJobs(h, co);
    assert.equal((await co.req({ url: `/v1/invoices/${inv.id}` })).body.fiscal_status, 'stamped');

    const other = (await create({ customer_id: customer.id, items: LINES })).body;
    assert.equal((await co.req({ method: 'DELETE', url: `/v1/payments/${other.payment_id}` })).status, 200);
    assert.equal((await co.req({ url: `/v1/invoices/${other.id}` })).body.status, 'CANCELED');
    assert.ok((await eventsOf(co, 'invoice.canceled')).some((e) => e.data.id === other.id));
    assert.equal((await co.req({ url: '/v1/invoices?filter[status]=CANCELED' })).body.data[0].id, other.id);
  });

  test('credit notes: not stamped refused; partial ones repeat up to the total; CUDE, event, reads', async () => {
    const draft = (await create({ customer_id: customer.id, items: LINES })).body;
    expectError(
      await co.req({ url: `/v1/invoices/${draft.id}/credit-notes`, body: { amount: 100, reason: 'x' } }),
      422,
      'credit_note_not_issuable',
      'credit_note_not_issuable',
    );

    const inv = (await create({ customer_id: customer.id, items: LINES, stamp_policy: 'on_issue' })).body;
    await drainJobs(h, co);
    const first = await co.req({ url: `/v1/invoices/${inv.id}/credit-notes`, body: { amount: 1_000_001, reason: 'Descuento' } });
    assert.equal(first.status, 200, first.raw);
    assert.match(first.body.id, /^cn_[0-9a-z]{26}$/);
    assert.equal(first.body.amount, 1_000_001);
    assert.equal(first.body.discrepancy_code, '1');
    assert.equal(first.body.status, 'pending');
    const sum = (k: string) => first.body.items.reduce((s: number, l: any) => s + l[k], 0);
    assert.equal(sum('total'), 1_000_001, 'the lines add up to the note');
    assert.equal(sum('subtotal') + sum('tax_amount'), 1_000_001);
    expectError(
      await co.req({ url: `/v1/invoices/${inv.id}/credit-notes`, body: { amount: 2_000_000, reason: 'too much' } }),
      422,
      'credit_note_not_issuable',
    );
    expectValidation(await co.req({ url: `/v1/invoices/${inv.id}/credit-notes`, body: { amount: 0 } }), 'amount');
    expectValidation(await co.req({ url: `/v1/invoices/${inv.id}/credit-notes`, body: { amount: 10.5 } }), 'amount');
    // SPEC.md: without amount a note is the whole invoice; after a partial note that is refused.
    const whole = await co.req({ url: `/v1/invoices/${inv.id}/credit-notes`, body: { reason: 'Anulación' } });
    expectError(whole, 422, 'credit_note_not_issuable', 'credit_note_not_issuable');
    assert.deepEqual(Object.keys(whole.body.errors), ['amount']);
    const rest = await co.req({ url: `/v1/invoices/${inv.id}/credit-notes`, body: { reason: 'Anulación', amount: 2_975_000 - 1_000_001 } });
    assert.equal(rest.status, 200, rest.raw);
    assert.equal(rest.body.amount, 2_975_000 - 1_000_001);
    assert.equal(rest.body.discrepancy_code, '2');
    expectError(await co.req({ url: `/v1/invoices/${inv.id}/credit-notes`, body: {} }), 422, 'credit_note_not_issuable');
    await drainJobs(h, co);

    // A stamped invoice without notes: no amount credits all of it (discrepancy 2), once.
    const another = (await create({ customer_id: customer.id, items: LINES, stamp_policy: 'on_issue' })).body;
    await drainJobs(h, co);
    const all = await co.req({ url: `/v1/invoices/${another.id}/credit-notes`, body: {} });
    assert.equal(all.status, 200, all.raw);
    assert.equal(all.body.amount, 2_975_000);
    assert.equal(all.body.discrepancy_code, '2');
    expectError(await co.req({ url: `/v1/invoices/${another.id}/credit-notes`, body: {} }), 422, 'credit_note_not_issuable');

    const detail = (await co.req({ url: `/v1/invoices/${inv.id}` })).body;
    assert.equal(detail.credited_amount, 2_975_000);
    assert.equal(detail.credit_notes.length, 2);
    for (const cn of detail.credit_notes) {
      assert.equal(cn.status, 'issued');
      assert.match(cn.cude, /^[0-9a-f]{96}$/);
      assert.ok(cn.number);
      assert.equal(cn.stampings[0].type, 'credit_note');
      const xml = await co.req({ url: `/v1/invoices/${inv.id}/credit-notes/${cn.id}/xml` });
      assert.equal(xml.status, 200);
      assert.ok(xml.raw.includes(cn.cude) && xml.raw.includes(inv.id ? detail.number : ''), 'the note references the invoice');
    }
    assert.notEqual(detail.credit_notes[0].number.replace(/\d+$/, ''), detail.number.replace(/\d+$/, ''), 'credit notes have their own prefix');
    const issued = (await eventsOf(co, 'invoice.credit_note_issued')).filter((e) => e.data.invoice_id === inv.id);
    assert.equal(issued.length, 2);
    const one = await co.req({ url: `/v1/invoices/${inv.id}/credit-notes/${first.body.id}` });
    assert.equal(one.status, 200);
    assert.equal(one.body.status, 'issued');
  });

  test('refunding the payment of a stamped invoice issues a credit note for what remains', async () => {
    const inv = (await create({ customer_id: customer.id, items: LINES, stamp_policy: 'on_payment' })).body;
    await co.req({ url: `/v1/payments/${inv.payment_id}/resolve`, body: { action: 'approve' } });
    await drainJobs(h, co);
    await co.req({ url: `/v1/invoices/${inv.id}/credit-notes`, body: { amount: 500, reason: 'Ajuste' } });
    // The refund endpoint's auth matrix: another company and the other environment see nothing.
    await expectScoped(co, await h.company('Otra Refund SAS'), { url: `/v1/payments/${inv.payment_id}/refund`, body: {} });
    const refund = await co.req({ url: `/v1/payments/${inv.payment_id}/refund`, body: {} });
    assert.equal(refund.status, 200, refund.raw);
    assert.equal(refund.body.status, 'refunded');
    await drainJobs(h, co);
    const detail = (await co.req({ url: `/v1/invoices/${inv.id}` })).body;
    assert.equal(detail.status, 'REFUNDED');
    assert.equal(detail.credit_notes.length, 2);
    assert.equal(detail.credit_notes[1].origin, 'refund');
    assert.equal(detail.credit_notes[1].amount, 2_975_000 - 500);
    assert.equal(detail.credit_notes[1].discrepancy_code, '2');
    assert.equal(detail.credit_notes[1].status, 'issued');
    expectValidation(await co.req({ url: `/v1/payments/${inv.payment_id}/refund`, body: {} }), 'status');
  });

  test('no folios left: the invoice is created, its stamping is rejected with resolution_not_activatable', async () => {
    const third = await h.company('Sin folios SAS');
    const buyer = await invoiceableCustomer(third);
    // Use up every resolution of the company (the defaults are created on first use).
    const first = (await third.req({ url: '/v1/invoices', body: { customer_id: buyer.id, items: LINES, stamp_policy: 'on_issue' } })).body;
    await drainJobs(h, third);
    assert.equal((await third.req({ url: `/v1/invoices/${first.id}` })).body.fiscal_status, 'stamped');
    await h.runtime.deps.database.db
      .updateTable('fiscal_resolutions')
      .set((eb) => ({ next_folio: eb('to_folio', '+', 1n) }))
      .where('company_id', '=', third.company.id)
      .execute();
    const res = await third.req({ url: '/v1/invoices', body: { customer_id: buyer.id, items: LINES, stamp_policy: 'on_issue' } });
    assert.equal(res.status, 201, res.raw);
    await drainJobs(h, third);
    const inv = (await third.req({ url: `/v1/invoices/${res.body.id}` })).body;
    assert.equal(inv.status, 'CREATED');
    assert.equal(inv.fiscal_status, 'rejected');
    assert.deepEqual(
      inv.stampings.map((s: any) => [s.status, s.number, s.rejection_reason]),
      [['rejected', null, 'resolution_not_activatable']],
    );
    const ev = (await eventsOf(third, 'invoice.stamp_rejected')).find((e) => e.data.invoice_id === inv.id);
    assert.deepEqual(ev.data, { invoice_id: inv.id, stamping: { status: 'rejected', number: null, rejection_reason: 'resolution_not_activatable' } });

    // SPEC.md: POST /invoices/{id}/stamp answers resolution_not_activatable synchronously; nothing is queued.
    const stampings = async () =>
      (await h.runtime.deps.database.db.selectFrom('stampings').select('id').where('company_id', '=', third.company.id).execute()).length;
    const count = await stampings();
    const manual = (await third.req({ url: '/v1/invoices', body: { customer_id: buyer.id, items: LINES, stamp_policy: 'manual' } })).body;
    for (const id of [manual.id, inv.id]) {
      const refused = await third.req({ url: `/v1/invoices/${id}/stamp`, body: {} });
      expectError(refused, 422, 'resolution_not_activatable', 'resolution_not_activatable');
      assert.match(refused.body.message, /folios/);
    }
    assert.equal(await stampings(), count, 'no stamping was recorded');
    assert.equal((await third.req({ url: `/v1/invoices/${manual.id}` })).body.fiscal_status, null);
    // With a folio again (a new range activated), the same request queues the stamping.
    await h.runtime.deps.database.db
      .updateTable('fiscal_resolutions')
      .set((eb) => ({ to_folio: eb('to_folio', '+', 10n) }))
      .where('company_id', '=', third.company.id)
      .where('document_type', '=', 'invoice')
      .execute();
    const queued = await third.req({ url: `/v1/invoices/${manual.id}/stamp`, body: {} });
    assert.equal(queued.status, 200, queued.raw);
    await drainJobs(h, third);
    assert.equal((await third.req({ url: `/v1/invoices/${manual.id}` })).body.fiscal_status, 'stamped');
  });

  test('live without a fiscal profile: created, stamping rejected before any folio (fiscal_profile_missing)', async () => {
    const buyer = await co.req({
      url: '/v1/customers',
      env: 'live',
      body: {
        first_name: 'Live',
        last_name: 'Buyer',
        email: 'live.buyer@example.com',
        document_type: 'CC',
        document_number: '123456789',
        address: { line: 'Calle 1', city_code: '11001' },
      },
    });
    const res = await create({ customer_id: buyer.body.id, items: LINES, stamp_policy: 'on_issue' }, { env: 'live' });
    assert.equal(res.status, 201, res.raw);
    assert.equal(res.body.is_test, false);
    await drainJobs(h, co);
    const inv = (await co.req({ url: `/v1/invoices/${res.body.id}`, env: 'live' })).body;
    assert.equal(inv.fiscal_status, 'rejected');
    assert.match(inv.stampings[0].rejection_reason, /^fiscal_profile_missing/);
    assert.equal(inv.stampings[0].number, null);
  });

  test('lists: filters, unknown filter 400, sort', async () => {
    const res = await co.req({ url: '/v1/invoices?filter[reference]=REF-000123&sort=-created_at' });
    assert.equal(res.status, 200);
    assert.ok(res.body.data.length >= 1);
    assert.ok(res.body.data.every((i: any) => i.reference === 'REF-000123'));
    expectError(await co.req({ url: '/v1/invoices?filter[amount]=1' }), 400);
    expectError(await co.req({ url: '/v1/invoices?sort=amount' }), 400);
    assert.equal((await co.req({ url: '/v1/invoices?filter[id]=nope' })).body.total, 0);
    assert.equal((await co.req({ url: '/v1/invoices?filter[status]=NOPE' })).body.total, 0);
    assert.equal((await other.req({ url: '/v1/invoices' })).body.total, 0, 'another company sees none');
  });

  test('scoping: other company and the other environment', async () => {
    const inv = (await create({ customer_id: customer.id, items: LINES, stamp_policy: 'on_issue' })).body;
    await drainJobs(h, co);
    for (const url of [`/v1/invoices/${inv.id}`, `/v1/invoices/${inv.id}/xml`, `/v1/invoices/${inv.id}/pdf`]) await expectScoped(co, other, { url });
    await expectScoped(co, other, { url: `/v1/invoices/${inv.id}/credit-notes`, body: { amount: 100 } });
    await expectScoped(co, other, { url: `/v1/invoices/${inv.id}/stamp`, body: {} });
    const detail = (await co.req({ url: `/v1/invoices/${inv.id}` })).body;
    assert.deepEqual(detail.credit_notes, [], 'nothing was issued by the refused requests');
  });

  test('Idempotency-Key on creation: a replay answers the same invoice, one invoice exists', async () => {
    const body = { customer_id: customer.id, items: LINES, reference: 'IDEM-0001' };
    const a = await co.req({ url: '/v1/invoices', body, idem: false, headers: { 'idempotency-key': 'inv-key-1' } });
    const b = await co.req({ url: '/v1/invoices', body, idem: false, headers: { 'idempotency-key': 'inv-key-1' } });
    assert.equal(a.status, 201, a.raw);
    assert.equal(b.status, 201);
    assert.equal(a.body.id, b.body.id);
    assert.equal((await co.req({ url: '/v1/invoices?filter[reference]=IDEM-0001' })).body.total, 1);
  });
});
