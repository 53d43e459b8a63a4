import { sql, type Transaction } from 'kysely';
import type { Clock } from '../../platform/clock.ts';
import type { Executor } from '../../platform/db/database.ts';
import type { DB, Environment } from '../../platform/db/schema.ts';
import { ApiError } from '../../platform/errors/api-error.ts';
import { prefixedId } from '../../platform/ids.ts';
import { NON_NEGATIVE, type AccountKind, type LedgerTransactionKind } from './tables.ts';
import './tables.ts';
import { FIGURE_KINDS, noteBalanceChanges, type BalanceNoticeScope, type NoticeKey } from './balance-notices.ts';
import { ROLL_UP_DELAY_MS, ROLL_UP_JOB } from './roll-up.ts';
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
 *
 * Lock order of a posting transaction (docs/ledger.md "Lock order"): account rows first, balance
 * notice rows last — taken once per ledger call, after its last posting. A caller that posts more
 * than once in one database transaction does it inside one postTogether.
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

/** An account as a posting knows it: ids only, never its balance (which it does not lock). */
interface AccountRow {
  id: string;
  companyId: string;
  kind: AccountKind;
  holder: string;
}

/**
 * One entry of a posting. `unrolled`: it cannot take its account below zero (a credit of a
 * non-negative account, any entry of external_clearing, or a debit covered by a credit of the same
 * call), so it is written to `ledger_unrolled_entries` and its account row is neither locked nor
 * updated (docs/ledger.md "Hot accounts"). The others are debits that must keep the floor: they
 * lock their account, fold its unrolled entries and are checked against the exact balance.
 */
interface Move {
  account: AccountRow;
  amount: bigint;
  unrolled: boolean;
}

/**
 * Debits a posting may leave unrolled, per account (refKey): what a credit to that account,
 * written unrolled by the same call in the same database transaction, already brought in (a
 * collection's credit covers its split). The rows of one database transaction commit together,
 * so the unrolled rows of an account never sum below zero in any snapshot.
 */
type Cover = Map<string, bigint>;

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

function insufficient(
  scope: LedgerScope,
  account: AccountRow,
  balance: bigint,
  needed: bigint,
  currency: string,
  kind: LedgerTransactionKind,
): ApiError {
  const own = account.companyId === scope.companyId;
  const whose = own ? `The ${currency} ${KIND_LABEL[account.kind]}` : `The receiving company's ${currency} ${KIND_LABEL[account.kind]}`;
  const amounts = own
    ? ` (${formatAmount(balance, currency)}) is less than the ${formatAmount(needed, currency)} this ${kind} needs`
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
  byAccount: Map<string, AccountRow>,
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
 * Writes the transaction row, all its entries and the unrolled ones in ONE statement. The
 * transaction row goes first (`ON CONFLICT DO NOTHING` on the (kind, source) unique index: a
 * concurrent duplicate waits for the first poster and then inserts nothing); the entries in one
 * INSERT, so the database checks that they sum to zero (migrations/0007_ledger.sql). Null: this
 * (kind, source) was posted before; the caller answers with that one.
 */
async function insertTransaction(
  trx: Transaction<DB>,
  scope: LedgerScope,
  input: PostTransactionInput,
  moves: Move[],
  now: Date,
): Promise<{ txId: string; entries: { id: string; account_id: string; amount: bigint }[] } | null> {
  const txId = prefixedId('ltx', now.getTime());
  const rows = moves.map((m) => ({ ...m, entryId: prefixedId('len', now.getTime()) }));
  const entryValues = sql.join(rows.map((r) => sql`(${r.entryId}::text, ${r.account.id}::text, ${r.amount.toString()}::bigint)`));
  const unrolled = rows.filter((r) => r.unrolled);
  const unrolledInsert = unrolled.length
    ? sql`, unrolled AS (
        INSERT INTO ledger_unrolled_entries (company_id, environment, account_id, entry_id, amount)
        SELECT v.company_id, ${scope.environment}::text, v.account_id, v.entry_id, v.amount
          FROM (VALUES ${sql.join(unrolled.map((r) => sql`(${r.account.companyId}::text, ${r.account.id}::text, ${r.entryId}::text, ${r.amount.toString()}::bigint)`))})
               AS v(company_id, account_id, entry_id, amount)
         WHERE EXISTS (SELECT 1 FROM tx)
      )`
    : sql``;
  const { rows: entries } = await sql<{ id: string; account_id: string; amount: bigint }>`
    WITH tx AS (
      INSERT INTO ledger_transactions (company_id, environment, id, kind, currency, source_type, source_id, created_at)
      VALUES (${scope.companyId}, ${scope.environment}, ${txId}, ${input.kind}, ${input.currency}, ${input.source.type}, ${input.source.id}, ${now})
      ON CONFLICT (company_id, environment, kind, source_type, source_id) DO NOTHING
      RETURNING id
    ), entries AS (
      INSERT INTO ledger_entries (company_id, environment, id, transaction_id, account_id, amount, currency, created_at)
      SELECT ${scope.companyId}::text, ${scope.environment}::text, v.id, tx.id, v.account_id, v.amount, ${input.currency}::text, ${now}::timestamptz
        FROM tx CROSS JOIN (VALUES ${entryValues}) AS v(id, account_id, amount)
      RETURNING id, account_id, amount
    )${unrolledInsert}
    SELECT id, account_id, amount FROM entries`.execute(trx);
  return entries.length ? { txId, entries } : null;
}

/** The transaction already posted for this (kind, source), checked to carry the same entries; null when none. */
async function alreadyPosted(trx: Transaction<DB>, scope: LedgerScope, input: PostTransactionInput): Promise<PostedTransaction | null> {
  const existing = await loadTransaction(trx, scope, { kind: input.kind, source: input.source });
  if (existing && !sameEntries(scope, existing, input))
    throw new LedgerError(`${input.kind} ${input.source.type}/${input.source.id} was already posted with other entries (${existing.id})`);
  return existing;
}

/**
 * Gets or creates the accounts without locking them: ids only. Most postings never lock an
 * account row at all (credits are unrolled); a debit locks its accounts as late as possible
 * (applyDebits).
 */
async function accountIds(trx: Transaction<DB>, scope: LedgerScope, currency: string, refs: AccountRef[]): Promise<Map<string, AccountRow>> {
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
 * The debits that must keep the floor, after the entries are written: lock their accounts in id
 * order (one global order, so two postings never deadlock; NO KEY UPDATE, the lock an UPDATE takes
 * anyway, so the KEY SHARE locks the entries' foreign keys take never block it), then one
 * statement — with a snapshot taken after the locks — folds each account's unrolled entries into
 * its cached balance and applies the debits only if every account stays at or above zero. A
 * refusal is insufficient_balance, measured on the exact balance; the folds it made are kept
 * (they change no balance) and the caller's transaction rolls back with the entries.
 */
async function applyDebits(trx: Transaction<DB>, scope: LedgerScope, input: PostTransactionInput, debits: Move[], now: Date): Promise<void> {
  if (tookNotices.has(trx))
    throw new LedgerError(
      `${input.kind} ${input.source.type}/${input.source.id} locks accounts after an earlier ledger call of this database transaction took balance notices; make the calls in one postTogether`,
    );
  const ids = debits.map((m) => m.account.id);
  await sql`SELECT id FROM ledger_accounts WHERE id = ANY(${ids}::text[]) ORDER BY id FOR NO KEY UPDATE`.execute(trx);
  const keys = sql.join(debits.map((m) => sql`(${m.account.companyId}::text, ${m.account.id}::text)`));
  const deltas = sql.join(debits.map((m) => sql`(${m.account.id}::text, ${m.amount.toString()}::bigint)`));
  const { rows } = await sql<{ id: string; folded_balance: bigint; ok: boolean }>`
    WITH folded AS (
      DELETE FROM ledger_unrolled_entries u
       USING (VALUES ${keys}) AS k(company_id, account_id)
       WHERE u.company_id = k.company_id AND u.environment = ${scope.environment} AND u.account_id = k.account_id
      RETURNING u.account_id, u.amount
    ), sums AS (
      SELECT account_id, sum(amount)::bigint AS total FROM folded GROUP BY account_id
    ), moves AS (
      SELECT a.id, (a.balance + COALESCE(s.total, 0))::bigint AS folded_balance, v.delta
        FROM (VALUES ${deltas}) AS v(id, delta)
        JOIN ledger_accounts a ON a.id = v.id
        LEFT JOIN sums s ON s.account_id = v.id
    ), verdict AS (
      SELECT bool_and(folded_balance + delta >= 0) AS ok FROM moves
    )
    UPDATE ledger_accounts AS a
       SET balance = m.folded_balance + CASE WHEN verdict.ok THEN m.delta ELSE 0 END, updated_at = ${now}::timestamptz
      FROM moves m CROSS JOIN verdict
     WHERE a.id = m.id
    RETURNING a.id, m.folded_balance, verdict.ok`.execute(trx);
  if (rows.length !== debits.length) throw new Error('ledger accounts vanished while being debited');
  if (rows.every((r) => r.ok)) return;
  const balances = new Map(rows.map((r) => [r.id, BigInt(r.folded_balance)]));
  const short = debits.find((m) => balances.get(m.account.id)! + m.amount < 0n)!;
  throw insufficient(scope, short.account, balances.get(short.account.id)!, -short.amount, input.currency, input.kind);
}

/**
 * What the postings of one ledger call (or of one postTogether) leave for its end: the balance
 * notices of the companies whose figures (available, pending, held) they changed — the notice's
 * job also rolls their accounts up — and a roll-up job for each company left with unrolled
 * entries but no changed figure (a customer wallet and the clearing account only).
 */
class Notices {
  readonly figures = new Map<string, NoticeKey>();
  readonly unrolled = new Map<string, NoticeKey>();

  add(environment: Environment, currency: string, moves: Move[]): void {
    for (const m of moves) {
      const notice: NoticeKey = { companyId: m.account.companyId, environment, currency };
      const k = `${notice.companyId}\u0000${environment}\u0000${currency}`;
      if (FIGURE_KINDS.has(m.account.kind)) this.figures.set(k, notice);
      if (m.unrolled) this.unrolled.set(k, notice);
    }
  }
}

/**
 * Database transactions that took balance notices: none of them may lock an account afterwards
 * (the lock order, docs/ledger.md "Lock order": account rows first, notice rows last).
 */
const tookNotices = new WeakSet<Transaction<DB>>();
/** Database transactions inside postTogether: their calls leave the notices to its end. */
const together = new WeakMap<Transaction<DB>, Notices>();

/**
 * The end of a ledger call: its notices, in one order (balance-notices.ts), after every account
 * lock of the call; then the roll-up jobs (no lock).
 */
async function takeNotices(trx: Transaction<DB>, scope: LedgerScope, notices: Notices): Promise<void> {
  if (notices.figures.size) {
    await noteBalanceChanges(trx, scope.deps, notices.figures.values());
    tookNotices.add(trx);
  }
  const due = new Date(scope.deps.clock.now().getTime() + ROLL_UP_DELAY_MS);
  for (const [k, n] of notices.unrolled) {
    if (notices.figures.has(k)) continue;
    await scope.deps.jobs.enqueue(trx, ROLL_UP_JOB, { company_id: n.companyId, environment: n.environment, currency: n.currency }, due);
  }
}

/** Runs one public ledger call: its postings, then its notices — or, inside postTogether, the postings only. */
async function ledgerCall<T>(trx: Transaction<DB>, scope: LedgerScope, fn: (notices: Notices) => Promise<T>): Promise<T> {
  const outer = together.get(trx);
  if (outer) return fn(outer);
  const notices = new Notices();
  const result = await fn(notices);
  await takeNotices(trx, scope, notices);
  return result;
}

/**
 * Several ledger calls in one database transaction, as one call: every posting of `fn` (any of
 * this service's writers, called with the same `trx`) is made first, and the balance notices of
 * all of them are taken once, at the end — so the transaction locks every account before any
 * notice (docs/ledger.md "Lock order"). A caller that posts more than once in a database
 * transaction must do it inside one postTogether: a posting that locks an account after an
 * earlier call of the same transaction took notices is refused (LedgerError), since that order
 * can deadlock with another posting of the same company. Nested: the outermost one takes the
 * notices. When `fn` throws, no notice is taken (the caller's transaction rolls back).
 */
export async function postTogether<T>(trx: Transaction<DB>, scope: LedgerScope, fn: () => Promise<T>): Promise<T> {
  if (together.has(trx)) return fn();
  const notices = new Notices();
  together.set(trx, notices);
  let result: T;
  try {
    result = await fn();
  } finally {
    together.delete(trx);
  }
  await takeNotices(trx, scope, notices);
  return result;
}

/**
 * postTransaction's work: accounts by id (no lock); the transaction, its entries and the unrolled
 * ones in one statement; then, only when the posting has debits that must keep the floor, their
 * accounts are locked, folded and checked (applyDebits) — the only account locks, held to the
 * caller's commit. The notices it calls for go to `notices`, taken at the end of the call
 * (ledgerCall). `cover`: debits this call may leave unrolled (see Cover); what they use is taken
 * off it.
 */
async function post(
  trx: Transaction<DB>,
  scope: LedgerScope,
  input: PostTransactionInput,
  notices: Notices,
  cover?: Cover,
): Promise<PostedTransaction> {
  validateInput(scope, input);
  const now = scope.deps.clock.now();
  const accounts = await accountIds(
    trx,
    scope,
    input.currency,
    input.entries.map((e) => e.account),
  );
  const used: [string, bigint][] = [];
  const moves: Move[] = input.entries.map((e) => {
    const key = keyOf(scope, e.account);
    const covered = e.amount < 0n && (cover?.get(key) ?? 0n) >= -e.amount;
    if (covered) used.push([key, -e.amount]);
    // external_clearing has no floor; a credit cannot break one; a covered debit is paid by a credit of this call.
    const unrolled = !NON_NEGATIVE.includes(e.account.kind) || e.amount > 0n || covered;
    return { account: accounts.get(key)!, amount: e.amount, unrolled };
  });
  const written = await insertTransaction(trx, scope, input, moves, now);
  if (!written) return (await alreadyPosted(trx, scope, input))!;
  for (const [key, amount] of used) cover!.set(key, cover!.get(key)! - amount);
  const debits = moves.filter((m) => !m.unrolled);
  if (debits.length) await applyDebits(trx, scope, input, debits, now);
  notices.add(scope.environment, input.currency, moves);
  return postedResult(scope, input, written.txId, now, written.entries, new Map(moves.map((m) => [m.account.id, m.account])));
}

/**
 * Posts one balanced transaction inside the caller's database transaction: checks that the
 * entries sum to zero (bigint minor units, none zero, each account once), gets or creates the
 * accounts, refuses to take a company's available, pending, held or wallet balance below zero
 * (ApiError `insufficient_balance`, 422 10010; the caller's transaction must then roll back, as
 * every caller's does by letting the error through), writes the transaction and its entries and
 * moves the balances: credits unrolled (no lock), floor-keeping debits under their accounts' row
 * locks. The same (kind, source) posts once: posting it again returns the first transaction with
 * `created: false` (a LedgerError when the entries differ — a bug).
 */
export async function postTransaction(trx: Transaction<DB>, scope: LedgerScope, input: PostTransactionInput): Promise<PostedTransaction> {
  return ledgerCall(trx, scope, (notices) => post(trx, scope, input, notices));
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

/**
 * What a posting just credited to the company's available balance, as cover for the split that
 * follows it in the same call (none when the posting was already there: that money may be gone).
 */
function availableCover(scope: LedgerScope, posted: PostedTransaction, amount: bigint): Cover {
  return new Map(posted.created ? [[refKey(scope.companyId, 'company_available'), amount]] : []);
}

/** Moves the shares from the company's available balance to the wallets (one `split` transaction). */
async function postSplits(
  trx: Transaction<DB>,
  scope: LedgerScope,
  currency: string,
  source: LedgerSource,
  shares: SplitShare[],
  notices: Notices,
  cover: Cover,
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
    notices,
    cover,
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
 * settlePending instead (a LedgerError here). Takes no lock on any account: every entry is
 * unrolled, the split's debit covered by the collection's credit.
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
  return ledgerCall(trx, scope, async (notices) => {
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
      notices,
    );
    const split = await postSplits(trx, scope, input.currency, input.source, shares, notices, availableCover(scope, collection, input.amount));
    return { collection, split };
  });
}

/**
 * Pending money becomes available (company_pending → company_available, a `settlement`), then the
 * splits, as in recordCollection. Settling more than is pending is `insufficient_balance`. Locks
 * only the pending account (the debit).
 */
export async function settlePending(
  trx: Transaction<DB>,
  scope: LedgerScope,
  input: { currency: string; amount: bigint; source: LedgerSource; splits?: SplitShare[] },
): Promise<{ settlement: PostedTransaction; split: PostedTransaction | null }> {
  checkAmount(input.amount);
  checkCurrency(input.currency);
  const shares = checkSplits(scope, input.amount, input.splits ?? []);
  return ledgerCall(trx, scope, async (notices) => {
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
      notices,
    );
    const split = await postSplits(trx, scope, input.currency, input.source, shares, notices, availableCover(scope, settlement, input.amount));
    return { settlement, split };
  });
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
  return postTransaction(trx, scope, {
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
  return postTransaction(trx, scope, {
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
  return postTransaction(trx, scope, {
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
  return postTransaction(trx, scope, {
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
  return postTransaction(trx, scope, {
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
  return postTransaction(trx, scope, {
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
  return postTransaction(trx, scope, {
    kind: 'wallet_deposit',
    currency: input.currency,
    source: input.source,
    entries: [
      { account: { kind: 'company_available' }, amount: -input.amount },
      { account: { kind: 'customer_wallet', holder: input.customerId }, amount: input.amount },
    ],
  });
}

/** A customer's wallet balance in minor units (0 when it never held money); exact, unrolled credits included. */
export async function customerWalletBalance(db: Executor, scope: Tenant, customerId: string, currency = 'COP'): Promise<bigint> {
  const row = await db
    .selectFrom('ledger_account_balances')
    .select('balance')
    .$call(inTenant(scope))
    .where('kind', '=', 'customer_wallet')
    .where('holder', '=', customerId)
    .where('currency', '=', currency)
    .executeTakeFirst();
  return row ? BigInt(row.balance) : 0n;
}

/** The company's own available balance in minor units (what a cash-out of the balance can hold; 0 when none); exact. */
export async function companyAvailableBalance(db: Executor, scope: Tenant, currency = 'COP'): Promise<bigint> {
  const row = await db
    .selectFrom('ledger_account_balances')
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

/**
 * The company's balances per currency (COP always listed): exact sums of the entries, read in one
 * statement from `ledger_account_balances` (cached balance + entries not rolled up yet).
 */
export async function getBalances(db: Executor, scope: { companyId: string; environment: Environment }): Promise<Balance[]> {
  const rows = await db
    .selectFrom('ledger_account_balances')
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
  /**
   * Accounts whose balance (cached + unrolled) differs from the sum of their entries, or with an
   * unrolled row that is not one of their entries (`balance`: cached + unrolled).
   */
  mismatched: { account_id: string; balance: bigint; entries: bigint }[];
  /** Accounts of a non-negative kind below zero (the exact balance or its cached part). */
  negative: string[];
}

/**
 * Checks the ledger's invariants (for tests and operators): every transaction balanced, every
 * balance — cached part plus unrolled entries — equal to the sum of its entries and every unrolled
 * row one of the account's entries, no non-negative account below zero. Limited to the given
 * companies' books when `companyIds` is set. One statement per check, each on one snapshot.
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
    SELECT a.id AS account_id, a.balance,
           (SELECT COALESCE(SUM(e.amount), 0) FROM ledger_entries e WHERE e.account_id = a.id)::bigint AS entries
      FROM ledger_account_balances a
     WHERE a.company_id ${ids}
       AND (a.balance <> (SELECT COALESCE(SUM(e.amount), 0) FROM ledger_entries e WHERE e.account_id = a.id)
            OR EXISTS (SELECT 1 FROM ledger_unrolled_entries u
                        WHERE u.company_id = a.company_id AND u.environment = a.environment AND u.account_id = a.id
                          AND NOT EXISTS (SELECT 1 FROM ledger_entries e
                                           WHERE e.id = u.entry_id AND e.account_id = u.account_id AND e.amount = u.amount)))`.execute(db);
  const negative = await db
    .selectFrom('ledger_account_balances')
    .select('id')
    .where('kind', 'in', [...NON_NEGATIVE])
    .where((eb) => eb.or([eb('balance', '<', 0n), eb('rolled_up_balance', '<', 0n)]))
    .$if(!!companyIds, (q) => q.where('company_id', 'in', companyIds!))
    .execute();
  return {
    unbalanced: unbalanced.rows.map((r) => r.id),
    mismatched: mismatched.rows.map((r) => ({ account_id: r.account_id, balance: BigInt(r.balance), entries: BigInt(r.entries) })),
    negative: negative.map((r) => r.id),
  };
}
