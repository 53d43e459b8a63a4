import type { BanklinkPort, BanklinkSession } from '../../banklink.ts';
import type { RefundRequest } from '../../debit.ts';
import type { PolledOutcome, RailPayer } from '../../payer.ts';
import { WompiUnavailable, type WompiClient } from './client.ts';
import { PSE_DESCRIPTION_MAX, PSE_LEGAL_ID_TYPES } from './contract.ts';
import { createPayerTransaction, pollReference } from './outcomes.ts';

/**
 * The payer's mobile as PSE takes it: digits with the country code (`573001234567`), from a
 * Colombian mobile however it was written (+57 300 123 4567, 3001234567); null when it is not one.
 */
export function pseMobile(phone: string | null | undefined): string | null {
  const digits = (phone ?? '').replace(/\D/g, '');
  const national = digits.length === 12 && digits.startsWith('57') ? digits.slice(2) : digits;
  return /^3\d{9}$/.test(national) ? `57${national}` : null;
}

/** The provider's PSE institutions, kept per account for an hour (the list changes rarely). */
const INSTITUTIONS_TTL_MS = 3_600_000;
const institutions = new Map<string, { at: number; codes: ReadonlySet<string>; list: { code: string; name: string }[] }>();

/**
 * PSE through the provider (rail `banklink`): the charge becomes a PSE transaction whose reference
 * is the charge id, for the bank the payer chose (the catalogue's ACH code is PSE's financial
 * institution code) and the customer's identity document; the payer is sent to the provider's
 * bank-session URL (`async_payment_url`), which the provider gives once it has processed the
 * transaction, so it is asked for a few times. The outcome comes from the signed event or the
 * reconciler's poll. PSE payments cannot be voided or refunded through the provider's API.
 */
export class WompiPse implements BanklinkPort {
  readonly name = 'wompi';
  /** The payer accepts Wompi's contracts (terms, personal data) before any operation that sends their data. */
  readonly consentRequired = true;
  readonly cancelUnavailable =
    'Wompi cannot withdraw a transaction it is still processing: wait for its outcome (a paid charge can then be refunded where Wompi allows it).';
  readonly refundsUnavailable = 'Wompi does not refund PSE payments through its API: give the money back to the payer by transfer (a cash-out).';

  constructor(
    private readonly client: WompiClient,
    private readonly opts: { accountKey: string; providerSandbox?: boolean; urlAttempts?: number; urlIntervalMs?: number },
  ) {}

  /** The provider's contracts the payer accepts before paying (their permalinks). */
  async contracts(): Promise<{ permalink: string; personalDataPermalink: string }> {
    const a = await this.client.acceptance();
    return { permalink: a.permalink, personalDataPermalink: a.personalDataPermalink };
  }

  payerProblem(payer: RailPayer): string | null {
    if (!payer.documentType || !payer.documentNumber)
      return 'PSE needs the customer’s identity document: set document_type and document_number on the customer';
    if (!payer.email) return 'PSE needs the customer’s e-mail: set email on the customer';
    if (!pseMobile(payer.phone)) return 'PSE needs the customer’s mobile phone: set phone on the customer';
    return null;
  }

  private async institutions(): Promise<{ codes: ReadonlySet<string>; list: { code: string; name: string }[] }> {
    const kept = institutions.get(this.opts.accountKey);
    if (kept && Date.now() - kept.at < INSTITUTIONS_TTL_MS) return kept;
    const list = (await this.client.pseInstitutions()).filter((i) => i.code !== '0');
    const entry = { at: Date.now(), codes: new Set(list.map((i) => i.code)), list };
    institutions.set(this.opts.accountKey, entry);
    return entry;
  }

  async bankCodes(): Promise<ReadonlySet<string>> {
    return (await this.institutions()).codes;
  }

  /**
   * On the provider's sandbox, its institutions are its test banks (Wompi's sandbox lists "1"
   * approves, "2" declines): offered so PSE can be tried end to end before going live. ASSUMPTION:
   * the banks module keeps those whose code no catalogue bank has.
   */
  async testBanks(): Promise<{ code: string; name: string }[]> {
    return this.opts.providerSandbox ? (await this.institutions()).list : [];
  }

  async open(session: BanklinkSession): Promise<{ networkId: string; redirectUrl?: string }> {
    const problem = this.payerProblem(session.payer);
    if (problem) throw new Error(problem); // checked when the charge is created; a customer changed since
    const payer = session.payer;
    let tx = await createPayerTransaction(this.client, {
      reference: session.reference,
      amount: session.amount,
      currency: session.currency,
      customerEmail: payer.email!,
      acceptance: await this.client.acceptance(),
      redirectUrl: session.redirectUrl,
      customerData: { full_name: payer.fullName, phone_number: pseMobile(payer.phone)! },
      paymentMethod: {
        type: 'PSE',
        user_type: payer.kind === 'company' ? 1 : 0,
        user_legal_id_type: PSE_LEGAL_ID_TYPES[payer.documentType!] ?? payer.documentType,
        user_legal_id: payer.documentNumber,
        financial_institution_code: session.bankCode,
        payment_description: session.description.slice(0, PSE_DESCRIPTION_MAX),
      },
    });
    const attempts = this.opts.urlAttempts ?? 10;
    for (let i = 0; ; i++) {
      const url = tx.payment_method?.extra?.async_payment_url;
      if (typeof url === 'string' && url) return { networkId: tx.id, redirectUrl: url };
      // Final without a bank session (refused at once): the poll settles the charge with the reason.
      if (tx.status !== 'PENDING') return { networkId: tx.id };
      if (i >= attempts) throw new WompiUnavailable(`wompi: no bank URL for ${tx.id} yet`);
      // The first read at once (the URL is often ready by then), later ones spaced out.
      if (i > 0) await new Promise((resolve) => setTimeout(resolve, this.opts.urlIntervalMs ?? 300));
      tx = await this.client.getTransaction(tx.id);
    }
  }

  poll(reference: string): Promise<PolledOutcome> {
    return pollReference(this.client, reference);
  }

  /** The provider has no way to withdraw a PSE session: it expires there by itself (and the poll settles it). */
  async cancel(): Promise<void> {}

  async refund(_request: RefundRequest): Promise<{ status: 'succeeded'; networkId: string }> {
    throw new Error(this.refundsUnavailable);
  }
}
