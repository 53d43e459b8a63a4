import { askRail, jobOrigin, runOutsideCall } from '../../platform/outside-call.ts';
import type { AppDeps } from '../../platform/context.ts';
import type { Tenant } from '../../platform/scope.ts';
import type { IntentRow } from './queries.ts';
import type { PaymentMethod } from './tables.ts';
import type { Executor } from '../../platform/db/database.ts';
import { ApiError } from '../../platform/errors/api-error.ts';
import { PROVIDER_FINAL_WITHIN_MS, ProviderNeverFinal, type MoneyRail, type PolledOutcome, type RailScope } from '../../rails/index.ts';
import type { ProviderConsent } from '../../rails/debit.ts';
import { settleIntent, settleIntentIn, startIntentIn } from './intents.ts';
import { inTenant } from '../../platform/scope.ts';
import type { RejectionReason } from './schemas.ts';
import { raiseLateApproval } from './issues.ts';

/**
 * Payment-page attempts through a connector (docs/connectors.md): the provider answers PENDING,
 * so the attempt stays in progress until the provider's signed event or a poll settles it. The
 * attempt's id is the provider's reference. A poll job runs every CONNECTOR_POLL_AFTER_MS until
 * the provider's transaction is final.
 */

export const POLL_ATTEMPT_JOB = 'payments.poll_attempt';

const INTENT_ID = /^pi_[A-Za-z0-9_-]{1,80}$/;

/** The company and environment of an attempt, from its id alone (an event names only the reference). */
export async function findAttemptTenant(db: Executor, id: string): Promise<RailScope | undefined> {
  if (!INTENT_ID.test(id)) return undefined;
  const row = await db.selectFrom('payment_intents').select(['company_id', 'environment', 'payment_id']).where('id', '=', id).executeTakeFirst();
  return row?.payment_id ? { companyId: row.company_id, environment: row.environment } : undefined;
}

/** A page attempt of the tenant (its amount, currency and the provider's id once recorded), or undefined. */
export async function findAttempt(
  db: Executor,
  scope: RailScope,
  id: string,
): Promise<{ id: string; amount: bigint; currency: string; network_id: string | null } | undefined> {
  if (!INTENT_ID.test(id)) return undefined;
  const row = await db
    .selectFrom('payment_intents')
    .select(['id', 'amount', 'currency', 'network_id', 'payment_id'])
    .$call(inTenant(scope))
    .where('id', '=', id)
    .executeTakeFirst();
  return row?.payment_id ? row : undefined;
}

/**
 * An attempt's rejection reason from the provider's words: the attempt's remarks are the fixed
 * list of docs/payments.md, so the reason is classified (insufficient funds, expired card) and
 * anything else is TRANSACTION_REJECTED.
 */
/** How long a page attempt the provider has no record of is polled before it ends (TIMEOUT). */
export const ATTEMPT_NEVER_REACHED_MS = 60 * 60_000;

export function rejectionOf(remarks: string): RejectionReason {
  if (/fondos|insufficient/i.test(remarks)) return 'INSUFFICIENT_FUNDS';
  if (/expir|vencid/i.test(remarks)) return 'CARD_EXPIRED';
  if (/riesgo|fraud|risk/i.test(remarks)) return 'RISK_CONTROL';
  if (remarks === 'TIMEOUT') return 'TIMEOUT';
  return 'TRANSACTION_REJECTED';
}

/** Saves the provider's final word on an attempt; an attempt already settled is left as it is. */
export async function settleAttemptFromProvider(deps: AppDeps, scope: RailScope, intentId: string, outcome: PolledOutcome): Promise<string | null> {
  if (outcome.status === 'pending') return null;
  try {
    const settled = await settleIntent(
      { companyId: scope.companyId, environment: scope.environment, db: deps.database.db, deps },
      intentId,
      outcome.status === 'approved' ? { status: 'approved' } : { status: 'declined', remarks: rejectionOf(outcome.remarks) },
    );
    return settled.status;
  } catch (error) {
    // Settled otherwise first (the payer abandoned it, another answer): nothing to change. An
    // approval of an attempt already declined is money the payment does not show: payment.issue.
    if (error instanceof ApiError) {
      if (outcome.status === 'approved') await raiseLateApproval(deps, scope, intentId);
      return null;
    }
    throw error;
  }
}

/** Asks for the attempt's poll CONNECTOR_POLL_AFTER_MS from now. */
export async function scheduleAttemptPoll(deps: AppDeps, db: Executor, scope: RailScope, intentId: string, rail: MoneyRail): Promise<void> {
  const at = new Date(deps.clock.now().getTime() + deps.config.connectorPollAfterMs);
  await deps.jobs.enqueue(db, POLL_ATTEMPT_JOB, { company_id: scope.companyId, environment: scope.environment, intent_id: intentId, rail }, at);
}

export async function runAttemptPoll(deps: AppDeps, payload: Record<string, unknown>): Promise<void> {
  const scope: RailScope = { companyId: String(payload.company_id), environment: payload.environment === 'live' ? 'live' : 'test' };
  const intentId = String(payload.intent_id);
  const intent = await deps.database.db
    .selectFrom('payment_intents')
    .select(['status', 'created_at'])
    .$call(inTenant(scope))
    .where('id', '=', intentId)
    .executeTakeFirst();
  if (!intent || intent.status !== 'in_progress') return;
  const rail = await deps.rails.money(scope, payload.rail as 'card' | 'walleta' | 'walletb' | 'banklink');
  if (!rail.poll) return;
  const polled = await askRail(deps, String(payload.rail), () => rail.poll!(intentId));
  if (polled.status === 'pending') {
    // Nobody retries a page attempt's create (the payer has left): an hour on with nothing at the
    // provider, it never reached it, and the attempt ends instead of being polled forever.
    const age = deps.clock.now().getTime() - new Date(intent.created_at).getTime();
    if (polled.unknown && age >= ATTEMPT_NEVER_REACHED_MS) {
      await settleAttemptFromProvider(deps, scope, intentId, { status: 'declined', remarks: 'TIMEOUT' });
      return;
    }
    // PENDING at the provider for days: the poll stops asking by itself (job dead, a person looks; never guessed).
    if (!polled.unknown && age > PROVIDER_FINAL_WITHIN_MS) throw new ProviderNeverFinal(`attempt ${intentId}`, age);
    return scheduleAttemptPoll(deps, deps.database.db, scope, intentId, payload.rail as MoneyRail);
  }
  await settleAttemptFromProvider(deps, scope, intentId, polled);
}

/** An attempt a payer makes on a payment page, at a rail. */
export interface PageAttempt {
  paymentId: string;
  method: PaymentMethod;
  amount: bigint;
  /** A sandbox attempt's network id (the payer may abandon it); a provider's comes later. */
  networkId?: string;
  rail: MoneyRail;
  /** The rail can be polled (a connector): the attempt's poll job is recorded with it. */
  pollable: boolean;
  /** The provider's contracts the payer accepted on the page (permalinks, when): recorded with the attempt. */
  consent?: ProviderConsent | null;
}

/**
 * A payment-page attempt through the outside-call protocol: the attempt and (on a rail that can be
 * polled) its poll job recorded in one transaction, the rail called outside any transaction with
 * the rail deadline, the answer settled in one transaction. A pending answer, or none at all,
 * leaves the attempt in progress for its poll (a connector's) or the payer (the sandbox's page
 * lets them abandon it): never guessed. The page's refusals (an expired or paid payment, an
 * amount out of range) are the record step's ApiErrors, thrown before any call.
 */
export async function runPageAttempt(
  deps: AppDeps,
  scope: Tenant,
  attempt: PageAttempt,
  call: (intent: IntentRow) => Promise<PolledOutcome>,
): Promise<{ intent: IntentRow; outcome: PolledOutcome }> {
  return runOutsideCall(jobOrigin(deps), {
    rail: attempt.rail,
    record: async (trx) => {
      const intent = await startIntentIn(trx, { ...scope, db: trx, deps }, attempt.paymentId, {
        method: attempt.method,
        amount: attempt.amount,
        network_id: attempt.networkId,
        consent: attempt.consent ?? null,
      });
      if (attempt.pollable) await scheduleAttemptPoll(deps, trx, scope, intent.id, attempt.rail);
      return { recorded: intent, resourceId: intent.id, safetyJobId: null };
    },
    call: async (intent): Promise<PolledOutcome> => {
      const outcome = await call(intent);
      // A provider's decline is classified into the attempts' reasons (docs/payments.md).
      return attempt.pollable && outcome.status === 'declined' ? { status: 'declined' as const, remarks: rejectionOf(outcome.remarks) } : outcome;
    },
    settle: async (trx, intent, outcome) => {
      if (outcome.status !== 'pending') {
        try {
          const settling =
            outcome.status === 'approved' ? { status: 'approved' as const } : { status: 'declined' as const, remarks: outcome.remarks };
          await settleIntentIn(trx, { ...scope, db: trx, deps }, intent.id, settling);
        } catch (error) {
          // Settled otherwise first (another tab, the provider's event): the page shows whatever won.
          if (!(error instanceof ApiError)) throw error;
        }
      }
      return { intent, outcome };
    },
    unknown: (intent) => ({ intent, outcome: { status: 'pending' } }),
    lost: () => new ApiError('service_unavailable', { message: 'The attempt was answered but saving it failed; its poll or the payer settles it.' }),
  });
}
