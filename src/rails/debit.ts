import { cardExpiredAt, type Clock } from '../platform/clock.ts';
import { applyTestScenario } from './sandbox-table.ts';
import type { PolledOutcome } from './payer.ts';
import { sandboxDisputes, type DisputeReporting } from './disputes.ts';

/**
 * The debit port (docs/rails.md): card debits (rail `card`) and direct debits of a bank account
 * (rail `account_debit`). Every call is idempotent by `reference` (the charge or refund id), so a
 * reconciler may ask again whenever the outcome of an earlier call is unknown. Callers never hold
 * a database transaction across a call (platform/outside-call).
 */
export interface DebitRequest {
  /** The charge id (or a payment attempt's id): the rail's idempotency key. */
  reference: string;
  method: 'card' | 'account';
  amount: bigint;
  currency: string;
  /**
   * The card (card debits): its sandbox outcome class and expiry, and `source`, the connector's
   * opaque reference to the card saved at the provider (null for a card saved without one), or
   * `token`, the provider's single-use token of a card paid once (a payment page).
   */
  card: { outcome_class: string; exp_month: number; exp_year: number; source?: string | null; token?: string } | null;
  /** The payer's e-mail, for a card paid once by token (providers file the transaction under it). */
  payerEmail?: string | null;
  /** Card debits: the number of monthly installments the payer chose (1 when absent). */
  installments?: number;
  test_scenario: string | null;
  /** When the debit was recorded: the sandbox bank settles an account debit a fixed delay after it. */
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

/** Card data on its way to a provider's vault: held in memory for the call, never stored. */
export interface CardData {
  number: string;
  cvc: string;
  expMonth: number;
  expYear: number;
  holderName: string;
}

/** The provider refused the card data (a definitive answer: nothing was saved there). */
export class CardRefused extends Error {
  constructor(readonly reason: string) {
    super(reason);
    this.name = 'CardRefused';
  }
}

/**
 * The provider refused a refund definitively (a void it does not accept, a transaction that can no
 * longer be given back): the refund ends failed with `reason` and the money returns to the balance.
 */
export class RefundRefused extends Error {
  constructor(readonly reason: string) {
    super(reason);
    this.name = 'RefundRefused';
  }
}

/** The provider contracts a payer accepted (their permalinks) and when: the terms and the personal-data authorization. */
export interface ProviderConsent {
  permalink: string;
  personalDataPermalink: string;
  acceptedAt: Date;
}

/** A card saved at the provider: `source` is opaque to Recaudo; `acceptance` is the provider's contracts the payer accepted. */
export interface SavedCard {
  source: string;
  acceptance: ProviderConsent | null;
}

export interface DebitPort extends DisputeReporting {
  readonly name: string;
  /**
   * Why this rail cannot give money back (a provider without refunds), or absent when it can. The
   * refund is refused with 422 rail_refund_unavailable before anything is recorded.
   */
  readonly refundsUnavailable?: string;
  /** A connector whose provider needs the payer's acceptance of its contracts (accept_terms in live). */
  readonly consentRequired?: boolean;
  /** Why an open (processing) operation cannot be withdrawn at the provider, or absent when it can: a cancel is refused then. */
  readonly cancelUnavailable?: string;
  /**
   * Connectors that keep cards at the provider: the card data becomes the provider's single-use
   * token (POST /tokens, POST /cards). The sandbox keeps nothing and has no such step.
   */
  tokenizeCard?(card: CardData): Promise<{ token: string }>;
  /**
   * Connectors whose payer pages tokenize in the payer's browser: where the browser posts the card
   * (the provider's tokenization URL) and the public key it sends. The card never reaches Recaudo.
   */
  browserTokenization?(): { url: string; publicKey: string };
  /** Connectors: the provider's contracts a payer must accept before paying (their permalinks). */
  contracts?(): Promise<{ permalink: string; personalDataPermalink: string }>;
  /** ...and the token a reusable source of the customer's (POST /cards, POST /cards/tokenized). */
  saveCard?(input: { token: string; customerEmail: string; acceptedAt: Date }): Promise<SavedCard>;
  /** Submits the debit (again: the same answer). */
  debit(request: DebitRequest): Promise<DebitOutcome>;
  /** Where a submitted debit stands now. */
  status(request: DebitRequest): Promise<DebitOutcome>;
  /** Connectors: where the debit of a reference stands, without submitting anything (a payment page's attempt). */
  poll?(reference: string): Promise<PolledOutcome>;
  /** Cancels a debit that is not settled (a cancelled charge); nothing happens to one never submitted. */
  void(reference: string): Promise<void>;
  /** Gives a settled debit back; throws when the outcome is unknown (the reconciler asks again). */
  refund(request: RefundRequest): Promise<{ status: 'succeeded'; networkId: string }>;
}

/**
 * The sandbox: deterministic from the request and the clock, so asking again always gives the
 * same answer and nothing is kept in memory (any process can reconcile any charge).
 * - card: a declining test card declines with its reason; an expired card declines CARD_EXPIRED;
 *   otherwise the test_scenario decides (a decline reason declines, `pending` waits for resolve);
 *   otherwise approved at once.
 * - account: the test_scenario as for cards; otherwise it settles (approved) `delayMs` after it
 *   was recorded, like the next business day.
 */
export class SandboxDebit implements DebitPort {
  readonly name = 'sandbox';
  readonly openDispute = sandboxDisputes.openDispute;
  readonly closeDispute = sandboxDisputes.closeDispute;
  constructor(private opts: { delayMs: number; clock: Clock }) {}

  private outcome(request: DebitRequest): DebitOutcome {
    const networkId = `sbx_${request.reference}`;
    if (request.card) {
      if (request.card.outcome_class !== 'approved') return { status: 'declined', networkId, remarks: request.card.outcome_class };
      if (cardExpiredAt(request.card, this.opts.clock.now())) return { status: 'declined', networkId, remarks: 'CARD_EXPIRED' };
    }
    const scenario = applyTestScenario({ status: 'approved' as const }, request.test_scenario);
    if (scenario.status === 'declined') return { status: 'declined', networkId, remarks: scenario.remarks };
    if (scenario.status === 'pending') return { status: 'pending', networkId, settleAt: null };
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
