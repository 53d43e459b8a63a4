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

/**
 * Every documented batch status (GET /payouts `status` filter, `payout.updated` events), and what it
 * means for a cash-out, the batch's one transaction aside:
 * - `on_the_way`: PENDING_APPROVAL (waiting for the merchant's approver in the dashboard), PENDING,
 *   AFE_ON_HOLD (held by the provider's anti-fraud review: it may still be paid);
 * - `refused`: no transaction of the batch will be paid, the money goes back to the origin
 *   account: NOT_APPROVED (the approver declined it), REJECTED, AFE_REJECTED (the anti-fraud review
 *   rejected it);
 * - `done`: PARTIAL_PAYMENT, TOTAL_PAYMENT (every transaction is final; TOTAL_PAYMENT does not
 *   mean every one was paid: each transaction's own status decides).
 */
export const PAYOUT_BATCH_MEANING = {
  PENDING_APPROVAL: 'on_the_way',
  PENDING: 'on_the_way',
  AFE_ON_HOLD: 'on_the_way',
  NOT_APPROVED: 'refused',
  REJECTED: 'refused',
  AFE_REJECTED: 'refused',
  PARTIAL_PAYMENT: 'done',
  TOTAL_PAYMENT: 'done',
} as const satisfies Record<string, 'on_the_way' | 'refused' | 'done'>;
export type PayoutBatchStatus = keyof typeof PAYOUT_BATCH_MEANING;
/** Every documented batch status (the keys of its meaning: one list). */
export const PAYOUT_BATCH_STATUSES = Object.keys(PAYOUT_BATCH_MEANING) as PayoutBatchStatus[];

/**
 * Every documented transaction status (the transactions' `status` filter, `transaction.updated`
 * events): PENDING, PROCESSING, READY_TO_FILE and ADDED_TO_FILE (in an ACH file) are on the way;
 * APPROVED is credited; FAILED (wrong data, a restricted account), REJECTED (by the bank) and
 * CANCELLED (its batch was not approved) are final without money leaving.
 */
export const PAYOUT_TRANSACTION_MEANING = {
  PENDING: 'on_the_way',
  PROCESSING: 'on_the_way',
  READY_TO_FILE: 'on_the_way',
  ADDED_TO_FILE: 'on_the_way',
  APPROVED: 'paid',
  FAILED: 'failed',
  REJECTED: 'failed',
  CANCELLED: 'failed',
} as const satisfies Record<string, 'on_the_way' | 'paid' | 'failed'>;
export type PayoutTransactionStatus = keyof typeof PAYOUT_TRANSACTION_MEANING;
/** Every documented transaction status (the keys of its meaning: one list). */
export const PAYOUT_TRANSACTION_STATUSES = Object.keys(PAYOUT_TRANSACTION_MEANING) as PayoutTransactionStatus[];

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
  /** One of PAYOUT_TRANSACTION_STATUSES (a string: the provider may add values). */
  status: string;
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

/** Where a payout stands by the provider's word: paid, failed (with its remarks) or still on the way. */
export type PayoutStanding = { status: 'paid' } | { status: 'failed'; remarks: string } | { status: 'on_the_way' };

const batchMeaning = (status: string) =>
  PAYOUT_BATCH_MEANING[status as PayoutBatchStatus] as (typeof PAYOUT_BATCH_MEANING)[PayoutBatchStatus] | undefined;
const transactionMeaning = (status: string) =>
  PAYOUT_TRANSACTION_MEANING[status as PayoutTransactionStatus] as (typeof PAYOUT_TRANSACTION_MEANING)[PayoutTransactionStatus] | undefined;

/**
 * Where a cash-out (a batch of one transaction) stands, from the batch and its transaction as the
 * provider answers them. The transaction credited is paid. A batch refused as a whole (NOT_APPROVED,
 * REJECTED, AFE_REJECTED) is a failure whatever its transaction still says, with the batch's status
 * and message as remarks (`AFE_REJECTED: <statusMessage>`); otherwise a failed transaction is a
 * failure with its own reason (`FAILED: D07 …`). Anything else — AFE_ON_HOLD, PENDING_APPROVAL,
 * the transaction in an ACH file, or a status the documentation does not list — is still on the
 * way: asked again, never settled by a guess.
 */
export function payoutStanding(
  batch: Pick<WompiPayoutBatch, 'status' | 'statusMessage'>,
  tx: Pick<WompiPayoutTransaction, 'status' | 'failureReason'> | null,
): PayoutStanding {
  const txMeaning = tx ? transactionMeaning(tx.status) : undefined;
  if (txMeaning === 'paid') return { status: 'paid' };
  if (batchMeaning(batch.status) === 'refused') {
    return { status: 'failed', remarks: payoutRemarks(batch.status, batch.statusMessage || tx?.failureReason) };
  }
  if (tx && txMeaning === 'failed') return { status: 'failed', remarks: payoutRemarks(tx.status, tx.failureReason) };
  return { status: 'on_the_way' };
}

/** The remarks of a payout that failed: `FAILED: D07 La cuenta no existe`. */
export function payoutRemarks(status: string, reason: WompiPayoutTransaction['failureReason'] | string | null | undefined): string {
  const text =
    typeof reason === 'string' ? reason : reason ? [reason.code, reason.message].filter((part) => typeof part === 'string' && part).join(' ') : '';
  return (text.trim() ? `${status}: ${text.trim()}` : status).slice(0, 250);
}
