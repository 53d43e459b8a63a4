import assert from 'node:assert/strict';
import type { Company, Harness } from '../../../test/harness.ts';
import { POLL_MS } from './stamping.ts';

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

/** Runs background jobs (advancing the clock past each poll) until nothing is left to do. */
export async function drainJobs(h: Harness, rounds = 20): Promise<void> {
  for (let i = 0; i < rounds; i++) {
    const ran = await h.runtime.deps.jobs.tick();
    h.clock.advance(POLL_MS + 1);
    const more = await h.runtime.deps.jobs.tick();
    if (ran === 0 && more === 0) return;
  }
}

/** The events of a type for the company (newest first), as GET /events answers them. */
export async function eventsOf(co: Company, type: string): Promise<any[]> {
  const res = await co.req({ url: `/v1/events?filter[type]=${type}&per_page=100` });
  assert.equal(res.status, 200, res.raw);
  return res.body.data;
}
