import type { Insertable, Transaction, Updateable } from 'kysely';
import type { ServiceScope } from '../../platform/context.ts';
import type { DB } from '../../platform/db/schema.ts';
import { ApiError } from '../../platform/errors/api-error.ts';
import { applyTransition, insertWithTransition } from '../../platform/state-machine.ts';
import { openChargeIntent, settleChargeIntent } from '../payments/intents.ts';
import { CHARGE_MACHINE, type ChargeAction, type ChargeTransition } from './lifecycle.ts';
import { postChargeCollection } from './ledger.ts';
import { toChargeResponse, type ChargeRow } from './present.ts';
import { lockCharge } from './queries.ts';
import type { ChargesTable } from './tables.ts';

export { TransitionNotAllowed } from '../../platform/state-machine.ts';

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
 * THE one place a charge changes status, on the platform's engine: inside `trx` it locks the row,
 * applies the table's transition (conditional update, the row's event in the same transaction).
 * What comes with a status comes here too: entering `paid` approves the charge's attempt (the
 * payments module's intent) and posts the collection (and its splits) to the ledger — last, so the
 * company's ledger rows stay locked for as short a time as possible; entering `failed` declines
 * the attempt. `patch` carries the columns that change with the transition (remarks, network_id,
 * resolved). `locked`: the row as this transaction already locked it (saves a second lock).
 */
export async function applyChargeTransition(
  trx: Transaction<DB>,
  scope: ServiceScope,
  chargeId: string,
  action: ChargeAction,
  patch: Updateable<ChargesTable> = {},
  locked?: ChargeRow,
): Promise<ChargeRow> {
  const row = locked ?? (await lockCharge(trx, scope, chargeId));
  if (!row) throw new ApiError('record_not_found');
  const now = scope.deps.clock.now();
  const { row: updated, transition } = await applyTransition(trx, scope, CHARGE_MACHINE, {
    table: 'charges',
    row,
    action,
    now,
    set: (t) => ({ ...patch, ...entering(t, now) }),
    present: (r) => toChargeResponse(r, scope.deps.config.baseUrl),
  });
  // A late approval leaves the attempt as it ended (declined): the charge carries the money.
  if ((transition.to === 'paid' || transition.to === 'failed') && action !== 'late_approve') {
    const approved = transition.to === 'paid';
    await settleChargeIntent(
      trx,
      scope,
      updated.intent_id,
      { status: approved ? 'approved' : 'declined', remarks: approved ? null : updated.remarks, network_id: updated.network_id },
      now,
    );
  }
  if (transition.to === 'paid') await postChargeCollection(trx, scope, updated);
  return updated;
}

/**
 * A new charge enters the table through its `create` row: inserted with that status, with its
 * attempt (the payments module's intent, `in_progress`), and the row's event, in `trx`.
 */
export async function insertCharge(
  trx: Transaction<DB>,
  scope: ServiceScope,
  values: Omit<Insertable<ChargesTable>, 'status' | 'company_id' | 'environment'>,
): Promise<ChargeRow> {
  const row = await insertWithTransition<ChargeRow>(trx, scope, CHARGE_MACHINE, {
    table: 'charges',
    action: 'create',
    values,
    present: (r) => toChargeResponse(r, scope.deps.config.baseUrl),
  });
  await openChargeIntent(trx, scope, row);
  return row;
}
