import type { Transaction } from 'kysely';
import type { DB } from '../../platform/db/schema.ts';
import { recordCollection, recordRefund, type SplitShare } from '../ledger/service.ts';
import { percentageOf } from '../../platform/money.ts';
import type { PaymentRow } from './queries.ts';
import type { ServiceScope } from '../../platform/context.ts';

/**
 * The payments module's money movements (docs/ledger.md "Payments"), posted through the ledger
 * service in the transaction that changes the payment:
 * - each approved attempt (approved or partially paid) is a collection of its amount, source the
 *   intent, into the company's available balance; the payment's `splits` (and its target wallet)
 *   move their share of that amount to the receiving companies' wallets;
 * - a refund gives back everything paid, source the payment, debited from the company's available
 *   balance (`insufficient_balance` when it is not enough). A dispute holds the amount and a lost
 *   one pays it out from the held balance (the disputes module, docs/disputes.md).
 */

/** A split's share of the first `paid` minor units of the payment (fixed shares pro rata, rounded down). */
function shareOf(split: PaymentRow['splits'][number], total: bigint | null, paid: bigint): bigint {
  if (split.percentage_bp !== null) return percentageOf(paid, split.percentage_bp);
  if (split.amount === null || total === null || total === 0n) return 0n;
  return (BigInt(split.amount) * paid) / total;
}

/**
 * The shares of one paid part (`amount`, the last part of `payment.amount_paid`). Each share is
 * what the split is owed on everything paid so far minus what it was owed before this part, so
 * the parts of a partial payment add up exactly to the split's share of the whole; never more than
 * the part itself. What is left goes to the target wallet, when the payment names one.
 */
export function paymentSplitShares(payment: PaymentRow, amount: bigint): SplitShare[] {
  const before = payment.amount_paid - amount;
  let left = amount;
  const shares: SplitShare[] = [];
  for (const split of payment.splits) {
    const owed = shareOf(split, payment.amount, payment.amount_paid) - shareOf(split, payment.amount, before);
    const share = owed < left ? owed : left;
    left -= share;
    if (share > 0n) shares.push({ walletCompanyId: split.wallet_id!, amount: share });
  }
  if (payment.target_wallet_company_id && left > 0n) shares.push({ walletCompanyId: payment.target_wallet_company_id, amount: left });
  return shares;
}

/** An approved attempt of `amount` minor units (the payment row as the transition left it). */
export async function onPaymentPaid(
  trx: Transaction<DB>,
  scope: ServiceScope,
  payment: PaymentRow,
  part: { amount: bigint; intentId: string },
): Promise<void> {
  if (part.amount <= 0n) return;
  await recordCollection(trx, scope, {
    currency: payment.currency,
    amount: part.amount,
    source: { type: 'payment_intent', id: part.intentId },
    splits: paymentSplitShares(payment, part.amount),
  });
}

/** The payment was refunded (POST /payments/{id}/refund): everything paid goes back to the payer. */
export async function onPaymentRefunded(trx: Transaction<DB>, scope: ServiceScope, payment: PaymentRow): Promise<void> {
  if (payment.amount_paid <= 0n) return;
  await recordRefund(trx, scope, { currency: payment.currency, amount: payment.amount_paid, source: { type: 'payment', id: payment.id } });
}
