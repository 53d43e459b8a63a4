import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { createHarness, type Company, type Harness } from '../../../test/harness.ts';
import { Receiver } from '../../../test/receiver.ts';
import { drainJobs } from '../../../test/support/invoices.ts';

/**
 * End to end over the API only: customer → resolution → invoice on_payment → paid through the test
 * flow (payment resolve) → invoice.stamped webhook whose xml_url and pdf_url download → refund →
 * invoice.credit_note_issued webhook. Background work runs as the workers would (jobs, then the
 * webhook dispatcher), with the sandbox authority answering asynchronously.
 */
describe('invoicing end to end', () => {
  let h: Harness;
  let co: Company;
  let rx: Receiver;
  before(async () => {
    h = await createHarness({ SANDBOX_STAMP_DELAY_MS: '500' });
    co = await h.company();
    rx = await new Receiver().start();
  });
  after(async () => {
    await rx.close();
    await h.close();
  });

  async function nextWebhook(event: string, secret: string): Promise<any> {
    for (let i = 0; i < 50; i++) {
      await drainJobs(h, co);
      await h.deliverWebhooks();
      const got = rx.received.find((r) => r.headers['x-webhook-event'] === event);
      if (got) {
        assert.equal(got.headers.signature, createHmac('sha256', secret).update(got.raw).digest('hex'));
        return JSON.parse(got.raw.toString('utf8'));
      }
      h.clock.advance(1_000);
    }
    throw new Error(`no ${event} webhook`);
  }

  test('customer → invoice on_payment → paid → stamped → documents → refund → credit note', async () => {
    const hook = await co.req({
      url: '/v1/webhooks',
      body: {
        name: 'ERP',
        description: 'invoicing',
        url: rx.url,
        events: ['invoice.created', 'invoice.paid', 'invoice.stamped', 'invoice.credit_note_issued'],
      },
    });
    assert.equal(hook.status, 200, hook.raw);
    const secret = hook.body.data.secret;

    const customer = await co.req({
      url: '/v1/customers',
      body: {
        type: 'company',
        first_name: 'Distribuidora Andina SAS',
        email: 'facturas@andina.example',
        document_type: 'NIT',
        document_number: '800197268',
        document_verification: '4',
        fiscal_responsibilities: ['O-13'],
        tax_regime: '48',
        address: { line: 'Carrera 7 # 71-21', city_code: '11001' },
      },
    });
    assert.equal(customer.status, 200, customer.raw);

    const resolution = await co.req({
      url: '/v1/fiscal-resolutions',
      body: {
        number: '18764000001234',
        prefix: 'FE',
        document_type: 'invoice',
        from: 1,
        to: 5000,
        valid_from: '2026-01-01',
        valid_until: '2030-12-31',
        technical_key: 'a1b2c3d4e5f6a7b8c9d0',
      },
    });
    assert.equal(resolution.status, 200, resolution.raw);
    assert.equal(resolution.body.status, 'draft');
    const active = await co.req({ url: `/v1/fiscal-resolutions/${resolution.body.id}/activate`, body: {} });
    assert.equal(active.body.status, 'active', active.raw);

    const created = await co.req({
      url: '/v1/invoices',
      body: {
        customer_id: customer.body.id,
        stamp_policy: 'on_payment',
        name: 'Pedido 778',
        items: [{ description: 'Licencia anual', unit_amount: 120_000_00, tax: { rate: 19 } }],
      },
      headers: { 'idempotency-key': 'e2e-invoice-1' },
      idem: false,
    });
    assert.equal(created.status, 201, created.raw);
    const inv = created.body;
    assert.equal(inv.fiscal_status, null);
    assert.equal((await nextWebhook('invoice.created', secret)).data.id, inv.id);

    const paid = await co.req({ url: `/v1/payments/${inv.payment_id}/resolve`, body: { action: 'approve' } });
    assert.equal(paid.body.status, 'approved', paid.raw);
    assert.equal((await nextWebhook('invoice.paid', secret)).data.status, 'PAID');

    const stamped = await nextWebhook('invoice.stamped', secret);
    assert.deepEqual(Object.keys(stamped), ['id', 'event', 'created_at', 'is_test', 'data']);
    const s = stamped.data.stamping;
    assert.equal(stamped.data.invoice_id, inv.id);
    assert.deepEqual(Object.keys(s), ['type', 'status', 'number', 'cufe', 'xml_url', 'pdf_url', 'total']);
    assert.equal(s.status, 'accepted');
    assert.equal(s.total, 142_800_00);
    assert.match(s.cufe, /^[0-9a-f]{96}$/);
    assert.equal(s.number, 'FE1', 'numbered under the resolution just activated');
    const path = (url: string) => url.replace('http://recaudo.test', '');
    const xml = await co.req({ url: path(s.xml_url) });
    assert.equal(xml.status, 200);
    assert.ok(xml.raw.includes(s.cufe) && xml.raw.includes(s.number));
    const pdf = await h.app.inject({ url: path(s.pdf_url), headers: { authorization: `Bearer ${co.keys.test}` } });
    assert.equal(pdf.statusCode, 200);
    assert.equal(pdf.rawPayload.subarray(0, 5).toString(), '%PDF-');

    const refund = await co.req({ url: `/v1/payments/${inv.payment_id}/refund`, body: {} });
    assert.equal(refund.status, 200, refund.raw);
    const note = await nextWebhook('invoice.credit_note_issued', secret);
    assert.equal(note.data.invoice_id, inv.id);
    assert.equal(note.data.amount, 142_800_00);
    assert.equal(note.data.status, 'issued');
    assert.match(note.data.cude, /^[0-9a-f]{96}$/);
    const detail = (await co.req({ url: `/v1/invoices/${inv.id}` })).body;
    assert.equal(detail.status, 'REFUNDED');
    assert.equal(detail.credit_notes[0].id, note.data.id);
  });
});
