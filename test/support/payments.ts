import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { ENGINE, type Company, type Harness } from '../harness.ts';
import { checkEnrollment } from '../../src/modules/accounts/service.ts';
import { EXPIRE_JOB, runExpiration } from '../../src/modules/payments/service.ts';
import type { PaymentStatus } from '../../src/modules/payments/tables.ts';
import type { ServiceScope } from '../../src/platform/context.ts';

/** Helpers shared by the payments tests (not a test file itself). */

export const basePayment = { title: 'Factura FV-1001', amount: 150000 };

export async function createPayment(co: Company, body: Record<string, unknown> = {}, env: 'test' | 'live' = 'test') {
  const res = await co.req({ url: '/v1/payments', body: { ...basePayment, ...body }, env });
  assert.equal(res.status, 200, res.raw);
  return res.body as { id: string; status: string; [k: string]: any };
}

/** The payment's events in the outbox, oldest first. */
export async function paymentEvents(h: Harness, co: Company, paymentId: string): Promise<{ type: string; data: any }[]> {
  const rows = await h.runtime.deps.database.db
    .selectFrom('events')
    .select(['type', 'data', 'id'])
    .where('company_id', '=', co.company.id)
    .where(sql<string>`data->>'id'`, '=', paymentId)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
  return rows.map((r) => ({ type: r.type, data: r.data }));
}

export async function eventTypes(h: Harness, co: Company, paymentId: string): Promise<string[]> {
  return (await paymentEvents(h, co, paymentId)).map((e) => e.type);
}

/** Puts a payment straight into a status (to test the endpoints' rules, not the transitions). */
export async function forceStatus(h: Harness, paymentId: string, status: PaymentStatus, extra: Record<string, unknown> = {}): Promise<void> {
  await h.runtime.deps.database.db
    .updateTable('payments')
    .set({ status, ...extra })
    .where('id', '=', paymentId)
    .execute();
}

export function scopeOf(h: Harness, co: Company, environment: 'test' | 'live' = 'test'): ServiceScope {
  return { companyId: co.company.id, environment, db: h.runtime.deps.database.db, deps: h.runtime.deps };
}

/**
 * Runs the due expiration jobs of these payments. On PGlite (a database per harness) through the
 * real queue; on the shared PostgreSQL database only this test's own jobs, so another test file's
 * jobs never run on this process's clock.
 */
export async function runDueExpirations(h: Harness, paymentIds: string[]): Promise<void> {
  if (ENGINE === 'pglite') {
    await h.runtime.deps.jobs.tick();
    return;
  }
  const db = h.runtime.deps.database.db;
  const jobs = await db
    .selectFrom('jobs')
    .select(['id', 'payload'])
    .where('kind', '=', EXPIRE_JOB)
    .where(sql<string>`payload->>'payment_id'`, 'in', paymentIds)
    .where('run_at', '<=', h.clock.now())
    .execute();
  for (const job of jobs) {
    await runExpiration(h.runtime.deps, job.payload);
    await db.deleteFrom('jobs').where('id', '=', job.id).execute();
  }
}

/** A WALLET account (ACTIVE) of `co` toward `other`'s balance. */
export async function activeWallet(h: Harness, co: Company, other: Company): Promise<string> {
  const customer = await co.req({ url: '/v1/customers', body: { first_name: 'Aliado', last_name: 'SAS' } });
  assert.equal(customer.status, 200, customer.raw);
  const account = await co.req({
    url: '/v1/accounts',
    body: { subtype: 'WALLET', account_number: other.company.id, customer_id: customer.body.id, authorization: true },
  });
  assert.equal(account.status, 200, account.raw);
  await checkEnrollment(h.runtime.deps, { company_id: co.company.id, environment: 'test', account_id: account.body.id });
  const got = await co.req({ url: `/v1/accounts/${account.body.id}` });
  assert.equal(got.body.status, 'ACTIVE');
  return account.body.id;
}
