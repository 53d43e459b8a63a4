import { sql, type Transaction } from 'kysely';
import type { Clock } from '../../platform/clock.ts';
import type { Executor } from '../../platform/db/database.ts';
import type { DB, Environment } from '../../platform/db/schema.ts';
import { ApiError } from '../../platform/errors/api-error.ts';
import { prefixedId } from '../../platform/ids.ts';
import { NON_NEGATIVE, type AccountKind, type LedgerTransactionKind } from './tables.ts';
import './tables.ts';
import { FIGURE_KINDS, noteBalanceChange, type BalanceNoticeScope } from './balance-notices.ts';
import type { Tenant } from '../../platform/scope.ts';
import { inTenant } from '../../platform/scope.ts';

/**
 * The ledger service (docs/ledger.md): the only writer of balances. Other modules post business
 * events through postTransaction or the helpers below, inside their own database transaction, so
 * a state change and its money movement commit together or not at all.
 *
 * Conventions: amounts are signed bigint minor units; an account's balance is the sum of its
 * entries (positive: Recaudo holds that money for the holder); the entries of a transaction sum
 * to zero.
 */

/**
 * Who posts: a company in one environment. A ServiceScope or a RequestContext is one. The job
 * queue opens the balance.updated notices of the postings (balance-notices.ts).
 */
export interface LedgerScope extends Tenant {
  deps: { clock: Clock } & BalanceNoticeScope['deps'];
}

/**
 * An account by its holder and kind; the currency is the transaction's. `companyId` defaults to the
 * posting company; another company's account may only be its `wallet` (splits).
 */
export interface AccountRef {
  kind: AccountKind;
  companyId?: string;
  /** A customer's wallet (kind `customer_wallet` only): the customer id. */
  holder?: string;
}

/** The business event a transaction records; (kind, source) posts at most once per company and environment. */
export interface LedgerSource {
  type: string;
  id: string;
}

export interface PostTransactionInput {
  kind: LedgerTransactionKind;
  currency: string;
  source: LedgerSource;
  entries: { account: AccountRef; amount: bigint }[];
}

export interface PostedEntry {
  id: string;
  account_id: string;
  account: { companyId: string; kind: AccountKind; holder: string };
  amount: bigint;
}

export interface PostedTransaction {
  id: string;
  company_id: string;
  environment: Environment;
  kind: LedgerTransactionKind;
  currency: string;
  source: LedgerSource;
  created_at: Date;
  entries: PostedEntry[];
  /** false: the same (kind, source) was posted before and this is that transaction, unchanged. */
  created: boolean;
}

/** A split share: money moved from the collecting company to another company's wallet. */
export interface SplitShare {
  walletCompanyId: string;
  amount: bigint;
}

/** A caller's mistake (unbalanced entries, a wrong currency...): a bug, never a client error. */
export class LedgerError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'LedgerError';
  }
}

const CURRENCY = /^[A-Z]{3}$/;

interface LockedAccount {
  id: string;
  companyId: string;
  kind: AccountKind;
  holder: string;
  balance: bigint;
}
type Locked = Map<string, LockedAccount>;

const refKey = (companyId: string, kind: AccountKind, holderId = '') => `${companyId}\u0000${kind}\u0000${holderId}`;
const keyOf = (scope: LedgerScope, ref: AccountRef) => refKey(holder(scope, ref), ref.kind, ref.holder ?? '');

function holder(scope: LedgerScope, ref: AccountRef): string {
  return ref.companyId ?? scope.companyId;
}

function checkSource(source: LedgerSource): void {
  if (
    !source ||
    typeof source.type !== 'string' ||
    typeof source.id !== 'string' ||
    !source.type ||
    !source.id ||
    source.type.length > 100 ||
    source.id.length > 200
  ) {
    throw new LedgerError('source needs a type (1-100 characters) and an id (1-200 characters)');
  }
}

function checkCurrency(currency: string): void {
  if (!CURRENCY.test(currency)) throw new LedgerError(`currency must be an ISO 4217 code, got ${currency}`);
}

/**
 * Get-or-create the accounts and row-lock them. Two steps, each in one order (holder, kind), so
 * postings that touch the same accounts never deadlock: INSERT … ON CONFLICT DO NOTHING on the
 * unique key (creates what is missing; waits only for another transaction creating the same
 * account, and takes no lock on existing rows), then SELECT … FOR UPDATE in sorted order.
 * Returns them by holder and kind; accounts already in `into` (locked earlier in this
 * transaction by a helper that posts several transactions) are not asked for again.
 */
async function lockAccounts(
  trx: Transaction<DB>,
  scope: LedgerScope,
  currency: string,
  refs: AccountRef[],
  into: Locked = new Map(),
): Promise<Locked> {
  const wanted = new Map<string, { companyId: string; kind: AccountKind; holder: string }>();
  for (const ref of refs) {
    const key = keyOf(scope, ref);
    if (!into.has(key)) wanted.set(key, { companyId: holder(scope, ref), kind: ref.kind, holder: ref.holder ?? '' });
  }
  if (wanted.size === 0) return into;
  const keys = [...wanted.values()].sort((a, b) => (refKey(a.companyId, a.kind, a.holder) < refKey(b.companyId, b.kind, b.holder) ? -1 : 1));
  const now = scope.deps.clock.now();
  await trx
    .insertInto('ledger_accounts')
    .values(
      keys.map((k) => ({
        company_id: k.companyId,
        environment: scope.environment,
        id: prefixedId('lac', now.getTime()),
        kind: k.kind,
        holder: k.holder,
        currency,
        balance: 0n,
        created_at: now,
        updated_at: now,
      })),
    )
    .onConflict((oc) => oc.columns(['company_id', 'environment', 'kind', 'currency', 'holder']).doNothing())
    .execute();
  const rows = await trx
    .selectFrom('ledger_accounts')
    .select(['id', 'company_id', 'kind', 'holder', 'balance'])
    .where('environment', '=', scope.environment)
    .where('currency', '=', currency)
    .where((eb) => eb.or(keys.map((k) => eb.and([eb('company_id', '=', k.companyId), eb('kind', '=', k.kind), eb('holder', '=', k.holder)]))))
    .orderBy('company_id')
    .orderBy('kind')
    .orderBy('holder')
    .forNoKeyUpdate()
    .execute();
  if (rows.length !== keys.length) throw new Error('ledger accounts vanished while being locked');
  for (const r of rows)
    into.set(refKey(r.company_id, r.kind, r.holder), {
      id: r.id,
      companyId: r.company_id,
      kind: r.kind,
      holder: r.holder,
      balance: BigInt(r.balance),
    });
  return into;
}

async function loadTransaction(
  db: Executor,
  scope: { companyId: string; environment: Environment },
  where: { id: string } | { kind: LedgerTransactionKind; source: LedgerSource },
): Promise<PostedTransaction | null> {
  let q = db.selectFrom('ledger_transactions').selectAll().$call(inTenant(scope));
  q =
    'id' in where
      ? q.where('id', '=', where.id)
      : q.where('kind', '=', where.kind).where('source_type', '=', where.source.type).where('source_id', '=', where.source.id);
  const t = await q.executeTakeFirst();
  if (!t) return null;
  const entries = await db
    .selectFrom('ledger_entries as e')
    .innerJoin('ledger_accounts as a', 'a.id', 'e.account_id')
    .select(['e.id', 'e.account_id', 'e.amount', 'a.company_id', 'a.kind', 'a.holder'])
    .where('e.company_id', '=', t.company_id)
    .where('e.environment', '=', t.environment)
    .where('e.transaction_id', '=', t.id)
    .orderBy('e.id')
    .execute();
  return {
    id: t.id,
    company_id: t.company_id,
    environment: t.environment,
    kind: t.kind,
    currency: t.currency,
    source: { type: t.source_type, id: t.source_id },
    created_at: new Date(t.created_at),
    entries: entries.map((e) => ({
      id: e.id,
      account_id: e.account_id,
      account: { companyId: e.company_id, kind: e.kind, holder: e.holder },
      amount: BigInt(e.amount),
    })),
    created: false,
  };
}

/** Major units with 2 decimals (every ledger currency has 2 minor digits), for messages. */
function formatAmount(minor: bigint, currency: string): string {
  const negative = minor < 0n;
  const abs = negative ? -minor : minor;
  return `${currency} ${negative ? '-' : ''}${abs / 100n}.${(abs % 100n).toString().padStart(2, '0')}`;
}

const KIND_LABEL: Record<AccountKind, string> = {
  company_available: 'available balance',
  company_pending: 'pending balance',
  wallet: 'wallet balance',
  company_held: 'balance held for cash-outs',
  customer_wallet: "customer's wallet balance",
  external_clearing: 'clearing account',
};

function insufficient(scope: LedgerScope, account: LockedAccount, needed: bigint, currency: string, kind: LedgerTransactionKind): ApiError {
  const own = account.companyId === scope.companyId;
  const whose = own ? `The ${currency} ${KIND_LABEL[account.kind]}` : `The receiving company's ${currency} ${KIND_LABEL[account.kind]}`;
  const amounts = own
    ? ` (${formatAmount(account.balance, currency)}) is less than the ${formatAmount(needed, currency)} this ${kind} needs`
    : ` is less than this ${kind} needs`;
  return new ApiError('insufficient_balance', { message: `${whose}${amounts}.` });
}

function validateInput(scope: LedgerScope, input: PostTransactionInput): void {
  checkCurrency(input.currency);
  checkSource(input.source);
  if (input.entries.length < 2) throw new LedgerError('a transaction needs at least two entries');
  let sum = 0n;
  const seen = new Set<string>();
  for (const e of input.entries) {
    if (typeof e.amount !== 'bigint') throw new LedgerError('entry amounts are bigint minor units');
    if (e.amount === 0n) throw new LedgerError('an entry amount is never zero');
    const companyId = holder(scope, e.account);
    if (companyId !== scope.companyId && e.account.kind !== 'wallet') throw new LedgerError("another company's account may only be its wallet");
    if ((e.account.kind === 'customer_wallet') !== Boolean(e.account.holder))
      throw new LedgerError('a customer_wallet account, and only it, names its customer (holder)');
    const key = keyOf(scope, e.account);
    if (seen.has(key)) throw new LedgerError(`account ${e.account.kind} of ${companyId} appears twice in one transaction`);
    seen.add(key);
    sum += e.amount;
  }
  if (sum !== 0n) throw new LedgerError(`the entries of a transaction sum to zero, got ${sum}`);
}

function sameEntries(scope: LedgerScope, existing: PostedTransaction, input: PostTransactionInput): boolean {
  if (existing.currency !== input.currency || existing.entries.length !== input.entries.length) return false;
  const want = new Map(input.entries.map((e) => [keyOf(scope, e.account), e.amount]));
  return existing.entries.every((e) => want.get(refKey(e.account.companyId, e.account.kind, e.account.holder)) === e.amount);
}

/** The posted transaction as callers see it, from what was just written. */
function postedResult(
  scope: LedgerScope,
  input: PostTransactionInput,
  txId: string,
  now: Date,
  entries: { id: string; account_id: string; amount: bigint | string }[],
  byAccount: Map<string, { companyId: string; kind: AccountKind; holder: string }>,
): PostedTransaction {
  return {
    id: txId,
    company_id: scope.companyId,
    environment: scope.environment,
    kind: input.kind,
    currency: input.currency,
    source: { ...input.source },
    created_at: now,
    entries: entries.map((e) => {
      const a = byAccount.get(e.account_id)!;
      return { id: e.id, account_id: e.account_id, account: { companyId: a.companyId, kind: a.kind, holder: a.holder }, amount: BigInt(e.amount) };
    }),
    created: true,
  };
}

/**
 * Writes the transaction row (the (kind, source) unique index makes a concurrent duplicate wait
 * for the first and then find it) and its entries in one statement. Null: this (kind, source) was
 * posted before; the caller answers with that one.
 */
async function insertTransaction(
  trx: Transaction<DB>,
  scope: LedgerScope,
  input: PostTransactionInput,
  moves: { accountId: string; amount: bigint }[],
  now: Date,
) {
  const txId = prefixedId('ltx', now.getTime());
  const inserted = await trx
    .insertInto('ledger_transactions')
    .values({
      company_id: scope.companyId,
      environment: scope.environment,
      id: txId,
      kind: input.kind,
      currency: input.currency,
      source_type: input.source.type,
      source_id: input.source.id,
      created_at: now,
    })
    .onConflict((oc) => oc.columns(['company_id', 'environment', 'kind', 'source_type', 'source_id']).doNothing())
    .returning('id')
    .executeTakeFirst();
  if (!inserted) return null;
  // All entries in one statement: the database checks that they sum to zero (migrations/0007_ledger.sql).
  const entries = await trx
    .insertInto('ledger_entries')
    .values(
      moves.map((m) => ({
        company_id: scope.companyId,
        environment: scope.environment,
        id: prefixedId('len', now.getTime()),
        transaction_id: txId,
        account_id: m.accountId,
        amount: m.amount,
        currency: input.currency,
        created_at: now,
      })),
    )
    .returning(['id', 'account_id', 'amount'])
    .execute();
  return { txId, entries };
}

/** The transaction already posted for this (kind, source), checked to carry the same entries; null when none. */
async function alreadyPosted(trx: Transaction<DB>, scope: LedgerScope, input: PostTransactionInput): Promise<PostedTransaction | null> {
  const existing = await loadTransaction(trx, scope, { kind: input.kind, source: input.source });
  if (existing && !sameEntries(scope, existing, input))
    throw new LedgerError(`${input.kind} ${input.source.type}/${input.source.id} was already posted with other entries (${existing.id})`);
  return existing;
}

/**
 * Gets or creates the accounts without locking them: ids only. The account rows are the hot rows
 * of the ledger (every collection of a company touches the same two), so they are locked as late
 * as possible, by the balance update itself (applyBalances).
 */
async function accountIds(
  trx: Transaction<DB>,
  scope: LedgerScope,
  currency: string,
  refs: AccountRef[],
): Promise<Map<string, { id: string; companyId: string; kind: AccountKind; holder: string }>> {
  const keys = refs.map((r) => ({ companyId: holder(scope, r), kind: r.kind, holder: r.holder ?? '' }));
  const now = scope.deps.clock.now();
  const find = () =>
    trx
      .selectFrom('ledger_accounts')
      .select(['id', 'company_id', 'kind', 'holder'])
      .where('environment', '=', scope.environment)
      .where('currency', '=', currency)
      .where((eb) => eb.or(keys.map((k) => eb.and([eb('company_id', '=', k.companyId), eb('kind', '=', k.kind), eb('holder', '=', k.holder)]))))
      .execute();
  let rows = await find();
  if (rows.length < keys.length) {
    const sorted = [...keys].sort((a, b) => (refKey(a.companyId, a.kind, a.holder) < refKey(b.companyId, b.kind, b.holder) ? -1 : 1));
    await trx
      .insertInto('ledger_accounts')
      .values(
        sorted.map((k) => ({
          company_id: k.companyId,
          environment: scope.environment,
          id: prefixedId('lac', now.getTime()),
          kind: k.kind,
          holder: k.holder,
          currency,
          balance: 0n,
          created_at: now,
          updated_at: now,
        })),
      )
      .onConflict((oc) => oc.columns(['company_id', 'environment', 'kind', 'currency', 'holder']).doNothing())
      .execute();
    rows = await find();
    if (rows.length !== keys.length) throw new Error('ledger accounts vanished while being created');
  }
  return new Map(rows.map((r) => [refKey(r.company_id, r.kind, r.holder), { id: r.id, companyId: r.company_id, kind: r.kind, holder: r.holder }]));
}

/**
 * The cached balances, in one statement that locks the accounts in id order (no deadlock between
 * two postings; NO KEY UPDATE, the lock an UPDATE takes anyway, so the KEY SHARE locks that the
 * entries' foreign keys took on these rows, ours and other postings', never block it) and moves only those that stay within the non-negative rule. An account left out
 * is insufficient_balance; the caller's transaction then rolls back with everything it wrote.
 */
async function applyBalances(
  trx: Transaction<DB>,
  scope: LedgerScope,
  input: PostTransactionInput,
  moves: { account: { id: string; companyId: string; kind: AccountKind; holder: string }; amount: bigint }[],
  now: Date,
): Promise<void> {
  const ids = moves.map((m) => m.account.id);
  const values = sql.join(moves.map((m) => sql`(${m.account.id}::text, ${m.amount.toString()}::bigint)`));
  const updated = await sql<{ id: string }>`
    WITH locked AS (SELECT id FROM ledger_accounts WHERE id = ANY(${ids}::text[]) ORDER BY id FOR NO KEY UPDATE)
    UPDATE ledger_accounts AS a SET balance = a.balance + v.delta, updated_at = ${now}
      FROM (VALUES ${values}) AS v(id, delta)
     WHERE a.id = v.id AND a.id IN (SELECT id FROM locked) AND (a.kind = 'external_clearing' OR a.balance + v.delta >= 0)
     RETURNING a.id`.execute(trx);
  if (updated.rows.length === moves.length) return;
  const done = new Set(updated.rows.map((r) => r.id));
  const short = moves.find((m) => !done.has(m.account.id))!;
  const row = await trx.selectFrom('ledger_accounts').select('balance').where('id', '=', short.account.id).executeTakeFirstOrThrow();
  throw insufficient(scope, { ...short.account, balance: BigInt(row.balance) }, -short.amount, input.currency, input.kind);
}

/** balance.updated: the companies whose figures (available, pending, held) this posting changed get a notice. */
function noteFigures(trx: Transaction<DB>, scope: LedgerScope, currency: string, moves: { account: { companyId: string; kind: AccountKind } }[]) {
  return noteBalanceChange(
    trx,
    scope,
    currency,
    moves.filter((m) => FIGURE_KINDS.has(m.account.kind)).map((m) => m.account.companyId),
  );
}

/**
 * postTransaction's work. Without `locked`: accounts by id (no lock), the transaction and its
 * entries, then the balances last (the only locks, held from there to the caller's commit).
 * With `locked` (a helper posting several transactions locked every account first, in one order):
 * the balances are checked against the locked rows.
 */
async function post(trx: Transaction<DB>, scope: LedgerScope, input: PostTransactionInput, locked?: Locked): Promise<PostedTransaction> {
  validateInput(scope, input);
  const now = scope.deps.clock.now();
  if (!locked) {
    const accounts = await accountIds(
      trx,
      scope,
      input.currency,
      input.entries.map((e) => e.account),
    );
    const moves = input.entries.map((e) => ({ account: accounts.get(keyOf(scope, e.account))!, amount: e.amount }));
    const written = await insertTransaction(
      trx,
      scope,
      input,
      moves.map((m) => ({ accountId: m.account.id, amount: m.amount })),
      now,
    );
    if (!written) return (await alreadyPosted(trx, scope, input))!;
    await applyBalances(trx, scope, input, moves, now);
    await noteFigures(trx, scope, input.currency, moves);
    return postedResult(scope, input, written.txId, now, written.entries, new Map(moves.map((m) => [m.account.id, m.account])));
  }
  // Locks first: a second poster of the same event waits here and then finds the first's
  // transaction below, so a duplicate never touches a balance.
  const accounts = await lockAccounts(
    trx,
    scope,
    input.currency,
    input.entries.map((e) => e.account),
    locked,
  );
  const existing = await alreadyPosted(trx, scope, input);
  if (existing) return existing;
  const moves = input.entries.map((e) => ({ account: accounts.get(keyOf(scope, e.account))!, amount: e.amount }));
  for (const m of moves) {
    if (NON_NEGATIVE.includes(m.account.kind) && m.account.balance + m.amount < 0n)
      throw insufficient(scope, m.account, -m.amount, input.currency, input.kind);
  }
  const written = await insertTransaction(
    trx,
    scope,
    input,
    moves.map((m) => ({ accountId: m.account.id, amount: m.amount })),
    now,
  );
  // Posted meanwhile by a transaction that locked other accounts: the same answer as above.
  if (!written) return (await alreadyPosted(trx, scope, input))!;
  const values = sql.join(moves.map((m) => sql`(${m.account.id}::text, ${m.amount.toString()}::bigint)`));
  await sql`UPDATE ledger_accounts AS a SET balance = a.balance + v.delta, updated_at = ${now} FROM (VALUES ${values}) AS v(id, delta) WHERE a.id = v.id`.execute(
    trx,
  );
  for (const m of moves) m.account.balance += m.amount;
  await noteFigures(trx, scope, input.currency, moves);
  return postedResult(scope, input, written.txId, now, written.entries, new Map(moves.map((m) => [m.account.id, m.account])));
}

/**
 * Posts one balanced transaction inside the caller's database transaction: checks that the
 * entries sum to zero (bigint minor units, none zero, each account once), gets or creates the
 * accounts, locks them in one order, refuses to take a company's available, pending or wallet
 * balance below zero (ApiError `insufficient_balance`, 422 10010), writes the transaction, its
 * entries and the cached balances. The same (kind, source) posts once: posting it again returns
 * the first transaction with `created: false` (a LedgerError when the entries differ — a bug).
 */
export async function postTransaction(trx: Transaction<DB>, scope: LedgerScope, input: PostTransactionInput): Promise<PostedTransaction> {
  return post(trx, scope, input);
}

function checkAmount(amount: bigint, what = 'amount'): void {
  if (typeof amount !== 'bigint' || amount <= 0n) throw new LedgerError(`${what} must be a positive bigint of minor units`);
}

function checkSplits(scope: LedgerScope, amount: bigint, splits: SplitShare[]): SplitShare[] {
  const seen = new Set<string>();
  let total = 0n;
  for (const s of splits) {
    if (typeof s.amount !== 'bigint' || s.amount < 0n) throw new LedgerError('a split amount is a non-negative bigint of minor units');
    if (!s.walletCompanyId || s.walletCompanyId === scope.companyId) throw new LedgerError("a split goes to another company's wallet");
    if (seen.has(s.walletCompanyId)) throw new LedgerError('one split per wallet');
    seen.add(s.walletCompanyId);
    total += s.amount;
  }
  if (total > amount) throw new LedgerError(`the splits (${total}) exceed the amount (${amount})`);
  return splits.filter((s) => s.amount > 0n);
}

/** Moves the shares from the company's available balance to the wallets (one `split` transaction). */
async function postSplits(
  trx: Transaction<DB>,
  scope: LedgerScope,
  currency: string,
  source: LedgerSource,
  shares: SplitShare[],
  locked: Locked | undefined,
): Promise<PostedTransaction | null> {
  if (shares.length === 0) return null;
  const total = shares.reduce((sum, s) => sum + s.amount, 0n);
  return post(
    trx,
    scope,
    {
      kind: 'split',
      currency,
      source,
      entries: [
        { account: { kind: 'company_available' }, amount: -total },
        ...shares.map((s) => ({ account: { kind: 'wallet' as const, companyId: s.walletCompanyId }, amount: s.amount })),
      ],
    },
    locked,
  );
}

export interface CollectionInput {
  currency: string;
  /** Minor units received from the payer, > 0. */
  amount: bigint;
  source: LedgerSource;
  /** true: the money is collected but not settled yet (company_pending); settlePending makes it available. */
  pending?: boolean;
  /** Shares of `amount` for other companies' wallets (only when the money is available at once). */
  splits?: SplitShare[];
}

/**
 * A collection: the payer's money enters (external_clearing → company_available, or
 * company_pending with `pending`), then, when there are splits, a `split` transaction with the same
 * source moves each share to the receiving company's wallet. Splits of pending money are passed to
 * settlePending instead (a LedgerError here).
 */
export async function recordCollection(
  trx: Transaction<DB>,
  scope: LedgerScope,
  input: CollectionInput,
): Promise<{ collection: PostedTransaction; split: PostedTransaction | null }> {
  checkAmount(input.amount);
  checkCurrency(input.currency);
  const shares = checkSplits(scope, input.amount, input.splits ?? []);
  if (input.pending && shares.length) throw new LedgerError('splits of pending money are made when it settles: pass them to settlePending');
  const target: AccountKind = input.pending ? 'company_pending' : 'company_available';
  // With splits, every account of both transactions is locked together first, in the one order;
  // a plain collection locks its two accounts last, by the balance update (the hot path).
  const locked = shares.length
    ? await lockAccounts(trx, scope, input.currency, [
        { kind: 'external_clearing' },
        { kind: target },
        ...shares.map((s) => ({ kind: 'wallet' as const, companyId: s.walletCompanyId })),
      ])
    : undefined;
  const collection = await post(
    trx,
    scope,
    {
      kind: 'collection',
      currency: input.currency,
      source: input.source,
      entries: [
        { account: { kind: 'external_clearing' }, amount: -input.amount },
        { account: { kind: target }, amount: input.amount },
      ],
    },
    locked,
  );
  const split = await postSplits(trx, scope, input.currency, input.source, shares, locked);
  return { collection, split };
}

/**
 * Pending money becomes available (company_pending → company_available, a `settlement`), then the
 * splits, as in recordCollection. Settling more than is pending is `insufficient_balance`.
 */
export async function settlePending(
  trx: Transaction<DB>,
  scope: LedgerScope,
  input: { currency: string; amount: bigint; source: LedgerSource; splits?: SplitShare[] },
): Promise<{ settlement: PostedTransaction; split: PostedTransaction | null }> {
  checkAmount(input.amount);
  checkCurrency(input.currency);
  const shares = checkSplits(scope, input.amount, input.splits ?? []);
  const locked = await lockAccounts(trx, scope, input.currency, [
    { kind: 'company_pending' },
    { kind: 'company_available' },
    ...shares.map((s) => ({ kind: 'wallet' as const, companyId: s.walletCompanyId })),
  ]);
  const settlement = await post(
    trx,
    scope,
    {
      kind: 'settlement',
      currency: input.currency,
      source: input.source,
      entries: [
        { account: { kind: 'company_pending' }, amount: -input.amount },
        { account: { kind: 'company_available' }, amount: input.amount },
      ],
    },
    locked,
  );
  const split = await postSplits(trx, scope, input.currency, input.source, shares, locked);
  return { settlement, split };
}

/**
 * A refund to the payer: company_available (or company_pending with `pending`) → external_clearing.
 * The company bears it: splits already made are not taken back (reverse the `split` transaction
 * for that). Refuses to go below zero: ApiError `insufficient_balance` (422, 10010).
 */
export async function recordRefund(
  trx: Transaction<DB>,
  scope: LedgerScope,
  input: { currency: string; amount: bigint; source: LedgerSource; pending?: boolean },
): Promise<PostedTransaction> {
  checkAmount(input.amount);
  return post(trx, scope, {
    kind: 'refund',
    currency: input.currency,
    source: input.source,
    entries: [
      { account: { kind: input.pending ? 'company_pending' : 'company_available' }, amount: -input.amount },
      { account: { kind: 'external_clearing' }, amount: input.amount },
    ],
  });
}

/**
 * Undoes one transaction of the company with the opposite entries (a `reversal` whose source is
 * the original, so a transaction is reversed at most once; again returns the same reversal).
 * The original is named by id or by its (kind, source). A reversal is never reversed. Subject to
 * the same non-negative rule (`insufficient_balance`).
 */
export async function reverse(
  trx: Transaction<DB>,
  scope: LedgerScope,
  target: { transactionId: string } | { kind: LedgerTransactionKind; source: LedgerSource },
): Promise<PostedTransaction> {
  const original = await loadTransaction(trx, scope, 'transactionId' in target ? { id: target.transactionId } : target);
  if (!original) throw new LedgerError('no such ledger transaction in this company and environment');
  if (original.kind === 'reversal') throw new LedgerError('a reversal is not reversed; post a new transaction');
  return post(trx, scope, {
    kind: 'reversal',
    currency: original.currency,
    source: { type: 'ledger_transaction', id: original.id },
    entries: original.entries.map((e) => ({
      account: { kind: e.account.kind, companyId: e.account.companyId, ...(e.account.holder ? { holder: e.account.holder } : {}) },
      amount: -e.amount,
    })),
  });
}

/** Where a cash-out's money is held from and released back to: the company's balance or a customer's wallet. */
export type HoldSource = { kind: 'company_available' } | { kind: 'customer_wallet'; holder: string };

/**
 * Money out, in three steps (docs/cashouts.md): `hold` sets the amount aside (from → company_held;
 * short is insufficient_balance, nothing posted), then either `payout` (company_held →
 * external_clearing: it left) or `release` (company_held → back to `from`). A payout that comes
 * back (a bank return) is reversed straight to `from` (returnPayout). Each posts once per source.
 */
export async function holdPayout(
  trx: Transaction<DB>,
  scope: LedgerScope,
  input: { currency: string; amount: bigint; source: LedgerSource; from: HoldSource },
): Promise<PostedTransaction> {
  checkAmount(input.amount);
  return post(trx, scope, {
    kind: 'hold',
    currency: input.currency,
    source: input.source,
    entries: [
      { account: input.from, amount: -input.amount },
      { account: { kind: 'company_held' }, amount: input.amount },
    ],
  });
}

export async function postPayout(
  trx: Transaction<DB>,
  scope: LedgerScope,
  input: { currency: string; amount: bigint; source: LedgerSource },
): Promise<PostedTransaction> {
  checkAmount(input.amount);
  return post(trx, scope, {
    kind: 'payout',
    currency: input.currency,
    source: input.source,
    entries: [
      { account: { kind: 'company_held' }, amount: -input.amount },
      { account: { kind: 'external_clearing' }, amount: input.amount },
    ],
  });
}

export async function releaseHold(
  trx: Transaction<DB>,
  scope: LedgerScope,
  input: { currency: string; amount: bigint; source: LedgerSource; to: HoldSource },
): Promise<PostedTransaction> {
  checkAmount(input.amount);
  return post(trx, scope, {
    kind: 'release',
    currency: input.currency,
    source: input.source,
    entries: [
      { account: { kind: 'company_held' }, amount: -input.amount },
      { account: input.to, amount: input.amount },
    ],
  });
}

/** A payout the bank sent back: a `reversal` of the payout transaction, crediting `to` (once). */
export async function returnPayout(
  trx: Transaction<DB>,
  scope: LedgerScope,
  input: { currency: string; amount: bigint; source: LedgerSource; to: HoldSource },
): Promise<PostedTransaction> {
  const payout = await loadTransaction(trx, scope, { kind: 'payout', source: input.source });
  if (!payout) throw new LedgerError(`no payout posted for ${input.source.type}/${input.source.id}`);
  return post(trx, scope, {
    kind: 'reversal',
    currency: input.currency,
    source: { type: 'ledger_transaction', id: payout.id },
    entries: [
      { account: { kind: 'external_clearing' }, amount: -input.amount },
      { account: input.to, amount: input.amount },
    ],
  });
}

/** Company balance → a customer's wallet (`wallet_deposit`); short is insufficient_balance. */
export async function depositToCustomerWallet(
  trx: Transaction<DB>,
  scope: LedgerScope,
  input: { currency: string; amount: bigint; source: LedgerSource; customerId: string },
): Promise<PostedTransaction> {
  checkAmount(input.amount);
  return post(trx, scope, {
    kind: 'wallet_deposit',
    currency: input.currency,
    source: input.source,
    entries: [
      { account: { kind: 'company_available' }, amount: -input.amount },
      { account: { kind: 'customer_wallet', holder: input.customerId }, amount: input.amount },
    ],
  });
}

/** A customer's wallet balance in minor units (0 when it never held money). */
export async function customerWalletBalance(db: Executor, scope: Tenant, customerId: string, currency = 'COP'): Promise<bigint> {
  const row = await db
    .selectFrom('ledger_accounts')
    .select('balance')
    .$call(inTenant(scope))
    .where('kind', '=', 'customer_wallet')
    .where('holder', '=', customerId)
    .where('currency', '=', currency)
    .executeTakeFirst();
  return row ? BigInt(row.balance) : 0n;
}

/** The company's own available balance in minor units (what a cash-out of the balance can hold; 0 when none). */
export async function companyAvailableBalance(db: Executor, scope: Tenant, currency = 'COP'): Promise<bigint> {
  const row = await db
    .selectFrom('ledger_accounts')
    .select('balance')
    .$call(inTenant(scope))
    .where('currency', '=', currency)
    .where('kind', '=', 'company_available')
    .executeTakeFirst();
  return row ? BigInt(row.balance) : 0n;
}

/** A transaction of the company by id or by (kind, source), with its entries; null when absent. */
export async function findTransaction(
  db: Executor,
  scope: { companyId: string; environment: Environment },
  where: { id: string } | { kind: LedgerTransactionKind; source: LedgerSource },
): Promise<PostedTransaction | null> {
  return loadTransaction(db, scope, where);
}

export interface Balance {
  currency: string;
  /** company_available + wallet, minor units. */
  available: bigint;
  /** company_pending, minor units. */
  pending: bigint;
  /** company_held: cash-outs on their way out, minor units. */
  held: bigint;
}

/** The company's balances per currency (COP always listed), from the accounts' balances. */
export async function getBalances(db: Executor, scope: { companyId: string; environment: Environment }): Promise<Balance[]> {
  const rows = await db
    .selectFrom('ledger_accounts')
    .select(['currency', 'kind', 'balance'])
    .$call(inTenant(scope))
    .where('kind', 'in', ['company_available', 'company_pending', 'company_held', 'wallet'])
    .execute();
  const out = new Map<string, Balance>([['COP', { currency: 'COP', available: 0n, pending: 0n, held: 0n }]]);
  for (const r of rows) {
    let b = out.get(r.currency);
    if (!b) out.set(r.currency, (b = { currency: r.currency, available: 0n, pending: 0n, held: 0n }));
    if (r.kind === 'company_pending') b.pending += BigInt(r.balance);
    else if (r.kind === 'company_held') b.held += BigInt(r.balance);
    else b.available += BigInt(r.balance);
  }
  return [...out.values()].sort((a, b) => (a.currency < b.currency ? -1 : a.currency > b.currency ? 1 : 0));
}

export interface LedgerAudit {
  /** Transactions whose entries do not sum to zero, or that have fewer than two entries. */
  unbalanced: string[];
  /** Accounts whose cached balance differs from the sum of their entries. */
  mismatched: { account_id: string; balance: bigint; entries: bigint }[];
  /** Accounts of a non-negative kind below zero. */
  negative: string[];
}

/**
 * Checks the ledger's invariants (for tests and operators): every transaction balanced, every
 * cached balance equal to the sum of its entries, no non-negative account below zero. Limited to
 * the given companies' books when `companyIds` is set.
 */
export async function auditLedger(db: Executor, companyIds?: string[]): Promise<LedgerAudit> {
  if (companyIds && companyIds.length === 0) return { unbalanced: [], mismatched: [], negative: [] };
  const ids = companyIds ? sql`= ANY(${companyIds}::text[])` : sql`IS NOT NULL`;
  const unbalanced = await sql<{ id: string }>`
    SELECT t.id FROM ledger_transactions t
    LEFT JOIN ledger_entries e ON e.company_id = t.company_id AND e.environment = t.environment AND e.transaction_id = t.id
    WHERE t.company_id ${ids}
    GROUP BY t.id HAVING COALESCE(SUM(e.amount), 0) <> 0 OR COUNT(e.id) < 2`.execute(db);
  const mismatched = await sql<{ account_id: string; balance: bigint; entries: bigint }>`
    SELECT a.id AS account_id, a.balance, COALESCE(SUM(e.amount), 0)::bigint AS entries FROM ledger_accounts a
    LEFT JOIN ledger_entries e ON e.account_id = a.id
    WHERE a.company_id ${ids}
    GROUP BY a.id, a.balance HAVING a.balance <> COALESCE(SUM(e.amount), 0)`.execute(db);
  const negative = await db
    .selectFrom('ledger_accounts')
    .select('id')
    .where('kind', 'in', [...NON_NEGATIVE])
    .where('balance', '<', 0n)
    .$if(!!companyIds, (q) => q.where('company_id', 'in', companyIds!))
    .execute();
  return {
    unbalanced: unbalanced.rows.map((r) => r.id),
    mismatched: mismatched.rows.map((r) => ({ account_id: r.account_id, balance: BigInt(r.balance), entries: BigInt(r.entries) })),
    negative: negative.map((r) => r.id),
  };
}
