import type { AppDeps } from '../../platform/context.ts';
import type { Environment } from '../../platform/db/schema.ts';
import { cardExpiredAt } from '../cards/card-data.ts';
import { DECLINE_SCENARIOS } from './schemas.ts';
import type { PaymentMethodType } from './tables.ts';

/**
 * The debit rail of charges (docs/charges.md): a port with a sandbox adapter. Every call is
 * idempotent by `reference` (the charge or refund id), so a reconciler may ask again whenever the
 * outcome of an earlier call is unknown. Callers never hold a database transaction across a call.
 */
export interface DebitRequest {
  /** The charge id: the rail's idempotency key. */
  reference: string;
  method: PaymentMethodType;
  amount: bigint;
  currency: string;
  /** The card's sandbox outcome class and expiry (card charges). */
  card: { outcome_class: string; exp_month: number; exp_year: number } | null;
  test_scenario: string | null;
  /** When the charge was recorded: the sandbox bank settles a fixed delay after it. */
  submittedAt: Date;
}

export type DebitOutcome =
  | { status: 'approved'; networkId: string }
  | { status: 'declined'; networkId: string; remarks: string }
  /** Not settled yet: look again at `settleAt`; null means only resolve settles it (sandbox `pending`). */
  | { status: 'pending'; networkId: string; settleAt: Date | null };

export interface RefundRequest {
  reference: string;
  chargeReference: string;
  amount: bigint;
  currency: string;
}

export interface ChargeRail {
  readonly name: string;
  /** Submits the debit (again: the same answer). */
  debit(request: DebitRequest): Promise<DebitOutcome>;
  /** Where a submitted debit stands now. */
  status(request: DebitRequest): Promise<DebitOutcome>;
  /** Cancels a debit that is not settled (a cancelled charge); nothing happens to one never submitted. */
  void(reference: string): Promise<void>;
  /** Gives a settled debit back; throws when the outcome is unknown (the reconciler asks again). */
  refund(request: RefundRequest): Promise<{ status: 'succeeded'; networkId: string }>;
}

/**
 * The sandbox: deterministic from the request and the clock, so asking again always gives the
 * same answer and nothing is kept in memory (any process can reconcile any charge).
 * - card: a declining test card declines with its reason; an expired card declines CARD_EXPIRED;
 *   otherwise the test_scenario decides (a decline code declines, `pending` waits for resolve);
 *   otherwise approved at once.
 * - account (direct debit): a decline scenario declines at once, `pending` waits for resolve,
 *   otherwise it settles (approved) `delayMs` after it was recorded, like the next business day.
 */
export class SandboxChargeRail implements ChargeRail {
  readonly name = 'sandbox';
  constructor(private opts: { delayMs: number; clock: { now(): Date } }) {}

  private outcome(request: DebitRequest): DebitOutcome {
    const networkId = `sbx_${request.reference}`;
    const scenario = request.test_scenario;
    if (request.card) {
      if (request.card.outcome_class !== 'approved') return { status: 'declined', networkId, remarks: request.card.outcome_class };
      if (cardExpiredAt(request.card, this.opts.clock.now())) return { status: 'declined', networkId, remarks: 'CARD_EXPIRED' };
    }
    if (scenario && (DECLINE_SCENARIOS as readonly string[]).includes(scenario)) return { status: 'declined', networkId, remarks: scenario };
    if (scenario === 'pending') return { status: 'pending', networkId, settleAt: null };
    if (request.method === 'card') return { status: 'approved', networkId };
    const settleAt = new Date(request.submittedAt.getTime() + this.opts.delayMs);
    if (this.opts.clock.now().getTime() >= settleAt.getTime()) return { status: 'approved', networkId };
    return { status: 'pending', networkId, settleAt };
  }

  async debit(request: DebitRequest): Promise<DebitOutcome> {
    return this.outcome(request);
  }

  async status(request: DebitRequest): Promise<DebitOutcome> {
    return this.outcome(request);
  }

  async void(): Promise<void> {}

  async refund(request: RefundRequest): Promise<{ status: 'succeeded'; networkId: string }> {
    return { status: 'succeeded', networkId: `sbx_${request.reference}` };
  }
}

const rails = new WeakMap<AppDeps, { test: ChargeRail; live: ChargeRail }>();

/**
 * The rail for an environment. Test keys never touch a real rail. No real card processor or bank
 * debit provider is integrated yet: live charges use a separate sandbox instance (as the other
 * rails do when no provider is configured, docs/rails.md).
 */
export function chargeRail(deps: AppDeps, environment: Environment): ChargeRail {
  let set = rails.get(deps);
  if (!set) {
    const make = () => new SandboxChargeRail({ delayMs: deps.config.sandboxChargeDelayMs, clock: deps.clock });
    set = { test: make(), live: make() };
    rails.set(deps, set);
  }
  return environment === 'live' ? set.live : set.test;
}

/** Tests replace a rail (a failing or slow one) for one runtime. */
export function setChargeRail(deps: AppDeps, environment: Environment, rail: ChargeRail): void {
  chargeRail(deps, environment);
  rails.get(deps)![environment] = rail;
}
