import { askRail, requestOrigin, runOutsideCall } from '../../platform/outside-call.ts';
import type { Transaction } from 'kysely';
import type { AppDeps, RequestContext, ServiceScope } from '../../platform/context.ts';
import { inTransaction, type Executor } from '../../platform/db/database.ts';
import type { AccountStatus, AccountSubtype, DB } from '../../platform/db/schema.ts';
import { ApiError, validationError, type FieldErrors } from '../../platform/errors/api-error.ts';
import { uuidv7 } from '../../platform/ids.ts';
import { paginate, parseListQuery, type ListSpec } from '../../platform/lists/lists.ts';
import { applyTransition, insertWithTransition, TransitionNotAllowed } from '../../platform/state-machine.ts';
import { iso, loadInScope, requireUuid, type Tenant } from '../../platform/scope.ts';
import { PLATFORM_BANK_ID } from '../banks/catalogue.ts';
import { findBank, toBankSummary, type BankRow } from '../banks/service.ts';
import { bankLogoUrl } from '../banks/logo.ts';
import { loadCustomer } from '../customers/service.ts';
import type { EnrollmentRequest } from '../../rails/index.ts';
import { bankId } from '../banks/catalogue.ts';
import { parseInstantKey } from './instant-keys.ts';
import { ACCOUNT_MACHINE, type AccountAction } from './lifecycle.ts';
import { companyExists, customerExists, findAccountView, lockAccount, selectAccountViews } from './queries.ts';
import { ACCOUNT_STATUSES, accountList, customerAccountList, type AccountResponse, type CreateAccountBody } from './schemas.ts';

export type AccountView = NonNullable<Awaited<ReturnType<typeof findAccountView>>>;

/**
 * The enrollment check (docs/accounts.md): asks the enrollment rail where a PENDING account's
 * enrollment stands and applies a final answer. The first check runs when the rail says a bank
 * usually decides; a pending answer with a time is asked again then.
 */
export const ENROLLMENT_CHECK_JOB = 'accounts.enrollment_check';
/** The job's name before it asked the rail (jobs queued by an earlier version still run). */
const LEGACY_ENROLLMENT_JOB = 'accounts.sandbox_enrollment';

const SUBTYPE_BANK_TYPE: Partial<Record<AccountSubtype, string>> = {
  SAVINGS: 'savings',
  CHECKING: 'checking',
  ELECTRONIC_DEPOSIT: 'electronic_deposit',
};
const SUBTYPE_LABEL: Record<AccountSubtype, string> = {
  SAVINGS: 'Ahorros',
  CHECKING: 'Corriente',
  ELECTRONIC_DEPOSIT: 'Depósito electrónico',
  KEY: 'Llave',
  WALLET: 'Saldo',
};

export function maskAccountNumber(value: string): string {
  return `****${value.length > 4 ? value.slice(-4) : ''}`;
}

export function toAccountResponse(v: AccountView, baseUrl: string): AccountResponse {
  return {
    id: v.id,
    title: v.title ?? `${v.bank_name ?? SUBTYPE_LABEL[v.subtype]} ${maskAccountNumber(v.account_number)}`,
    subtype: v.subtype,
    status: v.status,
    authorization: v.authorization,
    debit_authorized: v.authorization && v.status === 'ACTIVE',
    customer_id: v.customer_id,
    re_enroll: v.re_enroll,
    external_id: v.external_id,
    related_customer_id: v.related_customer_id,
    account_number: maskAccountNumber(v.account_number),
    bank_id: v.bank_id,
    bank:
      v.bank_id && v.bank_name && v.bank_logo_text && v.bank_logo_color
        ? toBankSummary({ id: v.bank_id, name: v.bank_name, logo_text: v.bank_logo_text, logo_color: v.bank_logo_color }, baseUrl)
        : null,
    customer: v.customer_ref
      ? {
          id: v.customer_ref,
          first_name: v.customer_first_name,
          last_name: v.customer_last_name,
          email: v.customer_email,
          phone: v.customer_phone,
          document_type: v.customer_document_type,
          document_number: v.customer_document_number,
          created_at: iso(v.customer_created_at!),
          is_test: v.environment === 'test',
        }
      : null,
    created_at: iso(v.created_at),
    updated_at: iso(v.updated_at),
    is_test: v.environment === 'test',
  };
}

/**
 * Moves an account along the state machine and writes its events, inside `trx`. The status update
 * is conditional on the current status, so a transition happens (and emits) at most once.
 */
async function moveAccount(trx: Transaction<DB>, scope: ServiceScope, view: AccountView, action: AccountAction): Promise<AccountResponse | null> {
  if (!ACCOUNT_MACHINE.find(view.status, action)) return null;
  const now = scope.deps.clock.now();
  // The response is the joined view (bank, customer) with the row's new status and timestamps.
  const respond = (row: AccountView) =>
    toAccountResponse({ ...view, status: row.status, updated_at: row.updated_at, deleted_at: row.deleted_at }, scope.deps.config.baseUrl);
  try {
    const { row } = await applyTransition(trx, scope, ACCOUNT_MACHINE, {
      table: 'accounts',
      row: view,
      action,
      now,
      set: () => (action === 'delete' ? { deleted_at: now } : {}),
      present: respond,
    });
    return respond(row);
  } catch (error) {
    if (error instanceof TransitionNotAllowed) return null; // it moved meanwhile: its mover emitted
    throw error;
  }
}

// ---------------------------------------------------------------------------------------------
// Create

interface ResolvedAccount {
  accountNumber: string;
  bank: BankRow | undefined;
  walletCompanyId: string | null;
}

function digitsOnly(raw: string): string {
  return raw.replace(/[\s.-]/g, '');
}

async function resolveAccount(
  ctx: RequestContext,
  body: CreateAccountBody,
  authorization: boolean,
  add: (field: string, message: string) => void,
): Promise<ResolvedAccount> {
  const subtype = body.subtype;
  let accountNumber = body.account_number;
  let bank: BankRow | undefined;
  let walletCompanyId: string | null = null;

  const lookupBank = async (id: string) => {
    const found = await findBank(ctx.db, id);
    if (!found || found.is_platform) {
      add('bank_id', 'no such bank (see GET /v1/banks)');
      return undefined;
    }
    return found;
  };

  if (subtype === 'SAVINGS' || subtype === 'CHECKING' || subtype === 'ELECTRONIC_DEPOSIT') {
    accountNumber = digitsOnly(accountNumber);
    if (subtype === 'ELECTRONIC_DEPOSIT') accountNumber = accountNumber.replace(/^\+?57(3\d{9})$/, '$1');
    if (!/^\d{4,20}$/.test(accountNumber)) add('account_number', 'must be 4 to 20 digits');
    if (!body.bank_id) {
      if (subtype !== 'ELECTRONIC_DEPOSIT') add('bank_id', `is required for ${subtype} accounts`);
    } else {
      bank = await lookupBank(body.bank_id);
      const type = SUBTYPE_BANK_TYPE[subtype]!;
      if (bank && !(bank.supported_types as string[]).includes(type)) {
        add('bank_id', `${bank.name} does not offer ${type} accounts (supported: ${(bank.supported_types as string[]).join(', ') || 'none'})`);
      } else if (bank && authorization && !bank.available) {
        add('bank_id', `${bank.name} is not available for authorized debits`);
      }
    }
  } else if (subtype === 'KEY') {
    const key = parseInstantKey(accountNumber);
    if (!key)
      add(
        'account_number',
        'must be an instant key: @alias (3 to 20 letters, digits, dots, dashes or underscores), a mobile number, an e-mail or a document number',
      );
    else accountNumber = key.value;
    if (body.bank_id) bank = await lookupBank(body.bank_id);
    else if (key && (await ctx.deps.rails.serves(ctx, 'key_directory'))) {
      // The holder's bank, from the instant-key directory when this environment has one.
      const entry = await (await ctx.deps.rails.money(ctx, 'key_directory')).lookup(key);
      if (entry) bank = await findBank(ctx.db, bankId(entry.bank_code));
    }
  } else {
    // WALLET: another company's balance; its bank is always the platform's own.
    if (!/^cmp_[0-9a-z]{1,64}$/.test(accountNumber)) add('account_number', 'must be the company id of the balance (cmp_…)');
    else if (accountNumber === ctx.companyId) add('account_number', "cannot be your own company's balance");
    else if (!(await companyExists(ctx.db, accountNumber))) add('account_number', 'no such company balance');
    else walletCompanyId = accountNumber;
    if (body.bank_id && body.bank_id.toLowerCase() !== PLATFORM_BANK_ID)
      add('bank_id', 'a WALLET account always uses the platform bank; omit bank_id');
    bank = await findBank(ctx.db, PLATFORM_BANK_ID);
  }
  return { accountNumber, bank, walletCompanyId };
}

export async function createAccount(ctx: RequestContext, body: CreateAccountBody): Promise<AccountResponse> {
  const errors: FieldErrors = {};
  const add = (field: string, message: string) => (errors[field] ??= []).push(message);
  const scope: Tenant = { companyId: ctx.companyId, environment: ctx.environment };
  const authorization = body.authorization ?? false;
  // Authorization asks the account's bank to enroll it: a live key without an enrollment
  // connector is refused before anything else (rail_not_configured).
  const enrollment = authorization ? await ctx.deps.rails.money(ctx, 'enrollment') : null;
  const reEnroll = body['re-enrollment'] ?? body.re_enrollment ?? body.re_enroll ?? false;

  const customerId = body.customer_id.toLowerCase();
  if (!(await customerExists(ctx.db, scope, customerId))) add('customer_id', 'no such customer in this environment');
  const relatedField = body.related_customer_id != null ? 'related_customer_id' : 'related_to';
  const related = (body.related_customer_id ?? body.related_to)?.toLowerCase() ?? null;
  if (related) {
    if (related === customerId) add(relatedField, "cannot be the account's own customer");
    else if (!(await customerExists(ctx.db, scope, related))) add(relatedField, 'no such customer in this environment');
  }
  const resolved = await resolveAccount(ctx, body, authorization, add);
  if (Object.keys(errors).length) throw validationError(errors);

  const now = ctx.deps.clock.now();
  const id = uuidv7(now.getTime());
  const data = await inTransaction(ctx.db, async (trx) => {
    let response: AccountResponse | undefined;
    await insertWithTransition<{ id: string }>(trx, ctx, ACCOUNT_MACHINE, {
      table: 'accounts',
      // Without debit authorization nothing is asked of the bank: a payout destination, ACTIVE at once.
      action: authorization ? 'create' : 'create_destination',
      now,
      values: {
        id,
        customer_id: customerId,
        bank_id: resolved.bank?.id ?? null,
        subtype: body.subtype,
        title: body.title ?? null,
        account_number: resolved.accountNumber,
        authorization,
        re_enroll: reEnroll,
        external_id: body.external_id ?? null,
        related_customer_id: related,
        wallet_company_id: resolved.walletCompanyId,
        created_at: now,
        updated_at: now,
        deleted_at: null,
      },
      // The event carries the joined view (bank, customer), read back in this transaction.
      present: async (row) => (response = toAccountResponse((await findAccountView(trx, scope, row.id))!, ctx.deps.config.baseUrl)),
    });
    return response!;
  });

  // The enrollment rail is asked after commit, by the check job, when its bank usually decides.
  if (enrollment) {
    const runAt = new Date(now.getTime() + enrollment.firstCheckAfterMs);
    await ctx.deps.jobs.enqueue(ctx.db, ENROLLMENT_CHECK_JOB, { company_id: ctx.companyId, environment: ctx.environment, account_id: id }, runAt);
    ctx.afterCommit(() => ctx.deps.jobs.wake());
  }
  return data;
}

function enrollmentRequest(view: AccountView): EnrollmentRequest {
  return {
    reference: view.id,
    accountNumber: view.account_number,
    holderConfirms: view.bank_connection_type === 'CONFIRMATION',
    submittedAt: new Date(view.created_at),
  };
}

/**
 * The enrollment check job: asks the rail (outside any transaction) where a PENDING account's
 * enrollment stands, then applies a final answer under the row lock (ACTIVE or REJECTED, with
 * their events). Changes nothing unless the account is still PENDING; idempotent.
 */
export async function checkEnrollment(deps: AppDeps, payload: Record<string, unknown>): Promise<void> {
  const scope: Tenant = { companyId: String(payload.company_id), environment: payload.environment === 'live' ? 'live' : 'test' };
  const id = String(payload.account_id);
  const before = await findAccountView(deps.database.db, scope, id);
  if (!before || before.deleted_at || before.status !== 'PENDING' || !before.authorization) return;
  const enrollment = await deps.rails.money(scope, 'enrollment');
  const outcome = await askRail(deps, 'enrollment', () => enrollment.status(enrollmentRequest(before)));
  if (outcome.status === 'pending') {
    if (outcome.checkAt) await deps.jobs.enqueue(deps.database.db, ENROLLMENT_CHECK_JOB, payload, outcome.checkAt);
    return; // null: it waits for the holder (POST /accounts/{id}/validate)
  }
  await deps.database.db.transaction().execute(async (trx) => {
    const locked = await lockAccount(trx, scope, id);
    if (!locked || locked.deleted_at || locked.status !== 'PENDING') return;
    const view = (await findAccountView(trx, scope, id))!;
    await moveAccount(trx, { ...scope, db: trx, deps }, view, outcome.status === 'rejected' ? 'enrollment_rejected' : 'enrollment_approved');
  });
}

export function registerAccountJobs(deps: AppDeps): void {
  deps.jobs.register(ENROLLMENT_CHECK_JOB, (payload) => checkEnrollment(deps, payload));
  deps.jobs.register(LEGACY_ENROLLMENT_JOB, (payload) => checkEnrollment(deps, payload));
}

// ---------------------------------------------------------------------------------------------
// Read, list, delete, validate

/** An account of the caller's company with SPEC.md's 404 rules (malformed, deleted, other environment). */
async function loadAccountView(ctx: RequestContext, db: Executor, id: string): Promise<AccountView> {
  const accountId = requireUuid(id);
  return loadInScope(ctx, (_filter, tenant) => findAccountView(db, tenant, accountId));
}

export async function getAccount(ctx: RequestContext, id: string): Promise<AccountResponse> {
  return toAccountResponse(await loadAccountView(ctx, ctx.db, id), ctx.deps.config.baseUrl);
}

const lastValue = (v: unknown) => (Array.isArray(v) ? v[v.length - 1] : v);

/** Plain `customer_id` / `status` query parameters are aliases of their `filter[...]` forms. */
function withPlainFilters(
  query: Record<string, unknown>,
  names: readonly string[],
): { merged: Record<string, unknown>; source: Record<string, string> } {
  const merged = { ...query };
  const source: Record<string, string> = {};
  for (const name of names) {
    const bracket = `filter[${name}]`;
    source[name] = bracket;
    if (merged[bracket] === undefined && merged[name] !== undefined) {
      merged[bracket] = lastValue(merged[name]);
      source[name] = name;
    }
    delete merged[name];
  }
  return { merged, source };
}

async function listWith<F extends 'customer_id' | 'status'>(
  ctx: RequestContext,
  spec: ListSpec<F, 'created_at' | 'updated_at'>,
  query: Record<string, unknown>,
  path: string,
  customerId?: string,
) {
  const { merged, source } = withPlainFilters(query, spec.filters);
  const list = parseListQuery(spec, merged);
  const filters = list.filters as Partial<Record<'customer_id' | 'status', string>>;
  let q = selectAccountViews(ctx.db, ctx).where('accounts.deleted_at', 'is', null);
  if (customerId) q = q.where('accounts.customer_id', '=', customerId);
  if (filters.customer_id !== undefined) {
    if (!/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(filters.customer_id))
      throw validationError({ [source.customer_id]: ['must be a UUID'] });
    q = q.where('accounts.customer_id', '=', filters.customer_id.toLowerCase());
  }
  if (filters.status !== undefined) {
    const status = filters.status.toUpperCase() as AccountStatus;
    if (!ACCOUNT_STATUSES.includes(status)) throw validationError({ [source.status]: [`must be one of ${ACCOUNT_STATUSES.join(', ')}`] });
    q = q.where('accounts.status', '=', status);
  }
  const baseUrl = ctx.deps.config.baseUrl;
  return paginate(q, list, { path, query, table: 'accounts', map: (row) => toAccountResponse(row, baseUrl) });
}

export async function listAccounts(ctx: RequestContext, query: Record<string, unknown>, path: string) {
  return listWith(ctx, accountList, query, path);
}

export async function listCustomerAccounts(ctx: RequestContext, customerId: string, query: Record<string, unknown>, path: string) {
  const customer = await loadCustomer(ctx, customerId);
  return listWith(ctx, customerAccountList, query, path, customer.id);
}

export async function deleteAccount(ctx: RequestContext, id: string): Promise<void> {
  const accountId = requireUuid(id);
  await inTransaction(ctx.db, async (trx) => {
    await lockAccount(trx, ctx, accountId);
    const view = await loadAccountView(ctx, trx, accountId);
    const done = await moveAccount(trx, ctx, view, 'delete');
    if (!done) throw new ApiError('record_not_found');
  });
}

/**
 * POST /accounts/{id}/validate: the holder confirms the enrollment of a wallet account. The
 * holder's code goes to the enrollment rail through the outside-call protocol: checked first (a
 * refusal changes nothing), asked with a deadline outside any transaction, then saved with the
 * account locked (another change meanwhile: read it again).
 */
export async function validateAccount(ctx: RequestContext, id: string, otp: string | null | undefined): Promise<AccountResponse> {
  const accountId = requireUuid(id);
  // Which account first (404 record_not_found / environment_key_mismatch), then the rail: refused
  // in live without an enrollment connector before anything else.
  await loadAccountView(ctx, ctx.db, accountId);
  const enrollment = await ctx.deps.rails.money(ctx, 'enrollment');
  const result = await runOutsideCall(requestOrigin(ctx), {
    rail: 'enrollment',
    record: async (trx) => {
      const view = await loadAccountView(ctx, trx, accountId);
      // What the account is comes before where it stands: a payout destination (authorization
      // false) is ACTIVE at once, and still answers that it has nothing to validate.
      if (view.bank_connection_type !== 'CONFIRMATION') {
        throw validationError({
          bank_id: [`${view.bank_name ?? 'this account'} connects without the holder's confirmation; there is nothing to validate`],
        });
      }
      if (!view.authorization)
        throw validationError({
          authorization: ['the account was created with authorization false: the holder never received the enrollment request'],
        });
      if (view.status !== 'PENDING') throw validationError({ status: [`the account is ${view.status}; only a PENDING account can be validated`] });
      return { recorded: view, resourceId: view.id, safetyJobId: null };
    },
    call: (view) => enrollment.confirmHolder(enrollmentRequest(view), otp ?? null),
    settle: async (trx, _view, confirmed): Promise<AccountResponse | 'wrong_code' | 'changed'> => {
      if (!confirmed) return 'wrong_code';
      await lockAccount(trx, ctx, accountId);
      const view = await loadAccountView(ctx, trx, accountId);
      return (await moveAccount(trx, { ...ctx, db: trx }, view, 'holder_validated')) ?? 'changed';
    },
    unknown: (_view, error) => {
      throw new ApiError('service_unavailable', {
        message: `The bank did not answer (${(error as Error)?.message}); validate again with the same code.`,
      });
    },
    lost: () => new ApiError('service_unavailable', { message: 'The bank answered but the result could not be saved; validate again.' }),
  });
  if (result === 'wrong_code') throw validationError({ otp: ['is not the code the holder received'] });
  if (result === 'changed') throw validationError({ status: ['the account changed state; read it again'] });
  return result;
}

/** GET /accounts/rtkey/{key}: the environment's instant-key directory (the sandbox's with a test key). */
export async function lookupInstantKey(ctx: RequestContext, raw: string) {
  const directory = await ctx.deps.rails.money(ctx, 'key_directory');
  const key = parseInstantKey(raw);
  const entry = key ? await directory.lookup(key) : null;
  if (!entry) throw new ApiError('record_not_found');
  const bank = await findBank(ctx.db, bankId(entry.bank_code));
  if (!bank) throw new ApiError('record_not_found');
  return {
    document_type: entry.document_type,
    document_number: entry.document_number,
    first_name: entry.first_name,
    last_name: entry.last_name,
    status: entry.status,
    key_type: entry.key_type,
    key_value: entry.key_value,
    bank: { id: bank.id, name: bank.name, logo: bankLogoUrl(ctx.deps.config.baseUrl, bank.id) },
  };
}
