import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHarness, ENGINE, type Company, type Harness } from '../../../test/harness.ts';
import { runStamping } from './stamping.ts';
import { drainJobs, invoiceableCustomer, LINES } from '../../../test/support/invoices.ts';

/** Numbering and money under concurrency (real concurrency on PostgreSQL; serialised on PGlite). */
describe(`invoices under concurrency (${ENGINE})`, () => {
  let h: Harness;
  let co: Company;
  let customer: any;
  before(async () => {
    h = await createHarness({ SANDBOX_STAMP_DELAY_MS: '0' });
    co = await h.company();
    customer = await invoiceableCustomer(co);
  });
  after(() => h.close());

  async function stampingJobs(): Promise<Record<string, unknown>[]> {
    const jobs = await h.runtime.deps.database.db.selectFrom('jobs').select('payload').where('kind', '=', 'invoices.stamp').execute();
    return jobs.map((j) => j.payload).filter((p) => p.company_id === co.company.id);
  }

  test('100 concurrent stamped invoices: folios contiguous, no gap, no duplicate', async () => {
    // 100 on PostgreSQL (the acceptance); fewer on the embedded engine, which serialises everything anyway.
    const N = ENGINE === 'postgres' ? 100 : 25;
    const created = await Promise.all(
      Array.from({ length: N }, () => co.req({ url: '/v1/invoices', body: { customer_id: customer.id, items: LINES, stamp_policy: 'on_issue' } })),
    );
    for (const r of created) assert.equal(r.status, 201, r.raw);
    // Every stamping job at once, each twice (a retry racing the first run).
    const jobs = await stampingJobs();
    assert.ok(jobs.length > 0);
    await Promise.all([...jobs, ...jobs].map((p) => runStamping(h.runtime.deps, p)));
    await drainJobs(h, co);
    const rows = await h.runtime.deps.database.db
      .selectFrom('stampings')
      .select(['folio', 'number', 'status', 'invoice_id'])
      .where('company_id', '=', co.company.id)
      .where('kind', '=', 'invoice')
      .execute();
    assert.equal(rows.length, N, 'one attempt per invoice');
    assert.ok(rows.every((r) => r.status === 'accepted'));
    const folios = rows.map((r) => Number(r.folio)).sort((a, b) => a - b);
    assert.equal(new Set(folios).size, N, 'no duplicate');
    assert.equal(folios[N - 1] - folios[0], N - 1, 'contiguous: no gap');
    assert.equal(new Set(rows.map((r) => r.invoice_id)).size, N);
    const list = await co.req({ url: '/v1/invoices?filter[fiscal_status]=stamped&per_page=100' });
    assert.equal(list.body.total, N);
  });

  test('20 concurrent partial credit notes never exceed the total', async () => {
    const inv = (await co.req({ url: '/v1/invoices', body: { customer_id: customer.id, items: LINES, stamp_policy: 'on_issue' } })).body;
    await drainJobs(h, co);
    const total = inv.totals.total; // 2,975,000 cents
    const part = Math.floor(total / 15) + 1; // 14 fit, the 15th does not
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) => co.req({ url: `/v1/invoices/${inv.id}/credit-notes`, body: { amount: part, reason: `Parcial ${i}` } })),
    );
    const ok = results.filter((r) => r.status === 200);
    const refused = results.filter((r) => r.status === 422);
    assert.equal(ok.length + refused.length, 20, results.map((r) => r.raw).join('\n'));
    assert.ok(refused.every((r) => r.body.code_name === 'credit_note_not_issuable'));
    assert.equal(ok.length, Math.floor(total / part));
    await drainJobs(h, co);
    const detail = (await co.req({ url: `/v1/invoices/${inv.id}` })).body;
    const sum = detail.credit_notes.reduce((s: number, cn: any) => s + cn.amount, 0);
    assert.ok(sum <= total);
    assert.equal(sum, ok.length * part);
    assert.equal(detail.credited_amount, sum);
    assert.ok(detail.credit_notes.every((cn: any) => cn.status === 'issued'));
    const folios = detail.credit_notes.map((cn: any) => Number(cn.number.replace(/^\D+/, ''))).sort((a: number, b: number) => a - b);
    assert.equal(new Set(folios).size, folios.length);
  });
});
