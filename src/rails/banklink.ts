import type { RefundRequest } from './debit.ts';
import type { PolledOutcome, RailPayer } from './payer.ts';
import { sandboxDisputes, type DisputeReporting } from './disputes.ts';
/**
 * The bank-transfer scheme (rail `banklink`, docs/rails.md): opens the payer's session at their
 * bank, where the payer approves or declines. Idempotent by `reference` (the charge id).
 */
export interface BanklinkSession {
  reference: string;
  amount: bigint;
  currency: string;
  bankId: string;
  /** The bank's ACH/PSE entity code (the catalogue's `code`), which providers name banks by. */
  bankCode: string;
  /** What the payer sees at the bank: the charge's title. */
  description: string;
  redirectUrl: string;
  expiresAt: Date;
  /** The customer who pays: PSE providers need their identity; the sandbox ignores it. */
  payer: RailPayer;
}

export interface BanklinkPort extends DisputeReporting {
  readonly name: string;
  /** Why this rail cannot give money back, or absent when it can (see DebitPort). */
  readonly refundsUnavailable?: string;
  /** A connector whose provider needs the payer's acceptance of its contracts (accept_terms in live). */
  readonly consentRequired?: boolean;
  /** Connectors: the provider's contracts a payer must accept before paying (their permalinks). */
  contracts?(): Promise<{ permalink: string; personalDataPermalink: string }>;
  /** Why an open (processing) operation cannot be withdrawn at the provider, or absent when it can: a cancel is refused then. */
  readonly cancelUnavailable?: string;
  /**
   * Opens the session (again: the same session). `redirectUrl`: the provider's page the payer is
   * sent to, when it is not Recaudo's own (`/pay/{charge id}`).
   */
  open(session: BanklinkSession): Promise<{ networkId: string; redirectUrl?: string }>;
  /**
   * Connectors that name banks themselves: the entity codes they take now (GET /banks marks only
   * these `banklink: true`). Absent: the catalogue decides.
   */
  bankCodes?(): Promise<ReadonlySet<string>>;
  /**
   * A connector on its provider's sandbox: the provider's own test institutions (e.g. Wompi's
   * "approves"/"declines" banks), which no real bank's code matches; listed as banks of their own.
   */
  testBanks?(): Promise<{ code: string; name: string }[]>;
  /** What the payer must have for this rail (PSE: an identity document and an e-mail), or null when anyone can pay. */
  payerProblem?(payer: RailPayer): string | null;
  /** Connectors: where an open session stands (the reconciler's poll). The sandbox has none: its page settles. */
  poll?(reference: string): Promise<PolledOutcome>;
  /** Withdraws a session still open (an expired or cancelled charge); nothing happens to a settled one. */
  cancel(reference: string): Promise<void>;
  /** Gives a paid charge's money back to the payer; throws when the outcome is unknown (the reconciler asks again). */
  refund(request: RefundRequest): Promise<{ status: 'succeeded'; networkId: string }>;
}

/** The sandbox: the session is the sandbox bank page (`/pay/{charge id}`); its Aprobar or Rechazar is the bank's answer. */
export class SandboxBanklink implements BanklinkPort {
  readonly name = 'sandbox';
  readonly openDispute = sandboxDisputes.openDispute;
  readonly closeDispute = sandboxDisputes.closeDispute;
  async open(session: BanklinkSession): Promise<{ networkId: string }> {
    return { networkId: `sbx_banklink_${session.reference}` };
  }
  async cancel(): Promise<void> {}
  async refund(request: RefundRequest): Promise<{ status: 'succeeded'; networkId: string }> {
    return { status: 'succeeded', networkId: `sbx_${request.reference}` };
  }
}
