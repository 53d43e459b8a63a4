import assert from 'node:assert/strict';
import type { Company, Harness } from '../harness.ts';
import { runStamping, sendStampedEmail } from '../../src/modules/invoices/stamping.ts';
import { EMAIL_JOB, POLL_MS, STAMP_JOB } from '../../src/modules/invoices/stamping-request.ts';

/** A customer with every receiver field an invoice needs (natural person, CC). */
export async function invoiceableCustomer(co: Company, extra: Record<string, unknown> = {}): Promise<any> {
  const res = await co.req({
    url: '/v1/customers',
    body: {
      first_name: 'Ana',
      last_name: 'Pérez',
      email: `ana.${Math.random().toString(36).slice(2, 8)}@example.com`,
      phone: '+573001234567',
      document_type: 'CC',
      document_number: '1020304050',
      address: { line: 'Calle 100 # 10-20', city_code: '11001' },
      ...extra,
    },
  });
  assert.ok(res.status === 200 || res.status === 201, res.raw);
  return res.body;
}

export const LINES = [
  { description: 'Consultoría', unit_amount: 1_000_000, quantity: 2, tax: { rate: 19 } },
  { description: 'Soporte', unit_amount: 595_000, tax: { rate: 19, behavior: 'inclusive' } },
];

/**
 * Runs this module's background jobs of the given companies (advancing the clock past each poll)
 * until none is due. Only these companies' jobs: on PostgreSQL other test files share the jobs table.
 */
export async function drainJobs(h: Harness, ...companies: Company[]): Promise<void> {
  const db = h.runtime.deps.database.db;
  const ids = new Set(companies.map((c) => c.company.id));
  for (let round = 0; round < 100; round++) {
    const due = await db
      .selectFrom('jobs')
      .selectAll()
      .where('kind', 'in', [STAMP_JOB, EMAIL_JOB])
      .where('run_at', '<=', h.clock.now())
      .where((eb) => eb.or([eb('locked_until', 'is', null), eb('locked_until', '<', h.clock.now())]))
      .orderBy('run_at')
      .execute();
    const mine = due.filter((j) => ids.has(String(j.payload.company_id)));
    if (mine.length === 0) {
      const later = (await db.selectFrom('jobs').select(['payload', 'run_at', 'locked_until']).where('kind', '=', STAMP_JOB).execute()).filter((j) =>
        ids.has(String(j.payload.company_id)),
      );
      if (later.length === 0) return;
      // To the next poll, or past a time another process's clock set (a shared PostgreSQL queue: its
      // runner may have leased or rescheduled one of these jobs by its own manual clock).
      const next = Math.min(...later.map((j) => Math.max(new Date(j.run_at).getTime(), j.locked_until ? new Date(j.locked_until).getTime() : 0)));
      h.clock.advance(Math.max(POLL_MS + 1, next - h.clock.now().getTime() + 1));
      continue;
    }
    for (const job of mine) {
      const claimed = await db.deleteFrom('jobs').where('id', '=', job.id).returning('id').executeTakeFirst();
      if (!claimed) continue;
      if (job.kind === STAMP_JOB) await runStamping(h.runtime.deps, job.payload);
      else await sendStampedEmail(h.runtime.deps, job.payload);
    }
  }
  throw new Error('jobs still due after 100 rounds');
}

/** The events of a type for the company (newest first), as GET /events answers them. */
export async function eventsOf(co: Company, type: string): Promise<any[]> {
  const res = await co.req({ url: `/v1/events?filter[type]=${type}&per_page=100` });
  assert.equal(res.status, 200, res.raw);
  return res.body.data;
}
