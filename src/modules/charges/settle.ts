import type { Transaction } from 'kysely';
import type { DB } from '../../platform/db/schema.ts';
import type { AppDeps, ServiceScope } from '../../platform/context.ts';
import type { Executor } from '../../platform/db/database.ts';
import { ApiError } from '../../platform/errors/api-error.ts';
import { FINAL, REFUND_MACHINE } from './lifecycle.ts';
import type { ChargeRow } from './present.ts';
import { findCharge, lockCharge } from './queries.ts';
import { PROVIDER_FINAL_WITHIN_MS, ProviderNeverFinal, RefundRefused, type DebitOutcome, type DebitRequest } from '../../rails/index.ts';
import { postTogether, recordCollection } from '../ledger/service.ts';
import { chargeSplitShares, failedRefundSource } from './ledger.ts';
import { emitEvent } from '../../platform/outbox/outbox.ts';
import { toChargeResponse } from './present.ts';
import { iso } from '../../platform/scope.ts';
import { chargeRail } from './rails.ts';
import { reconcilePayerCharge, runExpire } from './collect.ts';
import { EXPIRE_JOB, jobPayload, RECONCILE_JOB } from './jobs.ts';
import { isPayerMethod } from './tables.ts';
import { applyChargeTransition } from './transition.ts';
import { applyTransition } from '../../platform/state-machine.ts';
import { askRail, settleAlone } from '../../platform/outside-call.ts';
import { inTenant } from '../../platform/scope.ts';

/**
 * Saving what the rail answered, and the reconciler (docs/charges.md "90005 never loses a
 * charge"). The request that creates a charge commits it (status created) together with a
 * reconcile job before calling the rail; after the call it saves the outcome in a transaction of
 * its own. If that save never happens (the process died, the database failed: 503 90005), the job
 * asks the rail again (every rail call is idempotent by reference) and saves the answer. The same
 * job settles bank-account debits when the (sandbox) bank does, and refunds whose save was lost.
 */

/** What the rail needs to know about a charge (the card's outcome class and expiry for a card). */
export async function debitRequestFor(
  db: Executor,
  charge: ChargeRow,
  known?: { outcome_class: string; exp_month: number; exp_year: number; rail_source: string | null },
): Promise<DebitRequest> {
  let card: DebitRequest['card'] = known
    ? { outcome_class: known.outcome_class, exp_month: known.exp_month, exp_year: known.exp_year, source: known.rail_source }
    : null;
  if (charge.card_id && !card) {
    // A card deleted after the charge was created still answers for it.
    const row = await db
      .selectFrom('cards')
      .select(['outcome_class', 'exp_month', 'exp_year', 'rail_source as source'])
      .$call(inTenant({ companyId: charge.company_id, environment: charge.environment }))
      .where('id', '=', charge.card_id)
      .executeTakeFirst();
    card = row ?? { outcome_class: 'TRANSACTION_REJECTED', exp_month: 1, exp_year: 2000 };
  }
  return {
    reference: charge.id,
    method: charge.payment_method_type === 'card' ? 'card' : 'account',
    amount: charge.amount,
    currency: charge.currency,
    card,
    test_scenario: charge.test_scenario,
    installments: charge.installments ?? 1,
    submittedAt: new Date(charge.created_at),
  };
}

/**
 * The final save of a debit's outcome, in its own transaction: created → processing (the rail has
 * it), then paid or failed when the outcome is final (the ledger posting and the intent come with
 * the transition). A debit still pending gets a reconcile job at the time the rail settles it. A
 * charge already settled otherwise (cancelled, resolved) is left as it is.
 */
export async function saveDebitOutcome(
  deps: AppDeps,
  scope: Omit<ServiceScope, 'db' | 'deps'>,
  chargeId: string,
  outcome: DebitOutcome,
): Promise<ChargeRow> {
  return settleAlone(deps, scope, (trx, s) => settleDebitIn(trx, s, chargeId, outcome));
}

/** saveDebitOutcome inside the caller's transaction (the settle step of POST /charges). */
export async function settleDebitIn(trx: Transaction<DB>, s: ServiceScope, chargeId: string, outcome: DebitOutcome): Promise<ChargeRow> {
  let row = await lockCharge(trx, s, chargeId);
  if (!row) throw new ApiError('record_not_found');
  // The row stays locked by this transaction: each transition gets it as it left it.
  if (row.status === 'created') row = await applyChargeTransition(trx, s, chargeId, 'submit', { network_id: outcome.networkId }, row);
  if (row.status === 'processing') {
    if (outcome.status === 'approved') row = await applyChargeTransition(trx, s, chargeId, 'approve', {}, row);
    else if (outcome.status === 'declined') row = await applyChargeTransition(trx, s, chargeId, 'decline', { remarks: outcome.remarks }, row);
    else if (outcome.settleAt) await s.deps.jobs.enqueue(trx, RECONCILE_JOB, jobPayload(row, {}), outcome.settleAt);
  }
  return row;
}

/**
 * The refund's final save: pending → succeeded and the charge paid → refunded (charge.refunded).
 * The money left the balance when the refund was requested (operations.ts).
 */
export async function saveRefundOutcome(deps: AppDeps, scope: Omit<ServiceScope, 'db' | 'deps'>, refundId: string): Promise<ChargeRow> {
  return settleAlone(deps, scope, (trx, s) => settleRefundIn(trx, s, refundId));
}

/** A refund and its charge, locked in the order used everywhere: the charge, then its refund. */
async function lockRefund(trx: Transaction<DB>, s: ServiceScope, refundId: string) {
  const found = await trx.selectFrom('charge_refunds').select('charge_id').$call(inTenant(s)).where('id', '=', refundId).executeTakeFirst();
  if (!found) throw new ApiError('record_not_found');
  const charge = (await lockCharge(trx, s, found.charge_id))!;
  const refund = await trx
    .selectFrom('charge_refunds')
    .selectAll()
    .$call(inTenant(s))
    .where('id', '=', refundId)
    .forUpdate()
    .executeTakeFirstOrThrow();
  return { charge, refund };
}

/**
 * A refund the rail refused definitively (RefundRefused): pending → failed with the reason, the
 * money back in the balance as it was before the refund (a new collection of the charge's amount
 * and splits, source the refund: a reversal is never reversed), and charge.refund_failed with the
 * charge (still paid) and `refund_failure`. A refund no longer pending is left as it is.
 */
export async function failRefundIn(trx: Transaction<DB>, s: ServiceScope, refundId: string, reason: string): Promise<ChargeRow> {
  const { charge, refund } = await lockRefund(trx, s, refundId);
  if (refund.status !== 'pending') return charge;
  const now = s.deps.clock.now();
  const failureReason = reason.slice(0, 500);
  await applyTransition(trx, s, REFUND_MACHINE, {
    table: 'charge_refunds',
    row: refund,
    action: 'fail',
    now,
    set: () => ({ failed_at: now, failure_reason: failureReason }),
  });
  await postTogether(trx, s, async () => {
    await recordCollection(trx, s, {
      currency: charge.currency,
      amount: charge.amount,
      source: failedRefundSource(refund),
      splits: chargeSplitShares(charge),
    });
  });
  await emitEvent(
    { ...s, db: trx },
    'charge.refund_failed',
    {
      ...toChargeResponse(charge, s.deps.config.baseUrl),
      refund_failure: { refund_id: refund.id, reason: failureReason, failed_at: iso(now) },
    },
    now,
  );
  return charge;
}

/** The refund's failure saved in its own transaction (the reconciler's answer). */
export async function saveRefundFailure(
  deps: AppDeps,
  scope: Omit<ServiceScope, 'db' | 'deps'>,
  refundId: string,
  reason: string,
): Promise<ChargeRow> {
  return settleAlone(deps, scope, (trx, s) => failRefundIn(trx, s, refundId, reason));
}

/** saveRefundOutcome inside the caller's transaction (the settle step of the refund request). */
export async function settleRefundIn(trx: Transaction<DB>, s: ServiceScope, refundId: string): Promise<ChargeRow> {
  const locked = await lockRefund(trx, s, refundId);
  let charge = locked.charge;
  const refund = locked.refund;
  if (refund.status === 'pending') {
    const now = s.deps.clock.now();
    await applyTransition(trx, s, REFUND_MACHINE, {
      table: 'charge_refunds',
      row: refund,
      action: 'succeed',
      now,
      set: () => ({ succeeded_at: now }),
    });
    charge = await applyChargeTransition(trx, s, charge.id, 'refund');
  }
  return charge;
}

/**
 * The reconcile job: a charge not settled yet asks the rail where it stands (submitting it if the
 * request never did) and saves the answer; a refund whose save was lost asks the rail again and
 * saves it; a cancelled charge is voided on the rail. Idempotent: running it twice changes nothing.
 */
export async function runReconcile(deps: AppDeps, payload: Record<string, unknown>): Promise<void> {
  const scope = { companyId: String(payload.company_id), environment: payload.environment === 'live' ? ('live' as const) : ('test' as const) };
  const db = deps.database.db;
  const charge = await findCharge(db, scope, String(payload.charge_id));
  if (payload.unregistered_qr === true) {
    // An rtkey registration without a saved answer: when no charge holds its reference, the QR the
    // scheme may have registered is withdrawn (idempotent by the reference).
    if (!charge) await askRail(deps, 'rtkey', async () => (await chargeRail(deps, scope, 'rtkey')).cancel(String(payload.charge_id)));
    return;
  }
  if (!charge) return;
  const method = charge.payment_method_type;
  if (payload.void === true) {
    // A cancelled charge: the debit is voided, or the bank session, QR or wallet request withdrawn.
    if (isPayerMethod(method)) await askRail(deps, method, async () => (await chargeRail(deps, scope, method)).cancel(charge.id));
    else await askRail(deps, method, async () => (await chargeRail(deps, scope, method)).void(charge.id));
    return;
  }
  if (typeof payload.refund_id === 'string') {
    const refund = await db
      .selectFrom('charge_refunds')
      .select(['status', 'amount', 'currency'])
      .$call(inTenant(scope))
      .where('id', '=', payload.refund_id)
      .executeTakeFirst();
    if (!refund || refund.status !== 'pending') return;
    const refundId = payload.refund_id;
    const refused = await askRail(deps, method, async () => {
      try {
        await (
          await chargeRail(deps, scope, method)
        ).refund({
          reference: refundId,
          chargeReference: charge.id,
          amount: refund.amount,
          currency: refund.currency,
        });
        return null;
      } catch (error) {
        if (error instanceof RefundRefused) return error.reason;
        throw error;
      }
    });
    if (refused !== null) await saveRefundFailure(deps, scope, refundId, refused);
    else await saveRefundOutcome(deps, scope, refundId);
    return;
  }
  if (FINAL.includes(charge.status)) return;
  // Banklink, rtkey and wallet charges wait for the payer: only their registration is reconciled.
  if (isPayerMethod(method)) return reconcilePayerCharge(deps, charge);
  const rail = await chargeRail(deps, scope, method);
  const request = await debitRequestFor(db, charge);
  const outcome = await askRail(deps, method, () => (charge.status === 'created' ? rail.debit(request) : rail.status(request)));
  // A provider that keeps a debit PENDING for days: the reconciler stops asking by itself (job dead, a person looks).
  const openMs = deps.clock.now().getTime() - new Date(charge.created_at).getTime();
  if (outcome.status === 'pending' && outcome.settleAt && rail.name !== 'sandbox' && openMs > PROVIDER_FINAL_WITHIN_MS) {
    throw new ProviderNeverFinal(`charge ${charge.id}`, openMs);
  }
  await saveDebitOutcome(deps, scope, charge.id, outcome);
}

export function registerChargeJobs(deps: AppDeps): void {
  deps.jobs.register(RECONCILE_JOB, (payload) => runReconcile(deps, payload));
  deps.jobs.register(EXPIRE_JOB, (payload) => runExpire(deps, payload));
}
