/**
 * Payouts (rail `payout`): money out of a company's balance to a bank account or wallet. The port
 * only, with its sandbox: cash-outs build on it (docs/rails.md). Idempotent by `reference`.
 */
export interface PayoutRequest {
  reference: string;
  amount: bigint;
  currency: string;
  bankId: string;
  accountNumber: string;
  accountType: string;
  holderName: string;
  holderDocument: string;
}

export type PayoutOutcome =
  { status: 'paid'; networkId: string } | { status: 'failed'; networkId: string; remarks: string } | { status: 'pending'; networkId: string };

export interface PayoutPort {
  readonly name: string;
  /** Sends the payout (again: the same answer). */
  send(request: PayoutRequest): Promise<PayoutOutcome>;
  /** Where a sent payout stands now. */
  status(request: PayoutRequest): Promise<PayoutOutcome>;
}

/** The sandbox: every payout is paid at once, except to an account number ending in 9999 (failed). */
export class SandboxPayouts implements PayoutPort {
  readonly name = 'sandbox';
  async send(request: PayoutRequest): Promise<PayoutOutcome> {
    return this.status(request);
  }
  async status(request: PayoutRequest): Promise<PayoutOutcome> {
    const networkId = `sbx_payout_${request.reference}`;
    return request.accountNumber.endsWith('9999') ? { status: 'failed', networkId, remarks: 'ACCOUNT_REJECTED' } : { status: 'paid', networkId };
  }
}
