import type { Selectable, Transaction } from 'kysely';
import type { Clock } from '../../platform/clock.ts';
import type { RequestContext } from '../../platform/context.ts';
import { inTransaction } from '../../platform/db/database.ts';
import type { DB } from '../../platform/db/schema.ts';
import { ApiError, validationError } from '../../platform/errors/api-error.ts';
import { prefixedId } from '../../platform/ids.ts';
import { paginate, parseListQuery, type ListSpec } from '../../platform/lists/lists.ts';
import { parseMinor, toPesos } from '../../platform/money.ts';
import { emitEvent, type EventSinks } from '../../platform/outbox/outbox.ts';
import { inTenant, iso, type Tenant } from '../../platform/scope.ts';
import { formatAmount } from '../../rails/messages.ts';
import { loadCustomer } from '../customers/service.ts';
import { customerWalletBalance, depositToCustomerWallet } from '../ledger/service.ts';
import { WALLET_CURRENCY, type CreateWalletTransactionBody, type WalletBalanceResponse, type WalletTransactionResponse } from './schemas.ts';
import type { WalletNodeType, WalletTransactionsTable, WalletTransactionType } from './tables.ts';
import './tables.ts';

/**
 * Customer wallets (docs/wallets.md): a customer's money inside Recaudo, moved there from the
 * company's available balance. The money is a `customer_wallet` ledger account per customer
 * (ledger/service.ts); this module lists its movements (`wallet_transactions`), each written in
 * the transaction of the ledger posting it describes, with its `wallet.transaction.created` event.
 */

type WalletRow = Selectable<WalletTransactionsTable>;

const SUBTYPE: Record<WalletTransactionType, WalletTransactionResponse['subtype']> = { deposit: 'DEPOSIT', withdrawal: 'WITHDRAW', return: 'RETURN' };

export const walletTransactionList: ListSpec<'id' | 'type', 'created_at'> = { filters: ['id', 'type'], sorts: ['created_at'] };

/** Minor units as es-CO writes them (`$ 12.500`, `$ 1.500,50`), exactly (through the decimal text, never a float). */
export function moneyLabel(minor: bigint, currency = WALLET_CURRENCY): string {
  const negative = minor < 0n;
  const abs = negative ? -minor : minor;
  return formatAmount(`${negative ? '-' : ''}${abs / 100n}.${(abs % 100n).toString().padStart(2, '0')}`, currency);
}

export function toWalletTransactionResponse(row: WalletRow): WalletTransactionResponse {
  const amount = BigInt(row.amount);
  return {
    id: row.id,
    type: row.type,
    subtype: SUBTYPE[row.type],
    amount: toPesos(amount),
    label: moneyLabel(amount, row.currency),
    currency: row.currency,
    concept: row.concept,
    confirmed: row.confirmed,
    node_type: row.node_type,
    node: row.node_id ? { id: row.node_id } : null,
    customer_id: row.customer_id,
    created_at: iso(row.created_at),
    is_test: row.environment === 'test',
  };
}

/** GET /customers/{id}/balance: the wallet's balance (0 for a customer whose wallet never held money). */
export async function getWalletBalance(ctx: RequestContext, customerId: string): Promise<WalletBalanceResponse> {
  const customer = await loadCustomer(ctx, customerId);
  const balance = await customerWalletBalance(ctx.db, ctx, customer.id, WALLET_CURRENCY);
  return { id: customer.id, balance: toPesos(balance), label: moneyLabel(balance), currency: WALLET_CURRENCY, is_test: ctx.isTest };
}

/**
 * POST /customers/{id}/transactions: company balance → the customer's wallet, in one transaction
 * (the request's): the ledger posting (`wallet_deposit`, source this wallet transaction), the row
 * and the event. A balance short of the amount is 422 10501 `insufficient_funds`; nothing is written.
 */
export async function createWalletDeposit(
  ctx: RequestContext,
  customerId: string,
  body: CreateWalletTransactionBody,
): Promise<WalletTransactionResponse> {
  const customer = await loadCustomer(ctx, customerId);
  const amount = parseMinor(body.amount);
  if (amount === null || amount <= 0n) throw validationError({ amount: ['must be an amount in pesos greater than 0, with at most 2 decimals'] });
  return inTransaction(ctx.db, async (trx) => {
    const now = ctx.deps.clock.now();
    const id = prefixedId('wtx', now.getTime());
    let posted;
    try {
      posted = await depositToCustomerWallet(trx, ctx, {
        currency: WALLET_CURRENCY,
        amount,
        source: { type: 'wallet_transaction', id },
        customerId: customer.id,
      });
    } catch (error) {
      if (error instanceof ApiError && error.def.codeName === 'insufficient_balance') {
        throw new ApiError('insufficient_funds', {
          message: `The company's available balance does not cover this deposit of ${moneyLabel(amount)}; nothing was moved.`,
        });
      }
      throw error;
    }
    const row = await insertWalletTransaction(trx, ctx, now, {
      id,
      customerId: customer.id,
      type: 'deposit',
      amount,
      currency: WALLET_CURRENCY,
      concept: body.concept ?? null,
      confirmed: true,
      node: null,
      ledgerTransactionId: posted.id,
    });
    const response = toWalletTransactionResponse(row!);
    await emitEvent({ ...ctx, db: trx }, 'wallet.transaction.created', response, now);
    return response;
  });
}

/** GET /customers/{id}/transactions: the wallet's movements, newest first (list envelope). */
export async function listWalletTransactions(ctx: RequestContext, customerId: string, query: Record<string, unknown>, path: string) {
  const customer = await loadCustomer(ctx, customerId);
  const list = parseListQuery(walletTransactionList, query);
  let q = ctx.db.selectFrom('wallet_transactions').selectAll().$call(inTenant(ctx)).where('customer_id', '=', customer.id);
  if (list.filters.id !== undefined) q = q.where('id', '=', list.filters.id);
  if (list.filters.type !== undefined) q = q.where('type', '=', list.filters.type as WalletTransactionType);
  return paginate(q, list, { path, query, table: 'wallet_transactions', map: toWalletTransactionResponse });
}

// ---------------------------------------------------------------------------------------------
// For other modules (cash-outs): movements whose ledger posting the caller makes

/** Who records: a company in one environment with a clock (a ServiceScope or a RequestContext is one). */
export interface WalletScope extends Tenant {
  deps: { clock: Clock; eventSinks: EventSinks };
  /** A request context wakes this process's workers once its transaction commits. */
  notifyWorkers?: () => void;
}

export interface WalletWithdrawalInput {
  customerId: string;
  /** Minor units, > 0: what the cash-out took from the wallet. */
  amount: bigint;
  currency: string;
  cashoutId: string;
  concept?: string | null;
  /** false (default): the cash-out is on its way; confirmWalletWithdrawal when it completes. */
  confirmed?: boolean;
  /** The ledger transaction that took the money from the wallet (the hold), when known. */
  ledgerTransactionId?: string | null;
}

export interface WalletMovement {
  /** false: this cash-out's movement was recorded before; this is that one, unchanged (no event). */
  created: boolean;
  transaction: WalletTransactionResponse;
}

/**
 * A cash-out took money out of the customer's wallet: writes the `withdrawal` row (node_type
 * `CashoutLine`, node the cash-out) and emits `wallet.transaction.created`, in the caller's
 * transaction. It posts nothing: the caller posts the ledger move (holdPayout from the
 * customer_wallet) in the same transaction. Once per cash-out: again returns the first row.
 */
export async function recordWalletWithdrawal(trx: Transaction<DB>, scope: WalletScope, input: WalletWithdrawalInput): Promise<WalletMovement> {
  if (typeof input.amount !== 'bigint' || input.amount <= 0n) throw new Error('a wallet withdrawal amount is a positive bigint of minor units');
  return recordMovement(trx, scope, {
    customerId: input.customerId,
    type: 'withdrawal',
    amount: input.amount,
    currency: input.currency,
    concept: input.concept ?? null,
    confirmed: input.confirmed ?? false,
    node: { type: 'CashoutLine', id: input.cashoutId },
    ledgerTransactionId: input.ledgerTransactionId ?? null,
  });
}

/** The cash-out of a withdrawal completed: the withdrawal becomes `confirmed` (no event). Null when the cash-out withdrew nothing from a wallet. */
export async function confirmWalletWithdrawal(
  trx: Transaction<DB>,
  scope: WalletScope,
  cashoutId: string,
): Promise<WalletTransactionResponse | null> {
  const row = await trx
    .updateTable('wallet_transactions')
    .set({ confirmed: true, updated_at: scope.deps.clock.now() })
    .$call(inTenant(scope))
    .where('node_type', '=', 'CashoutLine')
    .where('node_id', '=', cashoutId)
    .where('type', '=', 'withdrawal')
    .returningAll()
    .executeTakeFirst();
  return row ? toWalletTransactionResponse(row) : null;
}

/**
 * A withdrawal's money came back to the wallet (the cash-out was rejected or cancelled, or the bank
 * returned it): writes a `return` row of the whole withdrawal and emits `wallet.transaction.created`.
 * The caller posts the ledger move (releaseHold / returnPayout to the customer_wallet). Once per
 * cash-out; a cash-out without a withdrawal is a bug (Error).
 */
export async function recordWalletReturn(
  trx: Transaction<DB>,
  scope: WalletScope,
  input: { cashoutId: string; concept?: string | null; ledgerTransactionId?: string | null },
): Promise<WalletMovement> {
  const withdrawal = await trx
    .selectFrom('wallet_transactions')
    .selectAll()
    .$call(inTenant(scope))
    .where('node_type', '=', 'CashoutLine')
    .where('node_id', '=', input.cashoutId)
    .where('type', '=', 'withdrawal')
    .executeTakeFirst();
  if (!withdrawal) throw new Error(`cash-out ${input.cashoutId} withdrew nothing from a wallet`);
  return recordMovement(trx, scope, {
    customerId: withdrawal.customer_id,
    type: 'return',
    amount: BigInt(withdrawal.amount),
    currency: withdrawal.currency,
    concept: input.concept ?? null,
    confirmed: true,
    node: { type: 'CashoutLine', id: input.cashoutId },
    ledgerTransactionId: input.ledgerTransactionId ?? null,
  });
}

/**
 * A spend on a card issued for the customer (docs/issuing.md) took money out of the wallet: writes
 * a confirmed `withdrawal` row (node_type `IssuingAuthorization`, node the authorization) and emits
 * `wallet.transaction.created`, in the caller's transaction. The caller posts the ledger move (the
 * customer_wallet → outside) in the same transaction. Once per authorization.
 */
export async function recordWalletCardSpend(
  trx: Transaction<DB>,
  scope: WalletScope,
  input: { customerId: string; amount: bigint; currency: string; authorizationId: string; concept?: string | null; ledgerTransactionId: string },
): Promise<WalletMovement> {
  if (typeof input.amount !== 'bigint' || input.amount <= 0n) throw new Error('a card spend amount is a positive bigint of minor units');
  return recordMovement(trx, scope, {
    customerId: input.customerId,
    type: 'withdrawal',
    amount: input.amount,
    currency: input.currency,
    concept: input.concept ?? null,
    confirmed: true,
    node: { type: 'IssuingAuthorization', id: input.authorizationId },
    ledgerTransactionId: input.ledgerTransactionId,
  });
}

interface MovementValues {
  customerId: string;
  type: WalletTransactionType;
  amount: bigint;
  currency: string;
  concept: string | null;
  confirmed: boolean;
  node: { type: WalletNodeType; id: string } | null;
  ledgerTransactionId: string | null;
}

async function recordMovement(trx: Transaction<DB>, scope: WalletScope, values: MovementValues): Promise<WalletMovement> {
  const now = scope.deps.clock.now();
  const row = await insertWalletTransaction(trx, scope, now, { id: prefixedId('wtx', now.getTime()), ...values });
  if (!row) {
    const existing = await trx
      .selectFrom('wallet_transactions')
      .selectAll()
      .$call(inTenant(scope))
      .where('node_type', '=', values.node!.type)
      .where('node_id', '=', values.node!.id)
      .where('type', '=', values.type)
      .executeTakeFirstOrThrow();
    return { created: false, transaction: toWalletTransactionResponse(existing) };
  }
  const transaction = toWalletTransactionResponse(row);
  await emitEvent({ ...scope, db: trx }, 'wallet.transaction.created', transaction, now);
  return { created: true, transaction };
}

/** The row; undefined when the movement of this node and type exists already. */
async function insertWalletTransaction(trx: Transaction<DB>, scope: Tenant, now: Date, values: MovementValues & { id: string }) {
  return trx
    .insertInto('wallet_transactions')
    .values({
      company_id: scope.companyId,
      environment: scope.environment,
      id: values.id,
      customer_id: values.customerId,
      type: values.type,
      amount: values.amount,
      currency: values.currency,
      concept: values.concept,
      confirmed: values.confirmed,
      node_type: values.node?.type ?? null,
      node_id: values.node?.id ?? null,
      ledger_transaction_id: values.ledgerTransactionId,
      created_at: now,
      updated_at: now,
    })
    .onConflict((oc) => oc.columns(['company_id', 'environment', 'node_type', 'node_id', 'type']).where('node_id', 'is not', null).doNothing())
    .returningAll()
    .executeTakeFirst();
}
