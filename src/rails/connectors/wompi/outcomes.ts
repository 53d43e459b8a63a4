import type { DebitOutcome } from '../../debit.ts';
import { RailRefused, type PolledOutcome } from '../../payer.ts';
import { WompiRefused, WompiUnavailable, type TransactionRequest, type WompiClient } from './client.ts';
import type { WompiTransaction } from './contract.ts';

/** The provider's reason, as the charge's remarks: `DECLINED: Fondos insuficientes`. */
export function remarksOf(tx: WompiTransaction): string {
  const message = (tx.status_message ?? '').trim();
  return (message ? `${tx.status}: ${message}` : tx.status).slice(0, 250);
}

/** What a debit's outcome is, given the provider's transaction (from an answer, a poll or an event). */
export function debitOutcomeOf(tx: WompiTransaction, settleAt: Date): DebitOutcome {
  const polled = polledOutcomeOf(tx);
  if (polled.status === 'pending') return { status: 'pending', networkId: tx.id, settleAt };
  return polled.status === 'approved' ? { status: 'approved', networkId: tx.id } : { status: 'declined', networkId: tx.id, remarks: polled.remarks };
}

/** A payer rail's outcome (PSE, Nequi), given the provider's transaction. VOIDED counts as declined: no money came. */
export function polledOutcomeOf(tx: WompiTransaction): PolledOutcome {
  switch (tx.status) {
    case 'APPROVED':
      return { status: 'approved', networkId: tx.id };
    case 'DECLINED':
    case 'ERROR':
      return { status: 'declined', remarks: remarksOf(tx), networkId: tx.id };
    case 'VOIDED':
      return { status: 'declined', remarks: 'VOIDED', networkId: tx.id };
    default:
      return { status: 'pending' };
  }
}

/**
 * ASSUMPTION: a second transaction with a reference already used is refused with a 422 whose
 * messages name `reference`; the transaction the reference already has is then looked up.
 */
export function isDuplicateReference(error: unknown): boolean {
  return error instanceof WompiRefused && error.status === 422 && !!error.body?.error?.messages && 'reference' in error.body.error.messages;
}

/**
 * Creates the transaction of `reference`, or finds the one an earlier attempt created (a lost
 * answer, a reconciler): the reference is Recaudo's id, so there is never a second one.
 */
export async function createOnce(client: WompiClient, request: TransactionRequest): Promise<WompiTransaction> {
  try {
    return await client.createTransaction(request);
  } catch (error) {
    if (!isDuplicateReference(error)) throw error;
    const found = await client.findByReference(request.reference);
    if (!found) throw new WompiUnavailable(`wompi: reference ${request.reference} used but not found`);
    return found;
  }
}

/** Where the transaction of a reference stands; not there yet: pending (the submission is reconciled by its caller). */
export async function pollReference(client: WompiClient, reference: string): Promise<PolledOutcome> {
  const tx = await client.findByReference(reference);
  return tx ? polledOutcomeOf(tx) : { status: 'pending', unknown: true };
}

/**
 * createOnce for a payer rail (PSE, Nequi): the provider's refusal of the transaction (a 4xx other
 * than 401/403, which are the merchant's keys and may be fixed) is definitive: RailRefused, so the
 * charge fails at once instead of being submitted again until it expires.
 */
export async function createPayerTransaction(client: WompiClient, request: TransactionRequest): Promise<WompiTransaction> {
  try {
    return await createOnce(client, request);
  } catch (error) {
    if (error instanceof WompiRefused && error.status !== 401 && error.status !== 403) {
      throw new RailRefused(`REFUSED: ${error.type}: ${error.message}`.slice(0, 250));
    }
    throw error;
  }
}
