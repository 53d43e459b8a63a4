/**
 * Wompi's Third-Party Payments API ("Pagos a terceros", docs.wompi.co: introducción, crea tu
 * primer lote, consultas y operaciones, eventos, sandbox), the facts the payout adapter relies on,
 * in one place. It is a product apart from the payments API: its own host, its own keys
 * (`x-api-key` + `user-principal-id`), its own events secret. Where the public documentation left
 * something open the choice is marked ASSUMPTION and listed in docs/connectors.md.
 */

export const WOMPI_PAYOUTS_BASE_URLS = {
  sandbox: 'https://api.sandbox.payouts.wompi.co/v1',
  production: 'https://api.payouts.wompi.co/v1',
} as const;

/** A batch's status. REJECTED and TOTAL_PAYMENT are final; TOTAL_PAYMENT does not mean every transaction was paid. */
export const PAYOUT_BATCH_STATUSES = ['PENDING_APPROVAL', 'PENDING', 'NOT_APPROVED', 'REJECTED', 'PARTIAL_PAYMENT', 'TOTAL_PAYMENT'] as const;

/**
 * A transaction's status: PENDING, then APPROVED (credited), FAILED (wrong data, a restricted
 * account) or CANCELLED (the batch was not approved). ASSUMPTION: the other values the query
 * filters accept (PROCESSING, READY_TO_FILE, ADDED_TO_FILE) are still on the way; REJECTED is a failure.
 */
export type PayoutTransactionStatus = 'PENDING' | 'APPROVED' | 'FAILED' | 'CANCELLED' | (string & {});

export interface WompiPayoutBatch {
  id: string;
  reference: string;
  status: string;
  statusMessage?: string | null;
  amountInCents?: number;
  totalTransactions?: number;
}

export interface WompiPayoutTransaction {
  id: string;
  status: PayoutTransactionStatus;
  amountInCents: number;
  reference?: string | null;
  /** A string in the REST reads, `{code, message}` in events. */
  failureReason?: string | { code?: string; message?: string } | null;
  payoutId?: string;
}

/** A list read: `{page, limit, total, pages, records}` (ASSUMPTION: the shape of every paginated read). */
export interface WompiPage<T> {
  records: T[];
  total?: number;
}

/** The error body: `{code: "EXC_…", message}`. */
export interface WompiPayoutErrorBody {
  code?: string;
  message?: string | string[];
}

/** EXC_022 (HTTP 409): this idempotency key was used already (the batch exists). */
export const IDEMPOTENCY_KEY_USED = 'EXC_022';

/** Recaudo's account subtypes as the provider's `accountType` (ASSUMPTION: DEPOSITO_ELECTRONICO for electronic deposits). */
export const PAYOUT_ACCOUNT_TYPES: Readonly<Record<string, string>> = {
  SAVINGS: 'AHORROS',
  CHECKING: 'CORRIENTE',
  ELECTRONIC_DEPOSIT: 'DEPOSITO_ELECTRONICO',
};

/** Customers' document types as the provider's `legalIdType` (documented: CC, NIT, CE; ASSUMPTION: PP for passports). */
export const PAYOUT_LEGAL_ID_TYPES: Readonly<Record<string, string>> = { CC: 'CC', NIT: 'NIT', CE: 'CE', PASSPORT: 'PP' };

/**
 * The provider's charset for a batch reference, a transaction reference and an idempotency key:
 * letters, digits and the hyphen (an idempotency key 1–64 of them; a reference with another
 * character is refused, 422).
 */
export const PAYOUT_REFERENCE = /^[A-Za-z0-9-]{1,64}$/;

/**
 * The payout reference of a cash-out: its id with the underscore as a hyphen (`co_abc…` →
 * `co-abc…`). The one transform used wherever the cash-out is named to the provider: the batch
 * reference, the transaction reference, the idempotency key and the lookups by reference.
 */
export function payoutReference(cashoutId: string): string {
  const reference = cashoutId.replace(/_/g, '-');
  if (!PAYOUT_REFERENCE.test(reference)) throw new RangeError(`no payout reference for ${JSON.stringify(cashoutId)}`);
  return reference;
}

/**
 * The idempotency key of a payout (kept 24 hours by the provider): its payout reference, so a
 * retried send can never make a second batch.
 */
export function payoutIdempotencyKey(cashoutId: string): string {
  return payoutReference(cashoutId);
}

/** Transaction statuses that end a payout, and how: credited or not. */
export function payoutTransactionFinal(status: string): 'paid' | 'failed' | null {
  if (status === 'APPROVED') return 'paid';
  if (status === 'FAILED' || status === 'CANCELLED' || status === 'REJECTED') return 'failed';
  return null;
}

/** The remarks of a payout that failed: `FAILED: D07 La cuenta no existe`. */
export function payoutRemarks(status: string, reason: WompiPayoutTransaction['failureReason'] | string | null | undefined): string {
  const text =
    typeof reason === 'string' ? reason : reason ? [reason.code, reason.message].filter((part) => typeof part === 'string' && part).join(' ') : '';
  return (text.trim() ? `${status}: ${text.trim()}` : status).slice(0, 250);
}
