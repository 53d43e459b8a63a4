import assert from 'node:assert/strict';
import { sql } from 'kysely';
import type { Company, Harness } from '../harness.ts';
import { bankId } from '../../src/modules/banks/catalogue.ts';
import { checkEnrollment } from '../../src/modules/accounts/service.ts';
import { createCard, createCustomer } from './cards.ts';
import { EXPIRE_JOB, RECONCILE_JOB } from '../../src/modules/charges/jobs.ts';
import { runReconcile } from '../../src/modules/charges/settle.ts';
import { runExpire } from '../../src/modules/charges/collect.ts';

/** Helpers shared by the charges tests (not a test file itself). */

export const BANCOLOMBIA = bankId('1007');
export const NEQUI = bankId('1507');
export const DAVIPLATA = bankId('1551');
/** A bank with banklink: false (docs/accounts.md). */
export const COOPCENTRAL = bankId('1066');

/** An account of the customer, ACTIVE (the sandbox enrollment settled) unless told otherwise. */
export async function createAccount(
  h: Harness,
  co: Company,
  customerId: string,
  body: Record<string, unknown> = {},
  opts: { activate?: boolean; env?: 'test' | 'live' } = {},
) {
  const env = opts.env ?? 'test';
  const res = await co.req({
    url: '/v1/accounts',
    env,
    body: { subtype: 'SAVINGS', bank_id: BANCOLOMBIA, account_number: '1234567890', authorization: true, customer_id: customerId, ...body },
  });
  assert.equal(res.status, 200, res.raw);
  if (res.body.authorization === false) {
    // A payout destination: ACTIVE at once, in live too, with no database edit.
    assert.equal(res.body.status, 'ACTIVE', res.raw);
  } else if (opts.activate !== false) {
    // Debit enrollment in live needs a connector that offers it; none of the fakes does, so a live
    // debit account is made ACTIVE here (what an enrollment connector's answer would do).
    if (env === 'live') await h.runtime.deps.database.db.updateTable('accounts').set({ status: 'ACTIVE' }).where('id', '=', res.body.id).execute();
    else await checkEnrollment(h.runtime.deps, { company_id: co.company.id, environment: env, account_id: res.body.id });
  }
  return res.body.id as string;
}

/** A customer with an authorized card and an ACTIVE authorized savings account. */
export async function payer(h: Harness, co: Company, env: 'test' | 'live' = 'test') {
  const customer = await createCustomer(co, env);
  const card = await createCard(co, customer, {}, env);
  const account = await createAccount(h, co, customer, {}, { env });
  return { customer, card: card.id, account };
}

export function chargeBody(customerId: string, method: { card_id?: string; account_id?: string }, extra: Record<string, unknown> = {}) {
  return { amount: 150000, title: 'Cuota de octubre', customer_id: customerId, ...method, ...extra };
}

/**
 * Runs the due reconcile jobs of these charges (until none is due). On the shared PostgreSQL
 * database the queue holds other test files' jobs too: only this test's own jobs run here.
 */
export async function runChargeJobs(
  h: Harness,
  chargeIds: string[],
  kind: typeof RECONCILE_JOB | typeof EXPIRE_JOB = RECONCILE_JOB,
): Promise<number> {
  const db = h.runtime.deps.database.db;
  let ran = 0;
  for (;;) {
    const jobs = await db
      .selectFrom('jobs')
      .select(['id', 'payload'])
      .where('kind', '=', kind)
      .where(sql<string>`payload->>'charge_id'`, 'in', chargeIds)
      .where('run_at', '<=', h.clock.now())
      .orderBy('run_at')
      .execute();
    if (jobs.length === 0) return ran;
    for (const job of jobs) {
      await (kind === EXPIRE_JOB ? runExpire : runReconcile)(h.runtime.deps, job.payload);
      await db.deleteFrom('jobs').where('id', '=', job.id).execute();
      ran++;
    }
  }
}

/** The charge's events in the outbox, oldest first. */
export async function chargeEvents(h: Harness, co: Company, chargeId: string): Promise<{ type: string; data: any }[]> {
  const rows = await h.runtime.deps.database.db
    .selectFrom('events')
    .select(['type', 'data'])
    .where('company_id', '=', co.company.id)
    .where(sql<string>`data->>'id'`, '=', chargeId)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
  return rows.map((r) => ({ type: r.type, data: r.data }));
}

export async function balance(co: Company, currency = 'COP', env: 'test' | 'live' = 'test'): Promise<{ available: number; pending: number }> {
  const res = await co.req({ url: '/v1/balances', env });
  assert.equal(res.status, 200, res.raw);
  return res.body.data.find((b: { currency: string }) => b.currency === currency) ?? { available: 0, pending: 0 };
}

/** The due expire jobs of these charges (banklink, rtkey, walletb). */
export function runExpireJobs(h: Harness, chargeIds: string[]): Promise<number> {
  return runChargeJobs(h, chargeIds, EXPIRE_JOB);
}

/** A customer with a document on file (walletb matches it). */
export async function customerWithDocument(
  co: Company,
  document = '1020304050',
  documentType = 'CC',
  env: 'test' | 'live' = 'test',
): Promise<string> {
  const res = await co.req({
    url: '/v1/customers',
    env,
    body: { first_name: 'Ana', last_name: 'Gómez', email: 'ana@example.com', document_type: documentType, document_number: document },
  });
  assert.equal(res.status, 200, res.raw);
  return res.body.id;
}

/**
 * A wallet account (ELECTRONIC_DEPOSIT at Nequi or Daviplata, connection_type CONFIRMATION) of the
 * customer with that phone's number, ACTIVE after the holder's confirmation (OTP 123456) unless
 * told otherwise.
 */
export async function walletAccount(
  co: Company,
  customerId: string,
  national: string,
  bank = NEQUI,
  opts: { validate?: boolean; env?: 'test' | 'live' } = {},
): Promise<string> {
  const env = opts.env ?? 'test';
  const res = await co.req({
    url: '/v1/accounts',
    env,
    body: { subtype: 'ELECTRONIC_DEPOSIT', bank_id: bank, account_number: national, authorization: true, customer_id: customerId },
  });
  assert.equal(res.status, 200, res.raw);
  if (opts.validate !== false) {
    const ok = await co.req({ url: `/v1/accounts/${res.body.id}/validate`, env, body: { otp: '123456' } });
    assert.equal(ok.status, 200, ok.raw);
    assert.equal(ok.body.status, 'ACTIVE');
  }
  return res.body.id;
}

export const redirectUrl = 'https://tienda.example.com/gracias?pedido=77';

export function banklinkBody(customerId: string, extra: Record<string, unknown> = {}) {
  return {
    amount: 125000,
    bank_id: BANCOLOMBIA,
    customer_id: customerId,
    redirect_url: redirectUrl,
    external_id: 'pedido-77',
    reference: 'FAC-2025-0077',
    ...extra,
  };
}

/** A customer with what PSE through a provider asks of a payer: an identity document, an e-mail and a mobile. */
export async function pseCustomer(co: Company, env: 'test' | 'live' = 'live', extra: Record<string, unknown> = {}): Promise<string> {
  const res = await co.req({
    url: '/v1/customers',
    env,
    body: {
      first_name: 'Marta',
      last_name: 'Rojas',
      email: 'marta@example.com',
      document_type: 'CC',
      document_number: '1020304050',
      phone: '+573001234567',
      ...extra,
    },
  });
  assert.equal(res.status, 200, res.raw);
  return res.body.id as string;
}
