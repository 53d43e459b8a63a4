import type { ColumnType } from 'kysely';
import type { Environment } from '../../platform/db/schema.ts';

type Timestamp = ColumnType<Date, Date | string, Date | string>;

/**
 * A wallet movement (docs/wallets.md): `deposit` (company balance → the customer's wallet, by the
 * API), `withdrawal` (the wallet → a cash-out, recorded by the cash-out module) and `return` (a
 * withdrawal's money back in the wallet: the cash-out was rejected, cancelled or returned).
 */
export const WALLET_TRANSACTION_TYPES = ['deposit', 'withdrawal', 'return'] as const;
export type WalletTransactionType = (typeof WALLET_TRANSACTION_TYPES)[number];

/**
 * What a movement belongs to: a cash-out (OnePay's `CashoutLine`) or a spend on an issued card
 * (`IssuingAuthorization`, docs/issuing.md). A deposit belongs to nothing.
 */
export const WALLET_NODE_TYPES = ['CashoutLine', 'IssuingAuthorization'] as const;
export type WalletNodeType = (typeof WALLET_NODE_TYPES)[number];

/** The wallets module's table (migrations/0018_customer_wallets.sql), merged into the shared DB type. */
export interface WalletTransactionsTable {
  company_id: string;
  environment: Environment;
  id: string;
  customer_id: string;
  type: WalletTransactionType;
  amount: ColumnType<bigint, bigint, never>;
  currency: string;
  concept: string | null;
  confirmed: boolean;
  node_type: WalletNodeType | null;
  node_id: string | null;
  ledger_transaction_id: string | null;
  created_at: Timestamp;
  updated_at: Timestamp;
}

declare module '../../platform/db/schema.ts' {
  interface DB {
    wallet_transactions: WalletTransactionsTable;
  }
}
