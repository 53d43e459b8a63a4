import type { RefundRequest } from './debit.ts';
import type { PolledOutcome, RailPayer } from './payer.ts';
import { sandboxDisputes, type DisputeReporting } from './disputes.ts';
import { sandboxWalletOutcome, WALLETB_TEST_OTP } from './sandbox-table.ts';

/**
 * The wallets' request-to-pay (rails `walleta` and `walletb`, docs/rails.md): the request goes to
 * the payer's wallet app; walletb confirms it with a code the payer received. Idempotent by
 * `reference` (the charge or payment attempt id).
 */
export interface WalletRequest {
  reference: string;
  amount: bigint;
  phone: string;
  /** The customer who pays (providers need their e-mail); the sandbox ignores it. */
  payer?: RailPayer;
}

/** `pending`: a connector whose payer has not acted yet (the sandbox always knows). */
export type WalletOutcome = { status: 'approved' } | { status: 'declined'; remarks: string } | { status: 'otp_invalid' } | { status: 'pending' };

export interface WalletPort extends DisputeReporting {
  readonly name: string;
  /** Why this rail cannot give money back, or absent when it can (see DebitPort). */
  readonly refundsUnavailable?: string;
  /** A connector whose provider needs the payer's acceptance of its contracts (accept_terms in live). */
  readonly consentRequired?: boolean;
  /** Connectors: the provider's contracts a payer must accept before paying (their permalinks). */
  contracts?(): Promise<{ permalink: string; personalDataPermalink: string }>;
  /** Why an open (processing) operation cannot be withdrawn at the provider, or absent when it can: a cancel is refused then. */
  readonly cancelUnavailable?: string;
  /** Sends the request to the payer's wallet app. */
  requestToPay(request: WalletRequest): Promise<{ networkId: string }>;
  /**
   * The wallet's answer once the payer acted. `otp`: the code the payer gave (walletb through the
   * API); `otp_invalid` when the wallet refuses it. Without one, the payer confirmed in the app.
   */
  outcome(request: WalletRequest & { otp?: string }): Promise<WalletOutcome>;
  /** What the payer must have for this rail, or null when anyone can pay (see BanklinkPort). */
  payerProblem?(payer: RailPayer): string | null;
  /** Connectors: where an open request stands (the reconciler's poll). The sandbox has none: the confirm settles. */
  poll?(reference: string): Promise<PolledOutcome>;
  /** Withdraws a request still open; nothing happens to a settled one. */
  cancel(reference: string): Promise<void>;
  /** Gives a paid charge's money back to the payer; throws when the outcome is unknown (the reconciler asks again). */
  refund(request: RefundRequest): Promise<{ status: 'succeeded'; networkId: string }>;
}

/** The sandbox: the sandbox table's phones decide; walletb's right code is the table's. */
export class SandboxWallet implements WalletPort {
  constructor(readonly wallet: 'walleta' | 'walletb') {}
  readonly name = 'sandbox';
  readonly openDispute = sandboxDisputes.openDispute;
  readonly closeDispute = sandboxDisputes.closeDispute;
  async requestToPay(request: WalletRequest): Promise<{ networkId: string }> {
    return { networkId: `sbx_${this.wallet}_${request.reference}` };
  }
  async outcome(request: WalletRequest & { otp?: string }): Promise<WalletOutcome> {
    if (request.otp !== undefined && request.otp !== WALLETB_TEST_OTP) return { status: 'otp_invalid' };
    return sandboxWalletOutcome(request.phone);
  }
  async cancel(): Promise<void> {}
  async refund(request: RefundRequest): Promise<{ status: 'succeeded'; networkId: string }> {
    return { status: 'succeeded', networkId: `sbx_${request.reference}` };
  }
}
