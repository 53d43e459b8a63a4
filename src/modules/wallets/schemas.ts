import { z } from 'zod';
import { text } from '../../platform/validation.ts';
import { WALLET_NODE_TYPES, WALLET_TRANSACTION_TYPES } from './tables.ts';

/** Customer wallets (docs/wallets.md). Amount rules (> 0, at most 2 decimals) are checked by the service, which names the field. */

export const WALLET_CURRENCY = 'COP';

export const walletBalanceResponse = z.object({
  id: z.string().describe('the customer id: a customer has one wallet'),
  balance: z.number().describe('pesos (at most 2 decimals) in the wallet'),
  label: z.string().describe('the balance as es-CO writes it, e.g. "$ 12.500" or "$ 1.500,50"'),
  currency: z.literal(WALLET_CURRENCY),
  is_test: z.boolean(),
});
export type WalletBalanceResponse = z.infer<typeof walletBalanceResponse>;

export const createWalletTransactionBody = z.object({
  amount: z.union([z.number(), z.string().max(40)]).describe("pesos, more than 0, at most 2 decimals; taken from the company's available balance"),
  concept: text(1, 255).nullish().describe('what the deposit is for, shown in the wallet'),
});
export type CreateWalletTransactionBody = z.infer<typeof createWalletTransactionBody>;

export const walletTransactionResponse = z.object({
  id: z.string().describe('wtx_…'),
  type: z
    .enum(WALLET_TRANSACTION_TYPES)
    .describe('deposit: company balance → wallet; withdrawal: wallet → a cash-out; return: a withdrawal back in the wallet'),
  subtype: z.enum(['DEPOSIT', 'WITHDRAW', 'RETURN']).describe("the type in OnePay's spelling"),
  amount: z.number().describe('pesos, always positive; `type` says the direction'),
  label: z.string().describe('the amount as es-CO writes it, e.g. "$ 12.500"'),
  currency: z.string(),
  concept: z.string().nullable(),
  confirmed: z.boolean().describe('deposits and returns: true; a withdrawal: true once its cash-out completed'),
  node_type: z
    .enum(WALLET_NODE_TYPES)
    .nullable()
    .describe('CashoutLine for withdrawals and returns of a cash-out; IssuingAuthorization for a spend on an issued card; null for deposits'),
  node: z.object({ id: z.string().describe('the cash-out id (GET /v1/cashouts/{id}) or the card authorization id (iauth_…)') }).nullable(),
  customer_id: z.string(),
  created_at: z.string(),
  is_test: z.boolean(),
});
export type WalletTransactionResponse = z.infer<typeof walletTransactionResponse>;

export const idParams = z.object({ id: z.string() });
