import type { RefundRequest } from './debit.ts';
import type { PolledOutcome } from './payer.ts';
import { sandboxDisputes, type DisputeReporting } from './disputes.ts';
import { emvcoPayload } from './emvco.ts';
import { sandboxQrRefused } from './sandbox-table.ts';

/**
 * The instant-payment scheme (rail `rtkey`, docs/rails.md): registers a dynamic QR the payer
 * scans. Idempotent by `reference` (the charge id).
 */
export interface QrRegistration {
  reference: string;
  amount: bigint;
  currency: string;
  merchant: string;
  /** EMVCo tag 62 reference label (the company's reference, or the charge id). */
  label: string;
  expiresAt: Date;
  test_scenario: string | null;
}

/** The scheme refused the QR: no charge is created (90100 qr_generation_failed). */
export class QrRegistrationFailed extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'QrRegistrationFailed';
  }
}

export interface RtkeyPort extends DisputeReporting {
  readonly name: string;
  /** Registers the QR and returns its payload; throws QrRegistrationFailed when the scheme refuses it. */
  registerQr(registration: QrRegistration): Promise<{ networkId: string; payload: string }>;
  /** Withdraws a QR still open; nothing happens to a paid one. */
  cancel(reference: string): Promise<void>;
  /** Gives a paid charge's money back to the payer; throws when the outcome is unknown (the reconciler asks again). */
  refund(request: RefundRequest): Promise<{ status: 'succeeded'; networkId: string }>;
  /** Why this rail cannot give money back, or absent when it can (see DebitPort). */
  readonly refundsUnavailable?: string;
  /** Why an open (processing) operation cannot be withdrawn at the provider, or absent when it can: a cancel is refused then. */
  readonly cancelUnavailable?: string;
  /** Connectors: where a registered QR stands (the reconciler's poll). The sandbox has none: its page settles. */
  poll?(reference: string): Promise<PolledOutcome>;
}

/** The sandbox: builds the payload a scheme would answer; the sandbox table's QR triggers refuse it. */
export class SandboxRtkey implements RtkeyPort {
  readonly name = 'sandbox';
  readonly openDispute = sandboxDisputes.openDispute;
  readonly closeDispute = sandboxDisputes.closeDispute;
  async registerQr(r: QrRegistration): Promise<{ networkId: string; payload: string }> {
    if (sandboxQrRefused(r.amount, r.test_scenario)) {
      throw new QrRegistrationFailed('The instant-payment scheme refused the QR registration (sandbox trigger).');
    }
    const networkId = `sbx_rtkey_${r.reference}`;
    return {
      networkId,
      payload: emvcoPayload({ key: networkId, merchant: r.merchant, amountMinor: r.amount, currency: r.currency, reference: r.label }),
    };
  }
  async cancel(): Promise<void> {}
  async refund(request: RefundRequest): Promise<{ status: 'succeeded'; networkId: string }> {
    return { status: 'succeeded', networkId: `sbx_${request.reference}` };
  }
}
