import type { RefundRequest } from './debit.ts';
/**
 * The bank-transfer scheme (rail `banklink`, docs/rails.md): opens the payer's session at their
 * bank, where the payer approves or declines. Idempotent by `reference` (the charge id).
 */
export interface BanklinkSession {
  reference: string;
  amount: bigint;
  currency: string;
  bankId: string;
  redirectUrl: string;
  expiresAt: Date;
}

export interface BanklinkPort {
  readonly name: string;
  /** Why this rail cannot give money back, or absent when it can (see DebitPort). */
  readonly refundsUnavailable?: string;
  open(session: BanklinkSession): Promise<{ networkId: string }>;
  /** Withdraws a session still open (an expired or cancelled charge); nothing happens to a settled one. */
  cancel(reference: string): Promise<void>;
  /** Gives a paid charge's money back to the payer; throws when the outcome is unknown (the reconciler asks again). */
  refund(request: RefundRequest): Promise<{ status: 'succeeded'; networkId: string }>;
}

/** The sandbox: the session is the sandbox bank page (`/pay/{charge id}`); its Aprobar or Rechazar is the bank's answer. */
export class SandboxBanklink implements BanklinkPort {
  readonly name = 'sandbox';
  async open(session: BanklinkSession): Promise<{ networkId: string }> {
    return { networkId: `sbx_banklink_${session.reference}` };
  }
  async cancel(): Promise<void> {}
  async refund(request: RefundRequest): Promise<{ status: 'succeeded'; networkId: string }> {
    return { status: 'succeeded', networkId: `sbx_${request.reference}` };
  }
}
