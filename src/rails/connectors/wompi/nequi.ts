import type { RefundRequest } from '../../debit.ts';
import type { PolledOutcome, RailPayer } from '../../payer.ts';
import type { WalletOutcome, WalletPort, WalletRequest } from '../../wallets.ts';
import type { WompiClient } from './client.ts';
import { createPayerTransaction, pollReference } from './outcomes.ts';

/**
 * Nequi through the provider (rail `walleta`): the request-to-pay is a NEQUI transaction whose
 * reference is the charge id; the provider pushes it to the payer's app. The confirm endpoint,
 * the signed event and the reconciler's poll read where it stands. Nequi payments cannot be
 * voided or refunded through the provider's API.
 */
export class WompiNequi implements WalletPort {
  readonly name = 'wompi';
  /** The payer accepts Wompi's contracts (terms, personal data) before any operation that sends their data. */
  readonly consentRequired = true;
  readonly cancelUnavailable =
    'Wompi cannot withdraw a transaction it is still processing: wait for its outcome (a paid charge can then be refunded where Wompi allows it).';
  readonly refundsUnavailable = 'Wompi does not refund Nequi payments through its API: give the money back to the payer by transfer (a cash-out).';

  constructor(private readonly client: WompiClient) {}

  /** The provider's contracts the payer accepts before paying (their permalinks). */
  async contracts(): Promise<{ permalink: string; personalDataPermalink: string }> {
    const a = await this.client.acceptance();
    return { permalink: a.permalink, personalDataPermalink: a.personalDataPermalink };
  }

  payerProblem(payer: RailPayer): string | null {
    return payer.email ? null : 'Nequi through Wompi needs the customer’s e-mail: set email on the customer';
  }

  async requestToPay(request: WalletRequest): Promise<{ networkId: string }> {
    const email = request.payer?.email;
    if (!email) throw new Error('Nequi through Wompi needs the customer’s e-mail');
    const tx = await createPayerTransaction(this.client, {
      reference: request.reference,
      amount: request.amount,
      currency: 'COP',
      customerEmail: email,
      acceptance: await this.client.acceptance(),
      paymentMethod: { type: 'NEQUI', phone_number: request.phone.replace(/^\+57/, '') },
    });
    return { networkId: tx.id };
  }

  /** The payer acted (or not yet) in the app: the provider's word, pending included. */
  async outcome(request: WalletRequest & { otp?: string }): Promise<WalletOutcome> {
    return pollReference(this.client, request.reference);
  }

  poll(reference: string): Promise<PolledOutcome> {
    return pollReference(this.client, reference);
  }

  /** The provider has no way to withdraw a push: it expires in the app (and the poll settles it). */
  async cancel(): Promise<void> {}

  async refund(_request: RefundRequest): Promise<{ status: 'succeeded'; networkId: string }> {
    throw new Error(this.refundsUnavailable);
  }
}
