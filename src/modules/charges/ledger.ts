import type { Transaction } from 'kysely';
import type { DB } from '../../platform/db/schema.ts';
import { percentageOf } from '../../platform/money.ts';
import { findTransaction, postTogether, recordCollection, reverse, type LedgerScope, type LedgerSource, type SplitShare } from '../ledger/service.ts';
import type { ChargeRow } from './present.ts';

/**
 * The charges module's money movements (docs/charges.md "Ledger"), posted through the ledger
 * service in the transaction that changes the charge:
 * - a paid charge is a collection of its amount (source the charge) into the company's available
 *   balance, and its splits move their shares to the receiving companies' wallets;
 * - a refund reverses both (the split first, so the shares come back), when it is requested:
 *   the money is held from then on, and a balance too small refuses the refund (insufficient_balance).
 */

export const chargeSource = (charge: { id: string }) => ({ type: 'charge', id: charge.id });

/** The splits' shares of the charge: fixed amounts, and percentages of the amount rounded down. */
export function chargeSplitShares(charge: ChargeRow): SplitShare[] {
  return charge.splits
    .map((s) => ({
      walletCompanyId: s.wallet_id,
      amount: s.percentage_bp !== null ? percentageOf(charge.amount, s.percentage_bp) : BigInt(s.amount ?? 0),
    }))
    .filter((s): s is SplitShare => Boolean(s.walletCompanyId) && s.amount > 0n);
}

export async function postChargeCollection(trx: Transaction<DB>, scope: LedgerScope, charge: ChargeRow): Promise<void> {
  await recordCollection(trx, scope, {
    currency: charge.currency,
    amount: charge.amount,
    source: chargeSource(charge),
    splits: chargeSplitShares(charge),
  });
}

/**
 * The refund of a paid charge: one reversal of its collection (after one of its split, if any).
 * The two reversals post together (one ledger call): the split's reversal credits the company's
 * available balance without a lock and the collection's reversal then locks it, so the balance
 * notices must wait for the end of both (docs/ledger.md "Lock order").
 */
export async function postChargeRefund(
  trx: Transaction<DB>,
  scope: LedgerScope,
  charge: Pick<ChargeRow, 'id'>,
  /**
   * Where the money to refund was collected: the charge, or — after a refund the rail refused —
   * that refund, whose failure collected it back (failRefundIn). Each collection is reversed once.
   */
  collectedBy: LedgerSource = chargeSource(charge),
): Promise<void> {
  await postTogether(trx, scope, async () => {
    const split = await findTransaction(trx, scope, { kind: 'split', source: collectedBy });
    if (split) await reverse(trx, scope, { transactionId: split.id });
    await reverse(trx, scope, { kind: 'collection', source: collectedBy });
  });
}

/** The source of the collection a refused refund posted to give the money back (failRefundIn). */
export const failedRefundSource = (refund: { id: string }): LedgerSource => ({ type: 'charge_refund', id: refund.id });
