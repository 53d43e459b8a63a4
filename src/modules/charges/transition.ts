import type { Insertable, Transaction, Updateable } from 'kysely';
import type { AppDeps } from '../../platform/context.ts';
import type { Executor } from '../../platform/db/database.ts';
import type { DB, Environment } from '../../platform/db/schema.ts';
import { ApiError } from '../../platform/errors/api-error.ts';
import { emitEvent } from '../../platform/outbox/outbox.ts';
import { chargeTransition, type ChargeAction, type ChargeTransition } from './lifecycle.ts';
import { postChargeCollection } from './ledger.ts';
import { toChargeResponse, type ChargeRow } from './present.ts';
import { lockCharge } from './queries.ts';
import type { ChargesTable, ChargeStatus } from './tables.ts';

/**
 * What the charge services need: the caller's scope, an executor and the process dependencies.
 * A RequestContext is one; the reconciler job builds one from AppDeps.
 */
export interface ChargeScope {
  companyId: string;
  environment: Environment;
  db: Executor;
  deps: AppDeps;
  /** A request context wakes this process's workers once its transaction commits. */
  notifyWorkers?: () => void;
}

/** The table forbids `action` from the charge's current status. */
export class ChargeTransitionNotAllowed extends Error {
  constructor(
    readonly from: ChargeStatus,
    readonly action: ChargeAction,
  ) {
    super(`charge transition ${action} is not allowed from ${from}`);
    this.name = 'ChargeTransitionNotAllowed';
  }
}

/** Columns a status sets on entering it. */
function entering(t: ChargeTransition, now: Date): Updateable<ChargesTable> {
  switch (t.to) {
    case 'paid':
      return { paid_at: now };
    case 'failed':
      return t.action === 'cancel' ? { failed_at: now, cancelled_at: now } : { failed_at: now };
    case 'refunded':
      return { refunded_at: now };
    default:
      return {};
  }
}

/**
 * THE one place a charge changes status. Inside `trx`: locks the row, checks the transition table,
 * updates conditionally on the status it read (so a transition happens at most once even if two
 * callers race), and writes the table's event into the outbox in the same transaction. What comes
 * with a status comes here too: entering `paid` approves the charge's payment intent and posts the
 * collection (and its splits) to the ledger — last, so the company's ledger rows stay locked for
 * as short a time as possible; entering `failed` declines the intent.
 * `patch` carries the columns that change with the transition (remarks, network_id, resolved).
 * `locked`: the row as this transaction already locked it (saves the second lock of a chain).
 */
export async function applyChargeTransition(
  trx: Transaction<DB>,
  scope: ChargeScope,
  chargeId: string,
  action: ChargeAction,
  patch: Updateable<ChargesTable> = {},
  locked?: ChargeRow,
): Promise<ChargeRow> {
  const row = locked ?? (await lockCharge(trx, scope, chargeId));
  if (!row) throw new ApiError('record_not_found');
  const t = chargeTransition(row.status, action);
  if (!t) throw new ChargeTransitionNotAllowed(row.status, action);
  const now = scope.deps.clock.now();
  const updated = await trx
    .updateTable('charges')
    .set({ ...patch, ...entering(t, now), status: t.to, updated_at: now })
    .where('company_id', '=', scope.companyId)
    .where('environment', '=', scope.environment)
    .where('id', '=', chargeId)
    .where('status', '=', row.status)
    .returningAll()
    .executeTakeFirst();
  if (!updated) throw new ChargeTransitionNotAllowed(row.status, action);
  if (t.to === 'paid') await settleIntent(trx, scope, updated, { status: 'approved', paid_at: now, remarks: null }, now);
  else if (t.to === 'failed') await settleIntent(trx, scope, updated, { status: 'declined', paid_at: null, remarks: updated.remarks }, now);
  await emitEvent({ ...scope, db: trx }, t.event, toChargeResponse(updated, scope.deps.config.baseUrl), now);
  if (t.to === 'paid') await postChargeCollection(trx, scope, updated);
  return updated;
}

/** The charge's attempt (payment intent) follows its outcome. */
async function settleIntent(
  trx: Transaction<DB>,
  scope: ChargeScope,
  charge: ChargeRow,
  outcome: { status: 'approved' | 'declined'; paid_at: Date | null; remarks: string | null },
  now: Date,
): Promise<void> {
  await trx
    .updateTable('payment_intents')
    .set({ ...outcome, network_id: charge.network_id, updated_at: now })
    .where('company_id', '=', scope.companyId)
    .where('environment', '=', scope.environment)
    .where('id', '=', charge.intent_id)
    .where('status', '=', 'in_progress')
    .execute();
}

/**
 * A new charge enters the table through its `create` row: inserted with that status, with its
 * payment intent (the attempt, `in_progress`), and the row's event, in the same transaction.
 */
export async function insertCharge(
  trx: Transaction<DB>,
  scope: ChargeScope,
  values: Omit<Insertable<ChargesTable>, 'status' | 'company_id' | 'environment'>,
): Promise<ChargeRow> {
  const t = chargeTransition(null, 'create')!;
  const row = await trx
    .insertInto('charges')
    .values({ ...values, company_id: scope.companyId, environment: scope.environment, status: t.to })
    .returningAll()
    .executeTakeFirstOrThrow();
  await trx
    .insertInto('payment_intents')
    .values({
      company_id: scope.companyId,
      environment: scope.environment,
      id: row.intent_id,
      // A charge is its own attempt: no payment (migrations/0008_charges.sql).
      payment_id: null,
      status: 'in_progress',
      method: row.payment_method_type,
      amount: row.amount,
      currency: row.currency,
      remarks: null,
      external_id: row.external_id,
      network_id: null,
      charge_id: row.id,
      created_at: row.created_at,
      updated_at: row.created_at,
      paid_at: null,
    })
    .execute();
  await emitEvent({ ...scope, db: trx }, t.event, toChargeResponse(row, scope.deps.config.baseUrl), row.created_at);
  return row;
}
