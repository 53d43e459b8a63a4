import type { RequestContext } from '../../platform/context.ts';
import { inTransaction } from '../../platform/db/database.ts';
import { ApiError, validationError } from '../../platform/errors/api-error.ts';
import { prefixedId } from '../../platform/ids.ts';
import { parseMinor } from '../../platform/money.ts';
import { REJECTION_REASONS } from '../payments/schemas.ts';
import { failedRefundSource, postChargeRefund } from './ledger.ts';
import { CANCELLABLE, CANCELLED_REMARKS, REFUND_MACHINE, RESOLVABLE } from './lifecycle.ts';
import { toChargeResponse } from './present.ts';
import { hasActiveRefund, loadCharge } from './queries.ts';
import { chargeRail, CONNECTOR_HANDLED, connectorHandled, RAIL_OF_METHOD } from './rails.ts';
import { REFUNDABLE_SCENARIO, type ChargeResponse, type ResolveChargeBody } from './schemas.ts';
import { jobPayload, RECONCILE_JOB } from './jobs.ts';
import { failRefundIn, settleRefundIn } from './settle.ts';
import { RefundRefused } from '../../rails/index.ts';
import { applyChargeTransition } from './transition.ts';
import { insertWithTransition } from '../../platform/state-machine.ts';
import { requestOrigin, runOutsideCall } from '../../platform/outside-call.ts';
import { inTenant } from '../../platform/scope.ts';

/** Refund, cancel and resolve of a charge (docs/charges.md); each accepts the charge id or its intent id. */

const REFUND_NOT_CONFIRMED =
  'The refund was recorded and sent, but saving its outcome was not confirmed; it settles by itself shortly. Read the charge before retrying.';

/**
 * POST /charges/{id}/refund: a paid charge is refunded whole. In the request's transaction the
 * charge is locked, the rules checked (10805 refunded or a refund in progress, 10807 not paid,
 * 10806 a test charge, unless created with test_scenario `refundable`), the refund recorded (pending) and its
 * money taken from the balance (a reversal of the collection and of its splits; too small a
 * balance is insufficient_balance); that commits before the rail is called. The rail's answer is
 * saved in its own transaction: charge.refunded. Concurrent refunds: the row lock and a unique
 * index let exactly one through; the others get 10805.
 */
export async function refundCharge(ctx: RequestContext, id: string, body: { amount?: number | string | null }): Promise<ChargeResponse> {
  const answer = await requestRefund(ctx, id, body);
  if ('refusedRefund' in answer) {
    const { refundId, reason } = answer.refusedRefund;
    throw new ApiError('rail_refund_unavailable', {
      message: `The provider refused the refund (${reason}). Refund ${refundId} failed and its amount is back in the available balance (charge.refund_failed); give the money back another way, e.g. a cash-out.`,
      extra: { refund_id: refundId, reason },
    });
  }
  return answer;
}

async function requestRefund(
  ctx: RequestContext,
  id: string,
  body: { amount?: number | string | null },
): Promise<ChargeResponse | { refusedRefund: { refundId: string; reason: string } }> {
  const now = ctx.deps.clock.now();
  const notConfirmed = () => new ApiError('charge_persistence_lost', { message: REFUND_NOT_CONFIRMED });
  return runOutsideCall(requestOrigin(ctx), {
    rail: 'refund',
    record: async (trx) => {
      const scope = { ...ctx, db: trx };
      const charge = await loadCharge(scope, id, true);
      // The rail that gives the money back; a live charge whose rail lost its connector is refused here.
      const rail = await chargeRail(ctx.deps, ctx, charge.payment_method_type);
      const existing = await hasActiveRefund(trx, ctx, charge.id);
      if (charge.status === 'refunded') throw new ApiError('charge_refunded');
      if (existing) throw new ApiError('charge_refunded', { message: 'A refund of this charge is in progress.' });
      // A chargeback is the payer's refund through the network: the dispute decides where the money goes.
      if (charge.dispute_id)
        throw new ApiError('charge_refunded', {
          message: `The charge is disputed (${charge.dispute_id}): the card network or bank returns the money if the dispute is lost; it cannot be refunded.`,
        });
      if (charge.status !== 'paid')
        throw new ApiError('charge_is_not_paid', { message: `The charge is ${charge.status}; only a paid charge can be refunded.` });
      // SPEC.md: a test charge cannot be refunded (checked after the state). The sandbox exception:
      // a charge created with test_scenario `refundable` (and paid by the sandbox rail, not resolve).
      if (charge.environment === 'test' && (charge.test_scenario !== REFUNDABLE_SCENARIO || charge.resolved)) {
        throw new ApiError('charge_is_test', {
          message: `A test charge cannot be refunded. To test refunds, create the charge with test_scenario ${REFUNDABLE_SCENARIO} (POST /v1/charges): that charge, once paid, refunds like a live one.`,
        });
      }
      if (rail.refundsUnavailable) {
        throw new ApiError('rail_refund_unavailable', {
          message: `${rail.refundsUnavailable} Nothing was recorded.`,
          extra: { rail: RAIL_OF_METHOD[charge.payment_method_type] },
        });
      }
      if (body.amount != null) {
        const amount = parseMinor(body.amount);
        if (amount === null || amount !== charge.amount)
          throw validationError({ amount: ['a charge is refunded whole: omit amount or send the charge amount'] });
      }
      const refundId = prefixedId('re', now.getTime());
      await insertWithTransition(trx, scope, REFUND_MACHINE, {
        table: 'charge_refunds',
        action: 'create',
        values: {
          id: refundId,
          charge_id: charge.id,
          amount: charge.amount,
          currency: charge.currency,
          created_at: now,
          updated_at: now,
          succeeded_at: null,
        },
      });
      // After a refused refund the money was collected back under that refund: this one reverses that collection.
      const lastFailed = await trx
        .selectFrom('charge_refunds')
        .select('id')
        .$call(inTenant(ctx))
        .where('charge_id', '=', charge.id)
        .where('status', '=', 'failed')
        .orderBy('failed_at', 'desc')
        .orderBy('id', 'desc')
        .limit(1)
        .executeTakeFirst();
      await postChargeRefund(trx, scope, charge, lastFailed ? failedRefundSource(lastFailed) : undefined);
      const safetyJobId = await ctx.deps.jobs.enqueue(
        trx,
        RECONCILE_JOB,
        jobPayload(charge, { refund_id: refundId }),
        new Date(now.getTime() + ctx.deps.config.chargeReconcileDelayMs),
      );
      return { recorded: { charge, refundId, rail }, resourceId: charge.id, safetyJobId };
    },
    call: async ({ charge, refundId, rail }) => {
      try {
        await rail.refund({ reference: refundId, chargeReference: charge.id, amount: charge.amount, currency: charge.currency });
        return { refused: null };
      } catch (error) {
        // The provider's definitive refusal: the refund fails and its money comes back (never retried).
        if (error instanceof RefundRefused) return { refused: error.reason };
        throw error;
      }
    },
    settle: async (trx, { refundId }, { refused }) => {
      const s = { companyId: ctx.companyId, environment: ctx.environment, notifyWorkers: ctx.notifyWorkers, db: trx, deps: ctx.deps };
      if (refused !== null) {
        await failRefundIn(trx, s, refundId, refused);
        return { refusedRefund: { refundId, reason: refused } };
      }
      return toChargeResponse(await settleRefundIn(trx, s, refundId), ctx.deps.config.baseUrl);
    },
    // The money already left the balance; the reconciler asks the rail again, never a second refund.
    unknown: () => {
      throw notConfirmed();
    },
    lost: notConfirmed,
  });
}

/**
 * POST /charges/{id}/cancel: only a created or processing charge (10808 otherwise); it fails with
 * remarks CANCELLED (charge.failed) and a job voids the debit on the rail after commit.
 */
export async function cancelCharge(ctx: RequestContext, id: string): Promise<ChargeResponse> {
  return inTransaction(ctx.db, async (trx) => {
    const scope = { ...ctx, db: trx };
    const charge = await loadCharge(scope, id, true);
    if (!CANCELLABLE.includes(charge.status)) {
      throw new ApiError('charge_not_cancellable', {
        message: `The charge is ${charge.status}; only created or processing charges can be cancelled.`,
      });
    }
    if (charge.status === 'processing') {
      // A provider that cannot withdraw what it is processing may still collect it: never fail it here.
      const rail = await chargeRail(ctx.deps, scope, charge.payment_method_type);
      if (rail.cancelUnavailable) throw new ApiError('charge_not_cancellable', { message: rail.cancelUnavailable });
    }
    const updated = await applyChargeTransition(trx, scope, charge.id, 'cancel', { remarks: CANCELLED_REMARKS });
    await ctx.deps.jobs.enqueue(trx, RECONCILE_JOB, jobPayload(updated, { void: true }));
    ctx.notifyWorkers();
    return toChargeResponse(updated, ctx.deps.config.baseUrl);
  });
}

/**
 * POST /charges/{id}/resolve (test charges, test key): settles a created or processing charge by
 * hand, through the same transitions a rail's answer takes (approve → paid with its ledger
 * collection; reject → failed with remarks, default TRANSACTION_REJECTED). 403 with a live key;
 * 422 (no code) when the charge is not open.
 */
export async function resolveCharge(ctx: RequestContext, id: string, body: ResolveChargeBody): Promise<ChargeResponse> {
  return inTransaction(ctx.db, async (trx) => {
    const scope = { ...ctx, db: trx };
    const charge = await loadCharge(scope, id, true);
    if (!ctx.isTest || charge.environment !== 'test')
      throw new ApiError('test_only', { message: 'Only a test charge can be resolved, with a test key.' });
    if (!RESOLVABLE.includes(charge.status)) {
      throw new ApiError('not_resolvable', { message: `The charge is ${charge.status}; only a created or processing test charge can be resolved.` });
    }
    if (await connectorHandled(ctx.deps, charge, trx))
      throw new ApiError('not_resolvable', { message: `The charge cannot be resolved: ${CONNECTOR_HANDLED}.` });
    const remarks = body.remarks ?? 'TRANSACTION_REJECTED';
    if (body.action === 'reject' && !(REJECTION_REASONS as readonly string[]).includes(remarks)) {
      throw validationError({ remarks: [`must be one of ${REJECTION_REASONS.join(', ')}`] });
    }
    if (charge.status === 'created') await applyChargeTransition(trx, scope, charge.id, 'submit');
    const updated =
      body.action === 'approve'
        ? await applyChargeTransition(trx, scope, charge.id, 'approve', { resolved: true })
        : await applyChargeTransition(trx, scope, charge.id, 'decline', { resolved: true, remarks });
    return toChargeResponse(updated, ctx.deps.config.baseUrl);
  });
}
