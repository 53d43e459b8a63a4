import { sql, type Transaction } from 'kysely';
import type { DB } from '../../platform/db/schema.ts';
import type { RequestContext } from '../../platform/context.ts';
import type { RecoverResource } from '../../platform/idempotency/idempotency.ts';
import { ApiError, validationError, type FieldErrors } from '../../platform/errors/api-error.ts';
import { isUuid, prefixedId } from '../../platform/ids.ts';
import { paginate, parseListQuery, parseTimestampFilter, RANGE_SQL, type RangeOp } from '../../platform/lists/lists.ts';
import { CURRENCIES, formatPesos, parseMinor, percentageOf, type Currency } from '../../platform/money.ts';
import { normalizeMetadata, type MetadataInput } from '../../platform/validation.ts';
import { customerExists } from '../accounts/queries.ts';
import { findCard, type CardRow } from '../cards/service.ts';
import { maxTransactionCop } from '../payments/queries.ts';
import type { StoredSplit } from '../payments/tables.ts';
import { resolveSplits, type PaymentInput, type RuleContext } from '../payments/validate.ts';
import { toChargeResponse, type ChargeRow } from './present.ts';
import { CHARGE_ID, findCharge, loadCharge } from './queries.ts';
import { chargeRail, CONNECTOR_HANDLED } from './rails.ts';
import { CHARGE_TEST_SCENARIOS, chargeList, type ChargeResponse, type CreateChargeBody } from './schemas.ts';
import { jobPayload, RECONCILE_JOB } from './jobs.ts';
import { debitRequestFor, settleDebitIn } from './settle.ts';
import { CHARGE_STATUSES, PAYMENT_METHOD_TYPES, type ChargeStatus, type PaymentMethodType } from './tables.ts';
import { insertCharge } from './transition.ts';
import { requestOrigin, runOutsideCall } from '../../platform/outside-call.ts';
import { inTenant } from '../../platform/scope.ts';

/** SPEC.md Limits: a movement on an instant-key (KEY) account is below COP 11,552,000 (minor units). */
export const KEY_ACCOUNT_LIMIT_MINOR = 11_552_000_00n;

interface ResolvedCharge {
  amount: bigint;
  currency: Currency;
  customerId: string;
  method: 'card' | 'account';
  accountId: string | null;
  card: CardRow | null;
  splits: StoredSplit[];
  metadata: Record<string, string> | null;
}

/** Every rule of SPEC.md "Charges" and "Limits"; all problems of a request are reported together. */
async function resolveChargeFields(ctx: RequestContext, body: CreateChargeBody): Promise<ResolvedCharge> {
  const errors: FieldErrors = {};
  const add = (field: string, message: string) => (errors[field] ??= []).push(message);
  const scope = { companyId: ctx.companyId, environment: ctx.environment };

  const scenario = body.test_scenario ?? null;
  if (scenario !== null) {
    if (!ctx.isTest) add('test_scenario', 'is only accepted with a test key');
    else if (!(CHARGE_TEST_SCENARIOS as readonly string[]).includes(scenario))
      add('test_scenario', `must be one of ${CHARGE_TEST_SCENARIOS.join(', ')}`);
    // (the request's transaction reads the settings: on the embedded engine the pool would wait for it)
    else if (await ctx.deps.rails.connectors.find(ctx, body.card_id != null ? 'card' : 'account_debit')) add('test_scenario', CONNECTOR_HANDLED);
  }

  if (body.installments != null && body.card_id == null) add('installments', 'only card charges are paid in installments');

  const currency: Currency = body.currency ?? 'COP';
  const amount = parseMinor(body.amount);
  if (amount === null || amount === 0n) add('amount', 'must be a positive amount in pesos with at most 2 decimals');
  else if (currency === 'COP') {
    const maximum = (await maxTransactionCop(ctx.db, ctx.companyId)) * 100n;
    if (amount > maximum) add('amount', `exceeds the maximum per transaction of ${formatPesos(maximum, 'COP')}`);
  }

  const customerId = body.customer_id.toLowerCase();
  const customerOk = await customerExists(ctx.db, scope, customerId);
  if (!customerOk) add('customer_id', 'no such customer in this environment');

  const hasAccount = body.account_id != null;
  const hasCard = body.card_id != null;
  let accountId: string | null = null;
  let card: CardRow | null = null;
  if (hasAccount === hasCard) {
    const message = hasAccount ? 'send either account_id or card_id, not both' : 'one of account_id or card_id is required';
    add('account_id', message);
    add('card_id', message);
  } else if (hasAccount) {
    const raw = body.account_id!;
    const account = isUuid(raw)
      ? await ctx.db
          .selectFrom('accounts')
          .select(['id', 'customer_id', 'subtype', 'status', 'authorization'])
          .$call(inTenant(ctx))
          .where('id', '=', raw.toLowerCase())
          .where('deleted_at', 'is', null)
          .executeTakeFirst()
      : undefined;
    if (!account) add('account_id', 'no such account in this environment');
    else if (customerOk && account.customer_id !== customerId) add('account_id', 'belongs to another customer');
    else if (account.subtype === 'WALLET') add('account_id', 'a WALLET account is a balance, not a payment method; it cannot be debited');
    else if (account.status !== 'ACTIVE') add('account_id', `the account is ${account.status}; it must be ACTIVE`);
    else if (!account.authorization) add('account_id', 'the customer has not authorized debits on this account (authorization is false)');
    else {
      accountId = account.id;
      if (account.subtype === 'KEY') {
        if (currency !== 'COP') add('currency', 'an instant-key (KEY) account moves COP only');
        else if (amount !== null && amount >= KEY_ACCOUNT_LIMIT_MINOR)
          add('amount', `an instant-key (KEY) account moves less than ${formatPesos(KEY_ACCOUNT_LIMIT_MINOR, 'COP')}`);
      }
    }
  } else {
    const found = await findCard(ctx.db, scope, body.card_id!);
    if (!found) add('card_id', 'no such card in this environment');
    else if (customerOk && found.customer_id !== customerId) add('card_id', 'belongs to another customer');
    else if (!found.authorization) add('card_id', 'the holder has not authorized charges on this card (authorization is false)');
    else card = found;
  }

  let metadata: Record<string, string> | null = null;
  try {
    metadata = normalizeMetadata(body.metadata as MetadataInput | null | undefined) ?? null;
  } catch {
    add('metadata', 'at most 50 keys');
  }

  // Splits: the shape and rules of payment splits (docs/payments.md), on a fixed amount.
  const rc: RuleContext = {
    db: ctx.db,
    companyId: ctx.companyId,
    environment: ctx.environment,
    now: ctx.deps.clock.now(),
    maxTransactionCop: 0n,
    checks: () => true,
  };
  const splits = body.splits?.length ? await resolveSplits(rc, { splits: body.splits } as PaymentInput, false, null, add) : [];
  if (splits.length && amount !== null) {
    const percent = splits.reduce((sum, s) => sum + (s.percentage_bp ?? 0), 0);
    const shares = splits.reduce((sum, s) => sum + (s.percentage_bp !== null ? percentageOf(amount, s.percentage_bp) : BigInt(s.amount ?? 0)), 0n);
    if (percent > 10_000) add('splits', 'the percentages add up to more than 100');
    else if (shares > amount) add('splits', 'the splits add up to more than the amount');
  }

  if (Object.keys(errors).length) throw validationError(errors);
  return { amount: amount!, currency, customerId, method: card ? 'card' : 'account', accountId, card, splits, metadata };
}

/**
 * POST /charges (docs/charges.md). The charge is recorded (created, with its intent, event and a
 * reconcile job) and committed with the request's idempotency claim before the rail is called;
 * the rail is called outside any transaction; its answer is saved in a transaction of its own.
 * A rejected debit is 200 with status failed. If the final save fails the answer is 503 90005:
 * the charge exists (find it by external_id) and the reconciler settles it.
 */
export async function createCharge(
  ctx: RequestContext,
  body: CreateChargeBody,
  idempotencyKey: string | null,
  hooks: { onRecord?: (trx: Transaction<DB>, charge: ChargeRow) => Promise<void> } = {},
): Promise<ChargeResponse> {
  // The rail first: a live key without a connector is refused before anything is looked at or recorded.
  const hasCard = body.card_id != null;
  if (hasCard !== (body.account_id != null)) await chargeRail(ctx.deps, ctx, hasCard ? 'card' : 'account');
  const v = await resolveChargeFields(ctx, body);
  const rail = await chargeRail(ctx.deps, ctx, v.method);
  if (v.card && rail.saveCard && !v.card.rail_source) {
    throw validationError({ card_id: ['the card was saved before the payment provider was connected: save it again (POST /cards)'] });
  }
  const now = ctx.deps.clock.now();
  const baseUrl = ctx.deps.config.baseUrl;
  return runOutsideCall(requestOrigin(ctx), {
    rail: v.method,
    record: async (trx) => {
      const charge = await insertCharge(trx, ctx, {
        id: prefixedId('ch', now.getTime()),
        intent_id: prefixedId('pi', now.getTime()),
        title: body.title,
        currency: v.currency,
        amount: v.amount,
        customer_id: v.customerId,
        payment_method_type: v.method,
        account_id: v.accountId,
        card_id: v.card?.id ?? null,
        external_id: body.external_id ?? null,
        idempotency_key: idempotencyKey,
        splits: JSON.stringify(v.splits),
        metadata: v.metadata ? JSON.stringify(v.metadata) : null,
        test_scenario: body.test_scenario ?? null,
        installments: body.installments ?? null,
        remarks: null,
        network_id: null,
        paid_at: null,
        failed_at: null,
        cancelled_at: null,
        refunded_at: null,
        created_at: now,
        updated_at: now,
      });
      // What the caller records with the charge, in the same transaction (a subscription cycle's link).
      await hooks.onRecord?.(trx, charge);
      // The safety net: if this request never saves the rail's answer, the reconciler does.
      const runAt = new Date(now.getTime() + ctx.deps.config.chargeReconcileDelayMs);
      const safetyJobId = await ctx.deps.jobs.enqueue(trx, RECONCILE_JOB, jobPayload(charge, {}), runAt);
      return { recorded: charge, resourceId: charge.id, safetyJobId };
    },
    call: async (charge) => rail.debit(await debitRequestFor(ctx.deps.database.db, charge, v.card ?? undefined)),
    settle: async (trx, charge, outcome) => {
      // The sandbox trigger: the rail answered, the final save "fails" (the reconciler settles it).
      if (charge.test_scenario === 'persistence_lost') throw new ApiError('charge_persistence_lost');
      const scope = { companyId: ctx.companyId, environment: ctx.environment, notifyWorkers: ctx.notifyWorkers, db: trx, deps: ctx.deps };
      return toChargeResponse(await settleDebitIn(trx, scope, charge.id, outcome), baseUrl);
    },
    // The outcome is unknown: never guessed. The charge stays created; the reconciler asks again.
    unknown: (charge) => toChargeResponse(charge, baseUrl),
    lost: () => new ApiError('charge_persistence_lost'),
  });
}

/**
 * How a retry of a key answers when its run recorded the charge (or the refund, the registration,
 * the OTP confirmation of it) and then failed or died: the charge as it is now, never a second
 * run (docs/platform.md "Retries after a failure"). Null when the charge does not exist (rtkey:
 * the run died while registering the QR; the retry registers the same reference again).
 */
export const recoverCharge: RecoverResource = async (req, id) => {
  const row = await findCharge(req.ctx.deps.database.db, req.ctx, id);
  return row ? toChargeResponse(row, req.ctx.deps.config.baseUrl) : null;
};

export async function getCharge(ctx: RequestContext, id: string): Promise<ChargeResponse> {
  return toChargeResponse(await loadCharge(ctx, id), ctx.deps.config.baseUrl);
}

// ---------------------------------------------------------------------------------------------
// GET /charges

const nothing = sql<boolean>`false`;
const DATE_ONLY = /^\d{4}-\d{2}-\d{2}$/;
const DAY_MS = 86_400_000;

function amountFilter(key: string, value: string): bigint {
  const minor = parseMinor(value);
  if (minor === null) throw validationError({ [key]: ['must be an amount in pesos with at most 2 decimals'] });
  return minor;
}

/**
 * A created_at bound. A date (YYYY-MM-DD, UTC as every list of the platform) stands for its whole
 * day: gte and lt start at its beginning, gt and lte at the end of it.
 */
function dateBound(op: RangeOp, key: string, value: string): Date {
  const at = parseTimestampFilter(key, value);
  if (!DATE_ONLY.test(value)) return at;
  return op === 'gt' || op === 'lte' ? new Date(at.getTime() + DAY_MS) : at;
}
const DATE_OP: Record<RangeOp, RangeOp> = { gte: 'gte', gt: 'gte', lte: 'lt', lt: 'lt' };

/**
 * GET /charges: every filter of SPEC.md, exact; `amount` (pesos) and `created_at` also as ranges
 * (`filter[amount][gte]=…`). A value that cannot match (an unknown status, a malformed id) gives an
 * empty list; a malformed amount or date is 422.
 */
export async function listCharges(ctx: RequestContext, query: Record<string, unknown>, path: string) {
  const list = parseListQuery(chargeList, query);
  let q = ctx.db.selectFrom('charges').selectAll().$call(inTenant(ctx));
  const f = list.filters;
  if (f.id !== undefined) q = CHARGE_ID.test(f.id) ? q.where('id', '=', f.id) : q.where(nothing);
  if (f.status !== undefined)
    q = (CHARGE_STATUSES as readonly string[]).includes(f.status) ? q.where('status', '=', f.status as ChargeStatus) : q.where(nothing);
  if (f.currency !== undefined) {
    const currency = f.currency.toUpperCase();
    q = (CURRENCIES as readonly string[]).includes(currency) ? q.where('currency', '=', currency as Currency) : q.where(nothing);
  }
  if (f.payment_method_type !== undefined) {
    q = (PAYMENT_METHOD_TYPES as readonly string[]).includes(f.payment_method_type)
      ? q.where('payment_method_type', '=', f.payment_method_type as PaymentMethodType)
      : q.where(nothing);
  }
  if (f.title !== undefined) q = q.where('title', '=', f.title);
  if (f.external_id !== undefined) q = q.where('external_id', '=', f.external_id);
  if (f.key !== undefined) q = q.where('idempotency_key', '=', f.key);
  if (f.customer_id !== undefined) q = isUuid(f.customer_id) ? q.where('customer_id', '=', f.customer_id.toLowerCase()) : q.where(nothing);
  if (f.amount !== undefined) q = q.where('amount', '=', amountFilter('filter[amount]', f.amount));
  for (const [op, value] of Object.entries(list.ranges.amount ?? {}) as [RangeOp, string][]) {
    q = q.where('amount', RANGE_SQL[op], amountFilter(`filter[amount][${op}]`, value));
  }
  if (f.created_at !== undefined) {
    const at = parseTimestampFilter('filter[created_at]', f.created_at);
    q = DATE_ONLY.test(f.created_at)
      ? q.where('created_at', '>=', at).where('created_at', '<', new Date(at.getTime() + DAY_MS))
      : q.where('created_at', '=', at);
  }
  for (const [op, value] of Object.entries(list.ranges.created_at ?? {}) as [RangeOp, string][]) {
    const key = `filter[created_at][${op}]`;
    q = DATE_ONLY.test(value)
      ? q.where('created_at', RANGE_SQL[DATE_OP[op]], dateBound(op, key, value))
      : q.where('created_at', RANGE_SQL[op], parseTimestampFilter(key, value));
  }
  return paginate(q, list, { path, query, table: 'charges', map: (row) => toChargeResponse(row, ctx.deps.config.baseUrl) });
}
