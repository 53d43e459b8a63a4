import type { PayoutBeneficiary, PayoutOutcome, PayoutPort, PayoutRequest } from '../../payouts.ts';
import { amountInCents } from './contract.ts';
import { WompiPayoutRefused, type PayoutBank, type WompiPayoutsClient } from './payouts-client.ts';
import {
  IDEMPOTENCY_KEY_USED,
  PAYOUT_ACCOUNT_TYPES,
  PAYOUT_LEGAL_ID_TYPES,
  payoutIdempotencyKey,
  payoutReference,
  payoutStanding,
  type WompiPayoutBatch,
  type WompiPayoutTransaction,
} from './payouts-contract.ts';

/** The provider's banks, kept per payouts account for an hour (the list changes rarely). */
const BANKS_TTL_MS = 3_600_000;
const banksKept = new Map<string, { at: number; banks: PayoutBank[] }>();

const normalName = (name: string) =>
  name
    .normalize('NFD')
    .replace(/[\u0300-\u036f]/g, '')
    .toUpperCase()
    .replace(/[^A-Z0-9]/g, '');

/**
 * Cash-outs through Wompi's Third-Party Payments API (rail `payout`): each cash-out is a batch of
 * one transaction whose batch and transaction references are the cash-out's payout reference (its
 * id with `-` for `_`: the provider's charset), sent from the merchant's origin account with that
 * reference as the idempotency key. Before sending, the batch
 * of that reference is looked up, so a retry, a restart or the reconciler finds the first batch
 * instead of paying twice (the provider keeps idempotency keys only 24 hours). The provider sends
 * to savings, checking and electronic-deposit accounts by ACH or within the bank: TURBO and
 * INSTANT are not offered, and a bank it does not list is refused before anything is recorded.
 */
export class WompiPayouts implements PayoutPort {
  readonly name = 'wompi';
  readonly methods = ['ACH'] as const;

  constructor(
    private readonly client: WompiPayoutsClient,
    private readonly opts: { originAccountId: string; accountKey: string; clock: { now(): Date }; pollAfterMs: number },
  ) {}

  beneficiaryProblem(b: PayoutBeneficiary): { field: string; message: string } | null {
    if (b.method !== 'ACH') return { field: 'method', message: `the payout connector (Wompi) sends ACH only; ${b.method} is not offered` };
    if (!PAYOUT_ACCOUNT_TYPES[b.accountType]) return { field: 'account_id', message: `Wompi payouts do not go to ${b.accountType} accounts` };
    if (!b.holderDocumentType || !PAYOUT_LEGAL_ID_TYPES[b.holderDocumentType] || !b.holderDocument)
      return {
        field: 'customer_id',
        message: 'a payout through Wompi needs the customer’s document (CC, CE, NIT or passport): set it on the customer',
      };
    if (!b.holderEmail) return { field: 'customer_id', message: 'a payout through Wompi needs the customer’s e-mail: set email on the customer' };
    return null;
  }

  private async banks(): Promise<PayoutBank[]> {
    const kept = banksKept.get(this.opts.accountKey);
    if (kept && Date.now() - kept.at < BANKS_TTL_MS) return kept.banks;
    const banks = await this.client.banks();
    banksKept.set(this.opts.accountKey, { at: Date.now(), banks });
    return banks;
  }

  /** ASSUMPTION: the provider's bank carries the ACH code (`achCode`) the catalogue uses; else the name decides. */
  private async providerBankId(request: PayoutRequest): Promise<string | null> {
    const banks = await this.banks();
    const byCode = banks.find((b) => String(b.achCode ?? '') === request.bankCode || String(b.code ?? '') === request.bankCode);
    if (byCode) return byCode.id;
    const name = normalName(request.bankName);
    return banks.find((b) => normalName(b.name) === name)?.id ?? null;
  }

  async send(request: PayoutRequest): Promise<PayoutOutcome> {
    // The cash-out id in the provider's charset: batch and transaction reference, idempotency key, lookups.
    const reference = payoutReference(request.reference);
    const existing = await this.client.findBatch(reference);
    if (existing) return this.where(existing, reference);
    const problem = this.beneficiaryProblem(request);
    if (problem) return { status: 'failed', networkId: request.reference, remarks: `NOT_SENT: ${problem.message}`.slice(0, 250) };
    const bankId = await this.providerBankId(request);
    if (!bankId) return { status: 'failed', networkId: request.reference, remarks: `NOT_SENT: Wompi does not list ${request.bankName}` };
    let payoutId: string;
    try {
      ({ payoutId } = await this.client.createBatch(
        {
          reference,
          accountId: this.opts.originAccountId,
          paymentType: 'OTHER',
          transactions: [
            {
              legalIdType: PAYOUT_LEGAL_ID_TYPES[request.holderDocumentType!],
              legalId: request.holderDocument,
              bankId,
              accountType: PAYOUT_ACCOUNT_TYPES[request.accountType],
              accountNumber: request.accountNumber,
              name: request.holderName.slice(0, 100),
              email: request.holderEmail!,
              amount: amountInCents(request.amount),
              reference,
              personType: request.holderKind === 'company' ? 'JURIDICA' : 'NATURAL',
            },
          ],
        },
        payoutIdempotencyKey(request.reference),
      ));
    } catch (error) {
      if (!(error instanceof WompiPayoutRefused)) throw error; // unknown: the reconciler asks again (by reference)
      if (error.code === IDEMPOTENCY_KEY_USED) {
        // The key was used: the batch exists; where it stands is read by its reference.
        const found = await this.client.findBatch(reference);
        if (found) return this.where(found, reference);
        throw new Error('wompi payouts: the idempotency key was used but no batch has the reference yet');
      }
      // Refused (no balance at the origin account, a limit, invalid data): nothing was sent.
      return { status: 'failed', networkId: request.reference, remarks: `REFUSED: ${error.code} ${error.message}`.slice(0, 250) };
    }
    return this.where({ id: payoutId, reference, status: 'PENDING' }, reference);
  }

  /** Where the batch's one transaction stands (payoutStanding: every documented batch and transaction status). */
  private async where(batch: WompiPayoutBatch, reference: string): Promise<PayoutOutcome> {
    const tx = oneTransaction(await this.client.batchTransactions(batch.id), reference);
    const networkId = tx?.id ?? batch.id;
    const standing = payoutStanding(batch, tx);
    if (standing.status === 'paid') return { status: 'paid', networkId };
    if (standing.status === 'failed') return { status: 'failed', networkId, remarks: standing.remarks };
    return { status: 'pending', networkId, settleAt: new Date(this.opts.clock.now().getTime() + this.opts.pollAfterMs) };
  }
}

/** The batch's transaction of this reference (a batch of one: its only one), or null. */
function oneTransaction(transactions: WompiPayoutTransaction[], reference: string): WompiPayoutTransaction | null {
  return transactions.find((t) => t.reference === reference) ?? (transactions.length === 1 ? transactions[0] : null);
}

/**
 * What the provider holds for a cash-out, read only (never sends anything): the batch of its payout
 * reference and that batch's transaction, or null when the provider has no batch of the reference.
 * An event is checked against this, never trusted by itself (docs/connectors.md "Payouts").
 */
export async function readPayout(
  client: WompiPayoutsClient,
  cashoutId: string,
): Promise<{ reference: string; batch: WompiPayoutBatch; transaction: WompiPayoutTransaction | null } | null> {
  const reference = payoutReference(cashoutId);
  const batch = await client.findBatch(reference);
  if (!batch) return null;
  return { reference, batch, transaction: oneTransaction(await client.batchTransactions(batch.id), reference) };
}
