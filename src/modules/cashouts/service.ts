import type { Transaction } from 'kysely';
import type { AppDeps, RequestContext, ServiceScope } from '../../platform/context.ts';
import { bogotaDayStart } from '../../platform/clock.ts';
import { inTransaction } from '../../platform/db/database.ts';
import type { DB } from '../../platform/db/schema.ts';
import { ApiError, validationError, type FieldErrors } from '../../platform/errors/api-error.ts';
import { RECOVERED_NO_CONTENT, type RecoverResource } from '../../platform/idempotency/idempotency.ts';
import { isUuid, prefixedId } from '../../platform/ids.ts';
import { paginate, parseListQuery } from '../../platform/lists/lists.ts';
import { formatPesos, parseMinor, toPesos } from '../../platform/money.ts';
import { askRail, requestOrigin, runOutsideCall, settleAlone } from '../../platform/outside-call.ts';
import { emitEvent } from '../../platform/outbox/outbox.ts';
import { inTenant, loadInScope, type Tenant } from '../../platform/scope.ts';
import { applyTransition, insertWithTransition } from '../../platform/state-machine.ts';
import { PROVIDER_FINAL_WITHIN_MS, ProviderNeverFinal, type PayoutBeneficiary, type PayoutOutcome, type PayoutRequest } from '../../rails/index.ts';
import { findAccountView, type AccountView } from '../accounts/queries.ts';
import { offersTurbo } from '../banks/catalogue.ts';
import {
  companyAvailableBalance,
  customerWalletBalance,
  holdPayout,
  postPayout,
  releaseHold,
  returnPayout,
  type HoldSource,
} from '../ledger/service.ts';
import { maxTransactionCop } from '../payments/queries.ts';
import { confirmWalletWithdrawal, recordWalletReturn, recordWalletWithdrawal } from '../wallets/service.ts';
import { addBusinessDays } from './business-days.ts';
import { APPROVAL_EXPIRED_REMARKS, APPROVAL_WINDOW_MS, CANCELLABLE, CASHOUT_MACHINE, RETURNED_REMARKS, type CashoutAction } from './lifecycle.ts';
import { CASHOUT_TEST_SCENARIOS, cashoutList, type CashoutResponse, type CreateCashoutBody, type ResolveCashoutBody } from './schemas.ts';
import { CASHOUT_METHODS, CASHOUT_STATUSES, type CashoutMethod, type CashoutsTable, type CashoutStatus } from './tables.ts';
import type { Selectable } from 'kysely';

/** Cash-outs (docs/cashouts.md): money out of a balance through the payout rail, held in the ledger first. */

export type CashoutRow = Selectable<CashoutsTable>;

export const CASHOUT_ID = /^co_[0-9a-z]{10,40}$/;
/** PRODUCT.md: at least COP 1,000 (minor units). */
export const MIN_CASHOUT = 1_000_00n;
export const CASHOUT_RECONCILE_JOB = 'cashouts.reconcile';
export const CASHOUT_APPROVAL_JOB = 'cashouts.approval_expiry';
export const CASHOUT_SANDBOX_RETURN_JOB = 'cashouts.sandbox_return';
/** Where a payout still unknown past its expected arrival is asked again, until it is final. */
const RECHECK_MS = 3_600_000;

const iso = (d: Date | string | null) => (d === null ? null : new Date(d).toISOString());

export function toCashoutResponse(row: CashoutRow): CashoutResponse {
  return {
    id: row.id,
    status: row.status,
    amount: toPesos(BigInt(row.amount)),
    currency: row.currency,
    method: row.method,
    account_id: row.account_id,
    customer_id: row.customer_id,
    external_id: row.external_id,
    description: row.description,
    remarks: row.remarks,
    source: row.source,
    network_id: row.network_id,
    expected_arrival_at: iso(row.expected_arrival_at),
    test_scenario: row.test_scenario,
    is_test: row.environment === 'test',
    created_at: iso(row.created_at)!,
    updated_at: iso(row.updated_at)!,
    processed_at: iso(row.processed_at),
    completed_at: iso(row.completed_at),
    rejected_at: iso(row.rejected_at),
    cancelled_at: iso(row.cancelled_at),
    created_by: row.created_by ?? null,
    approved_by: row.approved_by ?? null,
    rejected_by: row.rejected_by ?? null,
  };
}

async function lockCashout(trx: Transaction<DB>, scope: Tenant, id: string): Promise<CashoutRow | undefined> {
  if (!CASHOUT_ID.test(id)) return undefined;
  return trx.selectFrom('cashouts').selectAll().$call(inTenant(scope)).where('id', '=', id).forUpdate().executeTakeFirst();
}

/** A cash-out of the caller's company by id: absent → record_not_found, the other environment → environment_key_mismatch. */
async function loadCashout(db: ServiceScope['db'], scope: Tenant, id: string): Promise<CashoutRow> {
  if (!CASHOUT_ID.test(id)) throw new ApiError('record_not_found');
  return loadInScope(scope, (scoped) => db.selectFrom('cashouts').selectAll().$call(scoped).where('id', '=', id).executeTakeFirst());
}

/** lockCashout for an operation by path id: missing in the environment → why (record_not_found or environment_key_mismatch). */
async function lockForOperation(trx: Transaction<DB>, scope: Tenant, id: string): Promise<CashoutRow> {
  const row = await lockCashout(trx, scope, id);
  if (row) return row;
  await loadCashout(trx, scope, id);
  throw new ApiError('record_not_found');
}

const holdSource = (row: CashoutRow): HoldSource =>
  row.source === 'customer_wallet' ? { kind: 'customer_wallet', holder: row.customer_id } : { kind: 'company_available' };
const ledgerSource = (row: CashoutRow) => ({ type: 'cashout', id: row.id });

/** Columns a status sets on entering it. */
function entering(to: CashoutStatus, action: CashoutAction, now: Date): Partial<CashoutRow> {
  switch (to) {
    case 'processing':
      return { processed_at: now };
    case 'completed':
      return { completed_at: now };
    case 'rejected':
      return { rejected_at: now };
    case 'cancelled':
      return action === 'cancel' ? { cancelled_at: now } : {};
    default:
      return {};
  }
}

/**
 * THE one place a cash-out changes status (on the platform's engine), with what the status does to
 * the money in the same transaction: `complete` pays the held amount out, `reject` and `cancel`
 * release it to where it was held from, `return` reverses the payout.
 */
async function transition(trx: Transaction<DB>, scope: ServiceScope, row: CashoutRow, action: CashoutAction, patch: Partial<CashoutRow> = {}) {
  const now = scope.deps.clock.now();
  const { row: updated, transition: t } = await applyTransition(trx, scope, CASHOUT_MACHINE, {
    table: 'cashouts',
    row,
    action,
    now,
    set: (t) => ({ ...patch, ...entering(t.to, t.action, now) }),
    present: (r) => toCashoutResponse(r as CashoutRow),
  });
  const money = { currency: updated.currency, amount: BigInt(updated.amount), source: ledgerSource(updated) };
  const fromWallet = updated.source === 'customer_wallet';
  if (t.action === 'complete') {
    await postPayout(trx, scope, money);
    if (fromWallet) await confirmWalletWithdrawal(trx, scope, updated.id);
  }
  if ((t.action === 'reject' && row.status !== 'completed') || t.action === 'cancel' || t.action === 'return') {
    const back =
      t.action === 'return'
        ? await returnPayout(trx, scope, { ...money, to: holdSource(updated) })
        : await releaseHold(trx, scope, { ...money, to: holdSource(updated) });
    // The customer's wallet shows the money coming back (docs/wallets.md).
    if (fromWallet) await recordWalletReturn(trx, scope, { cashoutId: updated.id, concept: updated.remarks, ledgerTransactionId: back.id });
  }
  return updated as CashoutRow;
}

/** When the money should have arrived: ACH within 3 Colombian business days, TURBO 2 hours, INSTANT a minute. */
export function expectedArrival(method: CashoutMethod, from: Date): Date {
  if (method === 'ACH') return addBusinessDays(from, 3);
  return new Date(from.getTime() + (method === 'TURBO' ? 2 * 3_600_000 : 60_000));
}

async function payoutRequest(deps: AppDeps, row: CashoutRow): Promise<PayoutRequest> {
  const account = await findAccountView(deps.database.db, { companyId: row.company_id, environment: row.environment }, row.account_id);
  if (!account) throw new Error(`cash-out ${row.id}: account ${row.account_id} not found`);
  return {
    reference: row.id,
    amount: BigInt(row.amount),
    currency: row.currency,
    method: row.method,
    bankId: account.bank_id ?? '',
    bankCode: account.bank_code ?? '',
    bankName: account.bank_name ?? '',
    accountNumber: account.account_number,
    accountType: account.subtype,
    holderName: [account.customer_first_name, account.customer_last_name].filter(Boolean).join(' '),
    holderKind: account.customer_type === 'company' ? 'company' : 'natural',
    holderDocumentType: account.customer_document_type ?? null,
    holderDocument: account.customer_document_number ?? '',
    holderEmail: account.customer_email ?? null,
    submittedAt: new Date(row.processed_at ?? row.created_at),
    testScenario: row.test_scenario,
  };
}

const jobPayload = (row: CashoutRow) => ({ company_id: row.company_id, environment: row.environment, cashout_id: row.id });

/**
 * The rail's answer, saved (in `trx`). A final cash-out is left as it is (an answer arriving twice
 * settles once). Pending: processing, asked again at `settleAt` (or past its expected arrival).
 */
export async function settlePayout(trx: Transaction<DB>, scope: ServiceScope, id: string, outcome: PayoutOutcome): Promise<CashoutRow> {
  let row = (await lockCashout(trx, scope, id))!;
  if (row.status !== 'created' && row.status !== 'processing') return row;
  const now = scope.deps.clock.now();
  if (row.status === 'created') {
    row = await transition(trx, scope, row, 'submit', { network_id: outcome.networkId, expected_arrival_at: expectedArrival(row.method, now) });
    if (row.method === 'TURBO' && row.test_scenario === 'turbo_onboarding') {
      await emitEvent({ ...scope, db: trx }, 'cashout.turbo_onboarding', toCashoutResponse(row), now);
    }
  }
  if (outcome.status === 'paid') {
    row = await transition(trx, scope, row, 'complete', { network_id: outcome.networkId });
    if (row.environment === 'test' && row.test_scenario === 'returned') {
      await scope.deps.jobs.enqueue(
        trx,
        CASHOUT_SANDBOX_RETURN_JOB,
        jobPayload(row),
        new Date(now.getTime() + scope.deps.config.sandboxCashoutDelayMs),
      );
    }
  } else if (outcome.status === 'failed') {
    row = await transition(trx, scope, row, 'reject', { network_id: outcome.networkId, remarks: outcome.remarks });
  } else if (outcome.settleAt !== null || row.environment === 'live') {
    const arrival = row.expected_arrival_at ? new Date(row.expected_arrival_at) : now;
    const at = outcome.settleAt ?? (arrival.getTime() > now.getTime() ? arrival : new Date(now.getTime() + RECHECK_MS));
    await scope.deps.jobs.enqueue(trx, CASHOUT_RECONCILE_JOB, jobPayload(row), at);
  }
  return row;
}

/** Sends a recorded cash-out through the payout rail with the outside-call protocol. */
function sendRecorded(
  origin: ReturnType<typeof requestOrigin>,
  scope: Omit<ServiceScope, 'db'>,
  record: (trx: Transaction<DB>) => Promise<{ row: CashoutRow; send: boolean; safetyJobId: string | null }>,
): Promise<CashoutRow> {
  return runOutsideCall(origin, {
    rail: 'payout',
    record: async (trx) => {
      const { row, send, safetyJobId } = await record(trx);
      return { recorded: { row, send }, resourceId: row.id, safetyJobId };
    },
    call: async ({ row, send }) => {
      if (!send) return null;
      // After the commit: connector settings are read on the pool, named here.
      const tenant = { companyId: scope.companyId, environment: scope.environment, db: scope.deps.database.db };
      const rail = await scope.deps.rails.money(tenant, 'payout');
      return rail.send(await payoutRequest(scope.deps, row));
    },
    settle: async (trx, { row }, outcome) => (outcome ? settlePayout(trx, { ...scope, db: trx }, row.id, outcome) : row),
    // Not known: the cash-out stays as recorded (its money held); the reconcile job asks the rail again.
    unknown: ({ row }) => row,
    lost: () =>
      new ApiError('service_unavailable', {
        message: 'The cash-out was recorded and sent; saving the answer was not confirmed. Read it before retrying.',
      }),
  });
}

interface NewCashout {
  amount: bigint;
  method: CashoutMethod;
  accountId: string;
  customerId: string;
  origin: 'customer' | 'balance';
  source: HoldSource;
  externalId: string | null;
  description: string | null;
  testScenario: string | null;
  idempotencyKey: string | null;
  /** The principal creating it (the request's key id): maker-checker. */
  createdBy: string | null;
}

/**
 * Records a cash-out in `trx`: the row (cashout.created), the hold of its money (short:
 * insufficient_funds, nothing written), then either the approval wait (above the company's
 * threshold) or the safety job of its payout call.
 */
async function recordCashout(trx: Transaction<DB>, scope: ServiceScope, input: NewCashout) {
  const now = scope.deps.clock.now();
  let row = await insertWithTransition<CashoutRow>(trx, scope, CASHOUT_MACHINE, {
    table: 'cashouts',
    action: 'create',
    values: {
      id: prefixedId('co', now.getTime()),
      amount: input.amount,
      currency: 'COP',
      method: input.method,
      account_id: input.accountId,
      customer_id: input.customerId,
      origin: input.origin,
      source: input.source.kind,
      external_id: input.externalId,
      description: input.description,
      remarks: null,
      test_scenario: input.testScenario,
      idempotency_key: input.idempotencyKey,
      created_by: input.createdBy,
      network_id: null,
      expected_arrival_at: null,
      created_at: now,
      updated_at: now,
    },
    present: (r) => toCashoutResponse(r),
  });
  try {
    const hold = await holdPayout(trx, scope, { currency: 'COP', amount: input.amount, source: ledgerSource(row), from: input.source });
    if (input.source.kind === 'customer_wallet') {
      await recordWalletWithdrawal(trx, scope, {
        customerId: input.customerId,
        amount: input.amount,
        currency: 'COP',
        cashoutId: row.id,
        concept: input.description,
        ledgerTransactionId: hold.id,
      });
    }
  } catch (error) {
    if (error instanceof ApiError && error.def.codeName === 'insufficient_balance') {
      const what = input.source.kind === 'customer_wallet' ? "The customer's wallet" : 'The available balance';
      throw new ApiError('insufficient_funds', { message: `${what} does not cover ${formatPesos(input.amount, 'COP')}; nothing was created.` });
    }
    throw error;
  }
  const company = await trx.selectFrom('companies').select('cashout_approval_threshold').where('id', '=', scope.companyId).executeTakeFirstOrThrow();
  const threshold = company.cashout_approval_threshold === null ? null : BigInt(company.cashout_approval_threshold);
  if (
    input.testScenario === 'require_approval' ||
    (threshold !== null && (input.amount > threshold || (await dayTotal(trx, scope, now)) > threshold))
  ) {
    row = await transition(trx, scope, row, 'require_approval');
    await scope.deps.jobs.enqueue(trx, CASHOUT_APPROVAL_JOB, jobPayload(row), new Date(now.getTime() + APPROVAL_WINDOW_MS));
    return { row, send: false, safetyJobId: null };
  }
  const safetyJobId = await scope.deps.jobs.enqueue(
    trx,
    CASHOUT_RECONCILE_JOB,
    jobPayload(row),
    new Date(now.getTime() + scope.deps.config.chargeReconcileDelayMs),
  );
  return { row, send: true, safetyJobId };
}

/**
 * The company's cash-outs of this Bogotá day in this environment, this one included, less the ones
 * that moved no money (rejected, cancelled): the approval threshold also bounds their sum, so many
 * small cash-outs cannot pass where one large one would wait. Read after the hold, which locks the
 * company's balance: concurrent cash-outs of the company are counted one after the other.
 */
async function dayTotal(trx: Transaction<DB>, scope: ServiceScope, now: Date): Promise<bigint> {
  const dayStart = bogotaDayStart(now);
  const row = await trx
    .selectFrom('cashouts')
    .select((eb) => eb.fn.sum<string | number | bigint | null>('amount').as('total'))
    .$call(inTenant(scope))
    .where('created_at', '>=', dayStart)
    .where('status', 'not in', ['rejected', 'cancelled'])
    .executeTakeFirst();
  return BigInt(row?.total ?? 0);
}

type AccountRow = AccountView;

async function findAccount(ctx: ServiceScope, id: string): Promise<AccountRow | undefined> {
  if (!isUuid(id)) return undefined;
  const view = await findAccountView(ctx.db, ctx, id.toLowerCase());
  return view && !view.deleted_at ? view : undefined;
}

/** Why an account cannot receive a cash-out by `method`, or null. */
async function accountProblem(ctx: ServiceScope, account: AccountRow, method: CashoutMethod, customerType: string | null): Promise<string | null> {
  if (account.subtype === 'WALLET') return 'a WALLET account is a balance on this platform, not a bank account: it cannot receive a cash-out';
  if (account.status !== 'ACTIVE') return `the account is ${account.status}; it must be ACTIVE`;
  if (method === 'INSTANT' && account.subtype !== 'KEY') return 'INSTANT goes only to a KEY (Bre-B) account';
  if (method !== 'INSTANT' && account.subtype === 'KEY') return 'a KEY (Bre-B) account receives INSTANT cash-outs only';
  if (method === 'INSTANT' && customerType !== 'natural') return 'INSTANT goes only to a natural person';
  if (method === 'TURBO' && !(account.bank_code && offersTurbo(account.bank_code))) {
    return `${account.bank_name ?? 'the bank'} does not take TURBO cash-outs (GET /v1/banks lists which do); use ACH`;
  }
  return null;
}

function beneficiaryOf(
  method: CashoutMethod,
  account: Pick<AccountRow, 'subtype'>,
  customer: { type: string | null; document_type: string | null; document_number: string | null; email: string | null },
): PayoutBeneficiary {
  return {
    method,
    accountType: account.subtype,
    holderKind: customer.type === 'company' ? 'company' : 'natural',
    holderDocumentType: customer.document_type,
    holderDocument: customer.document_number ?? '',
    holderEmail: customer.email,
  };
}

function checkAmount(add: (f: string, m: string) => void, raw: unknown, maximum: bigint): bigint | null {
  const amount = parseMinor(raw);
  if (amount === null || amount <= 0n) add('amount', 'must be a positive amount in pesos with at most 2 decimals');
  else if (amount < MIN_CASHOUT) add('amount', `must be at least ${formatPesos(MIN_CASHOUT, 'COP')}`);
  else if (amount > maximum) add('amount', `exceeds the maximum per transaction of ${formatPesos(maximum, 'COP')}`);
  else return amount;
  return null;
}

/** POST /cashouts (docs/cashouts.md). */
export async function createCashout(ctx: RequestContext, body: CreateCashoutBody, idempotencyKey: string | null): Promise<CashoutResponse> {
  const scenario = body.test_scenario ?? null;
  // A sandbox trigger with a live key is bad input whatever the rails (as on charges).
  if (scenario !== null && !ctx.isTest) throw validationError({ test_scenario: ['is only accepted with a test key'] });
  // Then the rail: a live key without a payout connector is refused before anything is recorded.
  const rail = await ctx.deps.rails.money(ctx, 'payout');
  const errors: FieldErrors = {};
  const add = (field: string, message: string) => (errors[field] ??= []).push(message);
  if (scenario !== null && !(CASHOUT_TEST_SCENARIOS as readonly string[]).includes(scenario))
    add('test_scenario', `must be one of ${CASHOUT_TEST_SCENARIOS.join(', ')}`);
  const method: CashoutMethod = body.method ?? 'ACH';
  const amount = checkAmount(add, body.amount, (await maxTransactionCop(ctx.db, ctx.companyId)) * 100n);
  const customer = await ctx.db
    .selectFrom('customers')
    .select(['id', 'type', 'document_type', 'document_number', 'email'])
    .$call(inTenant(ctx))
    .where('id', '=', body.customer_id.toLowerCase())
    .executeTakeFirst();
  if (!customer) add('customer_id', 'no such customer in this environment');
  const account = await findAccount(ctx, body.account_id);
  if (!account) add('account_id', 'no such account in this environment');
  else if (customer && account.customer_id !== customer.id) add('account_id', 'belongs to another customer');
  else {
    const problem = await accountProblem(ctx, account, method, customer?.type ?? null);
    if (problem) add(problem.startsWith('INSTANT goes only to a natural') ? 'method' : 'account_id', problem);
  }
  if (Object.keys(errors).length) throw validationError(errors);
  // What the rail itself cannot send (a connector's methods, the beneficiary data it needs).
  const refused = rail.beneficiaryProblem?.(beneficiaryOf(method, account!, customer!));
  if (refused) throw validationError({ [refused.field]: [refused.message] });
  if (body.external_id) {
    const first = await ctx.db
      .selectFrom('cashouts')
      .select('id')
      .$call(inTenant(ctx))
      .where('external_id', '=', body.external_id)
      .executeTakeFirst();
    if (first)
      throw new ApiError('cashout_external_id_taken', {
        message: `external_id ${body.external_id} is cash-out ${first.id}.`,
        extra: { cashout_id: first.id },
      });
  }
  // The customer's wallet pays when it covers the whole amount; otherwise the company's balance.
  const wallet = await customerWalletBalance(ctx.db, ctx, customer!.id);
  const source: HoldSource = wallet >= amount! ? { kind: 'customer_wallet', holder: customer!.id } : { kind: 'company_available' };
  const row = await sendRecorded(requestOrigin(ctx), ctx, async (trx) => {
    try {
      return await recordCashout(
        trx,
        { ...ctx, db: trx },
        {
          amount: amount!,
          method,
          accountId: account!.id,
          customerId: customer!.id,
          origin: 'customer',
          source,
          externalId: body.external_id ?? null,
          description: body.description ?? null,
          testScenario: scenario,
          idempotencyKey,
          createdBy: ctx.keyId,
        },
      );
    } catch (error) {
      // Two requests with one external_id at once: the unique index lets one through.
      if (body.external_id && /cashouts_external_id/.test(String((error as Error)?.message))) {
        throw new ApiError('cashout_external_id_taken', { message: `external_id ${body.external_id} is taken by another cash-out.` });
      }
      throw error;
    }
  });
  return toCashoutResponse(row);
}

/** A retried key whose run recorded the cash-out and died: the cash-out as it is now. */
export const recoverCashout: RecoverResource = async (req, id) => {
  const row = CASHOUT_ID.test(id)
    ? await req.ctx.deps.database.db.selectFrom('cashouts').selectAll().$call(inTenant(req.ctx)).where('id', '=', id).executeTakeFirst()
    : undefined;
  return row ? toCashoutResponse(row) : null;
};

/** POST /balances retried after its run recorded the cash-out and died: 204 again (the cash-out exists). */
export const recoverBalanceCashout: RecoverResource = async (req, id) => ((await recoverCashout(req, id)) === null ? null : RECOVERED_NO_CONTENT);

export async function getCashout(ctx: RequestContext, id: string): Promise<CashoutResponse> {
  return toCashoutResponse(await loadCashout(ctx.db, ctx, id));
}

export async function listCashouts(ctx: RequestContext, query: Record<string, unknown>, path: string) {
  const list = parseListQuery(cashoutList, query);
  const f = list.filters;
  let q = ctx.db.selectFrom('cashouts').selectAll().$call(inTenant(ctx));
  const never = (b: boolean) => (b ? q : q.where('id', '=', ''));
  if (f.id !== undefined) q = never(CASHOUT_ID.test(f.id)).where('id', '=', f.id);
  if (f.status !== undefined) q = never((CASHOUT_STATUSES as readonly string[]).includes(f.status)).where('status', '=', f.status as CashoutStatus);
  if (f.method !== undefined)
    q = never((CASHOUT_METHODS as readonly string[]).includes(f.method.toUpperCase())).where('method', '=', f.method.toUpperCase() as CashoutMethod);
  if (f.external_id !== undefined) q = q.where('external_id', '=', f.external_id);
  if (f.customer_id !== undefined) q = never(isUuid(f.customer_id)).where('customer_id', '=', f.customer_id.toLowerCase());
  return paginate(q, list, { path, query, table: 'cashouts', map: toCashoutResponse });
}

/** POST /cashouts/{id}/cancel: a created or require_approval cash-out; its money is released. */
export async function cancelCashout(ctx: RequestContext, id: string): Promise<CashoutResponse> {
  return inTransaction(ctx.db, async (trx) => {
    const scope = { ...ctx, db: trx };
    const row = await lockForOperation(trx, ctx, id);
    if (!CANCELLABLE.includes(row.status))
      throw new ApiError('cashout_not_cancellable', {
        message: `The cash-out is ${row.status}; only created or require_approval cash-outs can be cancelled.`,
      });
    // A created cash-out not waiting for approval was handed to the payout rail: its answer is awaited, never raced.
    if (row.status === 'created') {
      throw new ApiError('cashout_not_cancellable', {
        message: 'The cash-out was sent to the payout rail and its answer is being confirmed; it cannot be cancelled now.',
      });
    }
    return toCashoutResponse(await transition(trx, scope, row, 'cancel', { remarks: 'CANCELLED' }));
  });
}

/** POST /cashouts/{id}/approve: require_approval → processing, then the payout rail is called. */
export async function approveCashout(ctx: RequestContext, id: string): Promise<CashoutResponse> {
  const row = await sendRecorded(requestOrigin(ctx), ctx, async (trx) => {
    const locked = await lockForOperation(trx, ctx, id);
    if (locked.status !== 'require_approval')
      throw new ApiError('cashout_not_pending_approval', {
        message: `The cash-out is ${locked.status}; only one in require_approval can be approved.`,
      });
    // Maker-checker: the principal that created it cannot approve it (another key, or later a dashboard user, can).
    if (locked.created_by !== null && locked.created_by === ctx.keyId) throw new ApiError('cashout_approver_is_creator');
    const now = ctx.deps.clock.now();
    const approved = await transition(trx, { ...ctx, db: trx }, locked, 'approve', {
      expected_arrival_at: expectedArrival(locked.method, now),
      approved_by: ctx.keyId,
    });
    const safetyJobId = await ctx.deps.jobs.enqueue(
      trx,
      CASHOUT_RECONCILE_JOB,
      jobPayload(approved),
      new Date(now.getTime() + ctx.deps.config.chargeReconcileDelayMs),
    );
    return { row: approved, send: true, safetyJobId };
  });
  return toCashoutResponse(row);
}

/** POST /cashouts/{id}/reject: require_approval → rejected, the money released. */
export async function rejectCashout(ctx: RequestContext, id: string, remarks: string | null): Promise<CashoutResponse> {
  return inTransaction(ctx.db, async (trx) => {
    const row = await lockForOperation(trx, ctx, id);
    if (row.status !== 'require_approval')
      throw new ApiError('cashout_not_pending_approval', { message: `The cash-out is ${row.status}; only one in require_approval can be rejected.` });
    return toCashoutResponse(
      await transition(trx, { ...ctx, db: trx }, row, 'reject', { remarks: remarks ?? 'REJECTED_BY_APPROVER', rejected_by: ctx.keyId }),
    );
  });
}

/** POST /cashouts/{id}/resolve (test cash-outs, test key): the rail's answer by hand. */
export async function resolveCashout(ctx: RequestContext, id: string, body: ResolveCashoutBody): Promise<CashoutResponse> {
  return inTransaction(ctx.db, async (trx) => {
    const scope = { ...ctx, db: trx };
    const row = await lockForOperation(trx, ctx, id);
    if (!ctx.isTest || row.environment !== 'test')
      throw new ApiError('test_only', { message: 'Only a test cash-out can be resolved, with a test key.' });
    const from: Record<ResolveCashoutBody['action'], CashoutStatus[]> = {
      complete: ['created', 'processing'],
      reject: ['created', 'processing'],
      return: ['completed'],
    };
    if (!from[body.action].includes(row.status)) {
      throw new ApiError('not_resolvable', {
        message: `The cash-out is ${row.status}; ${body.action} applies to ${from[body.action].join(' or ')} test cash-outs.`,
      });
    }
    // A cash-out a provider's connector handled (its sandbox, in a test environment) is settled only
    // by the provider's word: a return by hand would put money back that the provider sent.
    const handled = row.network_id ? !row.network_id.startsWith('sbx_') : Boolean(await ctx.deps.rails.connectors.find(scope, 'payout'));
    if (handled) {
      throw new ApiError('not_resolvable', {
        message:
          "The cash-out cannot be resolved: a payment provider's connector handles this environment's payouts; only the provider's own word settles it (its events or the reconciler).",
      });
    }
    if (body.action === 'return') return toCashoutResponse(await transition(trx, scope, row, 'return', { remarks: RETURNED_REMARKS }));
    const outcome: PayoutOutcome =
      body.action === 'complete'
        ? { status: 'paid', networkId: row.network_id ?? `sbx_payout_${row.id}` }
        : { status: 'failed', networkId: row.network_id ?? `sbx_payout_${row.id}`, remarks: body.remarks ?? 'ACCOUNT_CLOSED' };
    return toCashoutResponse(await settlePayout(trx, scope, row.id, outcome));
  });
}

// ---------------------------------------------------------------------------------------------
// The company's own balance (POST /balances) and its payout account

async function payoutAccountOf(ctx: ServiceScope, accountId: string | null | undefined): Promise<AccountRow> {
  let id = accountId ?? null;
  if (id === null) {
    const set = await ctx.db.selectFrom('company_payout_accounts').select('account_id').$call(inTenant(ctx)).executeTakeFirst();
    if (!set) throw new ApiError('company_account_not_found');
    id = set.account_id;
  }
  const account = await findAccount(ctx, id);
  if (!account) {
    if (accountId == null)
      throw new ApiError('company_account_not_found', { message: "The company's payout account no longer exists: set another one." });
    throw validationError({ account_id: ['no such account in this environment'] });
  }
  const problem = await accountProblem(ctx, account, 'ACH', null);
  if (problem) throw validationError({ account_id: [problem] });
  return account;
}

/** POST /balances {amount?, account_id?} → 204: an ACH cash-out of the company's available balance (docs/cashouts.md). */
export async function cashOutBalance(
  ctx: RequestContext,
  body: { amount?: unknown; account_id?: string | null },
  idempotencyKey: string | null,
): Promise<string> {
  const rail = await ctx.deps.rails.money(ctx, 'payout');
  const account = await payoutAccountOf(ctx, body.account_id);
  const holder = await ctx.db
    .selectFrom('customers')
    .select(['type', 'document_type', 'document_number', 'email'])
    .$call(inTenant(ctx))
    .where('id', '=', account.customer_id)
    .executeTakeFirstOrThrow();
  const refused = rail.beneficiaryProblem?.(beneficiaryOf('ACH', account, holder));
  if (refused) throw validationError({ [refused.field === 'customer_id' ? 'account_id' : refused.field]: [refused.message] });
  const available = await companyAvailableBalance(ctx.db, ctx);
  if (body.amount == null && available === 0n) throw new ApiError('balance_is_empty');
  // Without amount: the whole available balance, under the same rules as an amount sent.
  const errors: FieldErrors = {};
  const amount = checkAmount(
    (f, m) =>
      (errors[f] ??= []).push(body.amount == null ? `${m} (the whole available balance, ${formatPesos(available, 'COP')}, was asked for)` : m),
    body.amount == null ? toPesos(available) : body.amount,
    (await maxTransactionCop(ctx.db, ctx.companyId)) * 100n,
  );
  if (amount === null) throw validationError(errors);
  if (available === 0n) throw new ApiError('balance_is_empty');
  const row = await sendRecorded(requestOrigin(ctx), ctx, (trx) =>
    recordCashout(
      trx,
      { ...ctx, db: trx },
      {
        amount,
        method: 'ACH',
        accountId: account.id,
        customerId: account.customer_id,
        origin: 'balance',
        source: { kind: 'company_available' },
        externalId: null,
        description: 'Retiro del saldo',
        testScenario: null,
        idempotencyKey,
        createdBy: ctx.keyId,
      },
    ),
  );
  return row.id;
}

export async function getPayoutAccount(ctx: RequestContext) {
  const row = await ctx.db.selectFrom('company_payout_accounts').select(['account_id', 'updated_at']).$call(inTenant(ctx)).executeTakeFirst();
  return { account_id: row?.account_id ?? null, updated_at: row ? new Date(row.updated_at).toISOString() : null };
}

/** PUT /company/payout-account {account_id}: the account POST /balances pays to when it names none. */
export async function setPayoutAccount(ctx: ServiceScope, accountId: string) {
  const account = await payoutAccountOf(ctx, accountId);
  const now = ctx.deps.clock.now();
  await ctx.db
    .insertInto('company_payout_accounts')
    .values({ company_id: ctx.companyId, environment: ctx.environment, account_id: account.id, updated_at: now })
    .onConflict((oc) => oc.columns(['company_id', 'environment']).doUpdateSet({ account_id: account.id, updated_at: now }))
    .execute();
  return { account_id: account.id, updated_at: now.toISOString() };
}

// ---------------------------------------------------------------------------------------------
// Jobs

function scopeOfPayload(payload: Record<string, unknown>) {
  return { companyId: String(payload.company_id), environment: payload.environment === 'live' ? ('live' as const) : ('test' as const) };
}

/** The reconciler: asks the payout rail where a created or processing cash-out stands (the same reference: never a second payout). */
export async function runCashoutReconcile(deps: AppDeps, payload: Record<string, unknown>): Promise<void> {
  const tenant = scopeOfPayload(payload);
  const row = await deps.database.db
    .selectFrom('cashouts')
    .selectAll()
    .$call(inTenant(tenant))
    .where('id', '=', String(payload.cashout_id))
    .executeTakeFirst();
  if (!row || (row.status !== 'created' && row.status !== 'processing')) return;
  const rail = await deps.rails.money(tenant, 'payout');
  const request = await payoutRequest(deps, row);
  const outcome = await askRail(deps, 'payout', () => rail.send(request));
  if (outcome.status === 'pending' && rail.name !== 'sandbox') {
    // Every reconciler ends: a provider still without a final word 72 hours past the expected
    // arrival stops being asked by itself (the job fails until dead, a person looks; the money stays held).
    const from = Math.max(new Date(row.created_at).getTime(), row.expected_arrival_at ? new Date(row.expected_arrival_at).getTime() : 0);
    const waitedMs = deps.clock.now().getTime() - from;
    if (waitedMs > PROVIDER_FINAL_WITHIN_MS) throw new ProviderNeverFinal(`cash-out ${row.id}`, waitedMs);
  }
  await settleAlone(deps, tenant, (trx, scope) => settlePayout(trx, scope, row.id, outcome));
}

/**
 * The cash-out a payout rail's event names by its own id (the transaction or its batch) or by the
 * cash-out id it was sent with (a batch's reference), in any
 * company: the event's checksum is verified with that company's secret before anything is used.
 */
export async function findCashoutByNetworkId(
  db: ServiceScope['db'],
  networkIds: string[],
): Promise<(Tenant & { id: string; status: string }) | undefined> {
  const ids = networkIds.filter((id) => id.length > 0 && id.length <= 200);
  if (!ids.length) return undefined;
  const row = await db
    .selectFrom('cashouts')
    .select(['id', 'company_id', 'environment', 'status'])
    .where((eb) => {
      const cashoutIds = ids.filter((id) => CASHOUT_ID.test(id));
      return eb.or([eb('network_id', 'in', ids), ...(cashoutIds.length ? [eb('id', 'in', cashoutIds)] : [])]);
    })
    .executeTakeFirst();
  return row ? { id: row.id, companyId: row.company_id, environment: row.environment, status: row.status } : undefined;
}

/** A payout rail's final word from its event: saved once (a final cash-out is left as it is). */
export async function settleCashoutFromRail(deps: AppDeps, tenant: Tenant, id: string, outcome: PayoutOutcome): Promise<CashoutStatus> {
  const row = await settleAlone(deps, tenant, (trx, scope) => settlePayout(trx, scope, id, outcome));
  return row.status;
}

export async function runApprovalExpiry(deps: AppDeps, payload: Record<string, unknown>): Promise<void> {
  const tenant = scopeOfPayload(payload);
  await settleAlone(deps, tenant, async (trx, scope) => {
    const row = await lockCashout(trx, tenant, String(payload.cashout_id));
    if (row?.status === 'require_approval') await transition(trx, scope, row, 'cancel', { remarks: APPROVAL_EXPIRED_REMARKS });
  });
}

export async function runSandboxReturn(deps: AppDeps, payload: Record<string, unknown>): Promise<void> {
  const tenant = scopeOfPayload(payload);
  if (tenant.environment !== 'test') return; // a live return comes from the rail, never simulated
  await settleAlone(deps, tenant, async (trx, scope) => {
    const row = await lockCashout(trx, tenant, String(payload.cashout_id));
    if (row?.status === 'completed') await transition(trx, scope, row, 'return', { remarks: RETURNED_REMARKS });
  });
}

export function registerCashoutJobs(deps: AppDeps): void {
  deps.jobs.register(CASHOUT_RECONCILE_JOB, (payload) => runCashoutReconcile(deps, payload));
  deps.jobs.register(CASHOUT_APPROVAL_JOB, (payload) => runApprovalExpiry(deps, payload));
  deps.jobs.register(CASHOUT_SANDBOX_RETURN_JOB, (payload) => runSandboxReturn(deps, payload));
}
