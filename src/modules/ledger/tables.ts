import type { ColumnType } from 'kysely';
import type { Environment } from '../../platform/db/schema.ts';

type Timestamp = ColumnType<Date, Date | string, Date | string>;

/**
 * Account kinds (docs/ledger.md). A balance is the sum of an account's entries; positive means
 * Recaudo holds that money for the account's holder.
 * - `company_available`: what the company can use (refund, cash out). Never below zero.
 * - `company_pending`: collected, not settled yet. Never below zero.
 * - `wallet`: money another company moved to this company's balance (splits, target wallets).
 *   Lives in the receiving company's books. Never below zero.
 * - `company_held`: taken from the available balance for cash-outs on their way out (docs/cashouts.md).
 *   Never below zero.
 * - `customer_wallet`: the money of one of the company's customers (`holder` = the customer id),
 *   moved there from the company's balance. Never below zero.
 * - `external_clearing`: the world outside Recaudo (payers, banks); goes below zero as money
 *   comes in.
 */
export const ACCOUNT_KINDS = ['company_available', 'company_pending', 'company_held', 'wallet', 'customer_wallet', 'external_clearing'] as const;
export type AccountKind = (typeof ACCOUNT_KINDS)[number];
/** Kinds whose balance may never go below zero (also a CHECK constraint in migrations/0007_ledger.sql). */
export const NON_NEGATIVE: readonly AccountKind[] = ['company_available', 'company_pending', 'company_held', 'wallet', 'customer_wallet'];

/** `hold`: a cash-out's money set aside; `payout`: it left; `release`: it came back to where it was held from; `wallet_deposit`: company → a customer's wallet. */
export const TRANSACTION_KINDS = ['collection', 'settlement', 'split', 'refund', 'payout', 'reversal', 'hold', 'release', 'wallet_deposit'] as const;
export type LedgerTransactionKind = (typeof TRANSACTION_KINDS)[number];

/** The ledger module's tables (migrations/0007_ledger.sql), merged into the shared DB type. */
export interface LedgerAccountsTable {
  company_id: string;
  environment: Environment;
  id: string;
  kind: AccountKind;
  /** The customer of a `customer_wallet` account; '' for the company's own accounts. */
  holder: ColumnType<string, string | undefined, never>;
  currency: string;
  /**
   * The ROLLED-UP part of the balance (migrations/0036): the exact balance adds the account's
   * `ledger_unrolled_entries`. Read balances from `ledger_account_balances` (or the service).
   */
  balance: ColumnType<bigint, bigint | undefined, bigint>;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface LedgerTransactionsTable {
  company_id: string;
  environment: Environment;
  id: string;
  kind: LedgerTransactionKind;
  currency: string;
  source_type: string;
  source_id: string;
  created_at: Timestamp;
}

/** Immutable: inserted once with its transaction, never updated nor deleted (triggers refuse it). */
export interface LedgerEntriesTable {
  company_id: string;
  environment: Environment;
  id: string;
  transaction_id: string;
  account_id: string;
  amount: ColumnType<bigint, bigint, never>;
  currency: string;
  created_at: Timestamp;
}

/**
 * An entry not rolled up into its account's cached balance yet (migrations/0036): credits (and
 * every clearing entry) are written here instead of updating the account row, so they take no
 * lock on it; the roll-up folds them into `ledger_accounts.balance` and deletes them.
 */
export interface LedgerUnrolledEntriesTable {
  /** The account's company (a split's wallet: the receiving company). */
  company_id: string;
  environment: Environment;
  account_id: string;
  entry_id: string;
  amount: bigint;
}

/** The view `ledger_account_balances`: every account with its exact balance (rolled up + unrolled). */
export interface LedgerAccountBalancesView {
  company_id: ColumnType<string, never, never>;
  environment: ColumnType<Environment, never, never>;
  id: ColumnType<string, never, never>;
  kind: ColumnType<AccountKind, never, never>;
  holder: ColumnType<string, never, never>;
  currency: ColumnType<string, never, never>;
  /** The exact balance: the sum of the account's entries. */
  balance: ColumnType<bigint, never, never>;
  /** `ledger_accounts.balance`, the part already rolled up. */
  rolled_up_balance: ColumnType<bigint, never, never>;
}

declare module '../../platform/db/schema.ts' {
  interface DB {
    ledger_accounts: LedgerAccountsTable;
    ledger_unrolled_entries: LedgerUnrolledEntriesTable;
    ledger_account_balances: LedgerAccountBalancesView;
    ledger_transactions: LedgerTransactionsTable;
    ledger_entries: LedgerEntriesTable;
  }
}
