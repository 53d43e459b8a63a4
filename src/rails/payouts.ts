import type { Clock } from '../platform/clock.ts';

/**
 * Payouts (rail `payout`): money out of a company's balance to a bank account or wallet, used by
 * cash-outs (docs/cashouts.md, docs/rails.md). Idempotent by `reference` (the cash-out id): sending
 * the same reference again answers where that payout stands and never pays twice.
 */
export type PayoutMethod = 'ACH' | 'TURBO' | 'INSTANT';

/** Who and where a payout goes to: what a connector checks before anything is recorded. */
export interface PayoutBeneficiary {
  /** ACH (1–3 business days), TURBO (hours), INSTANT (Bre-B, seconds). */
  method: PayoutMethod;
  /** The account's subtype: SAVINGS, CHECKING, ELECTRONIC_DEPOSIT, KEY. */
  accountType: string;
  holderKind: 'natural' | 'company';
  holderDocumentType: string | null;
  holderDocument: string;
  holderEmail: string | null;
}

export interface PayoutRequest extends PayoutBeneficiary {
  reference: string;
  amount: bigint;
  currency: string;
  bankId: string;
  /** The bank's ACH code and name in the catalogue (a connector maps them to its own bank ids). */
  bankCode: string;
  bankName: string;
  accountNumber: string;
  holderName: string;
  /** When the cash-out was sent first (the sandbox times its answer from it). */
  submittedAt: Date;
  /** Test cash-outs: PRODUCT.md's sandbox trigger, or null. */
  testScenario: string | null;
}

export type PayoutOutcome =
  | { status: 'paid'; networkId: string }
  | { status: 'failed'; networkId: string; remarks: string }
  /** Not final yet: ask again at `settleAt` (null: only a resolve or an event settles it). */
  | { status: 'pending'; networkId: string; settleAt: Date | null };

export interface PayoutPort {
  readonly name: string;
  /** Why this rail cannot send a payout to this beneficiary (checked before anything is recorded), or null. */
  beneficiaryProblem?(beneficiary: PayoutBeneficiary): { field: string; message: string } | null;
  /** Sends the payout, or answers where the payout of this reference stands (never a second one). */
  send(request: PayoutRequest): Promise<PayoutOutcome>;
}

/**
 * The sandbox (PRODUCT.md "Cash-outs and wallets"): INSTANT is paid at once; ACH and TURBO after
 * `delayMs` from the first send. `test_scenario` `rejected` fails with ACCOUNT_CLOSED after the
 * delay, `pending` never settles by itself; an account number ending in 9999 fails
 * (ACCOUNT_REJECTED).
 */
export class SandboxPayouts implements PayoutPort {
  readonly name = 'sandbox';
  constructor(private readonly opts: { delayMs: number; clock: Clock }) {}

  async send(request: PayoutRequest): Promise<PayoutOutcome> {
    const networkId = `sbx_payout_${request.reference}`;
    if (request.accountNumber.endsWith('9999')) return { status: 'failed', networkId, remarks: 'ACCOUNT_REJECTED' };
    if (request.testScenario === 'pending') return { status: 'pending', networkId, settleAt: null };
    const settleAt = new Date(request.submittedAt.getTime() + (request.method === 'INSTANT' ? 0 : this.opts.delayMs));
    if (this.opts.clock.now().getTime() < settleAt.getTime()) return { status: 'pending', networkId, settleAt };
    if (request.testScenario === 'rejected') return { status: 'failed', networkId, remarks: 'ACCOUNT_CLOSED' };
    return { status: 'paid', networkId };
  }
}
