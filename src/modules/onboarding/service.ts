import type { RequestContext, ServiceScope } from '../../platform/context.ts';
import { inTransaction, type Executor } from '../../platform/db/database.ts';
import { ApiError, validationError } from '../../platform/errors/api-error.ts';
import { paginate, parseListQuery, type ListSpec } from '../../platform/lists/lists.ts';
import { inTenant, iso, type Tenant } from '../../platform/scope.ts';
import { applyTransition } from '../../platform/state-machine.ts';
import { createSubCompany, issueLiveKeys, OperatorInputError } from '../companies/service.ts';
import { putFiscalProfile } from '../fiscal/profile.ts';
import { ciiuProblem, collector, divipola, parseNit, responsibilityCode, type KybData } from './kyb.ts';
import { ONBOARDING_MACHINE, type OnboardingAction } from './lifecycle.ts';
import type { CompanyResponse, CreateCompanyBody } from './schemas.ts';
import type { OnboardingRow } from './tables.ts';
import './tables.ts';

/**
 * Companies onboarded by a platform (docs/companies.md): POST /companies with OnePay's KYB body,
 * for keys of a company the operator flagged `platform`. The new company gets test keys at once
 * (in the create response) and its test fiscal profile prefilled from the KYB data; the operator
 * reviews it (`recaudo companies review`); once active the platform takes its live keys, once,
 * with POST /companies/{id}/keys.
 */
export const COMPANY_ID = /^cmp_[0-9a-z]{26}$/;
export const companyList: ListSpec<'status', 'created_at'> = { filters: ['status'], sorts: ['created_at'] };

export function toCompanyResponse(row: OnboardingRow): CompanyResponse {
  const d = row.data;
  return {
    id: row.id,
    name: row.name,
    legal_name: row.legal_name,
    phone: d.phone,
    email: d.email,
    document_type: 'NIT',
    document_number: `${row.nit}-${row.dv}`,
    economic_activity: d.economic_activity,
    industry: d.industry,
    city_id: d.city_id,
    fiscal_responsibilities: d.fiscal_responsibilities,
    status: row.status,
    status_reason: row.status_reason,
    currency: 'COP',
    live_keys_issued: row.live_keys_issued_at !== null,
    is_test: row.environment === 'test',
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
    activated_at: row.activated_at ? iso(row.activated_at) : null,
    rejected_at: row.rejected_at ? iso(row.rejected_at) : null,
  };
}

async function requirePlatform(ctx: RequestContext): Promise<void> {
  const row = await ctx.db.selectFrom('companies').select('platform').where('id', '=', ctx.companyId).executeTakeFirst();
  if (!row?.platform) throw new ApiError('platform_only');
}

/** The body checked beyond its schema (every problem at once) and normalised. */
export function kybOf(body: CreateCompanyBody): { data: KybData; nit: string; dv: string } {
  const { errors, add } = collector();
  const nit = parseNit(body.document_number, body.dv === null || body.dv === undefined ? undefined : String(body.dv));
  if (typeof nit === 'string') add('document_number', nit);
  const activity = ciiuProblem(body.economic_activity);
  if (activity) add('economic_activity', activity);
  const city = divipola(body.city_id);
  if (!city) add('city_id', 'is not a DIVIPOLA municipality code');
  const codes: string[] = [];
  for (const value of body.fiscal_responsibilities) {
    const code = responsibilityCode(value);
    if (code) codes.push(code);
    else add('fiscal_responsibilities', `unknown DIAN responsibility code ${value}`);
  }
  const ownerDoc = body.company_owner.document_type.toLowerCase();
  if (!['cc', 'ce', 'passport', 'pasaporte'].includes(ownerDoc)) add('company_owner.document_type', 'must be cc, ce or passport');
  if (body.account && !body.account.terms) add('account.terms', 'the account holder must accept the terms (true)');
  const digits = body.phone.replace(/^\+/, '');
  const phone = body.phone.startsWith('+') ? body.phone : digits.length === 10 ? `+57${digits}` : `+${digits}`;
  if (Object.keys(errors).length || typeof nit === 'string' || !city) throw validationError(errors);
  const data: KybData = {
    type: 'organization',
    name: body.name,
    legal_name: body.legal_name,
    document_type: 'NIT',
    document_number: `${nit.nit}-${nit.dv}`,
    phone,
    email: body.email.toLowerCase(),
    website: body.website ?? null,
    economic_activity: body.economic_activity,
    industry: body.industry ?? null,
    sales: body.sales ?? null,
    fiscal_responsibilities: [...new Set(codes)],
    retention_rules: { iva: !!body.retention_rules?.iva, ica: !!body.retention_rules?.ica, fuente: !!body.retention_rules?.fuente },
    city_id: city,
    address: { address: body.address.address, hint: body.address.hint ?? null, zipcode: body.address.zipcode ?? null },
    documents: body.documents ?? {},
    company_owner: {
      name: body.company_owner.name,
      last_name: body.company_owner.last_name,
      phone: body.company_owner.phone ?? null,
      email: body.company_owner.email ?? null,
      document_type: ownerDoc === 'pasaporte' ? 'passport' : ownerDoc,
      dni: body.company_owner.dni,
    },
    account: body.account ?? null,
  };
  return { data, nit: nit.nit, dv: nit.dv };
}

export async function createOnboarding(ctx: RequestContext, body: CreateCompanyBody): Promise<CompanyResponse> {
  await requirePlatform(ctx);
  const { data, nit, dv } = kybOf(body);
  const now = ctx.deps.clock.now();
  return inTransaction(ctx.db, async (trx) => {
    const child = await createSubCompany(trx, { name: data.name, nit, parentCompanyId: ctx.companyId }, now);
    const row = await trx
      .insertInto('company_onboardings')
      .values({
        company_id: ctx.companyId,
        environment: ctx.environment,
        id: child.id,
        status: ONBOARDING_MACHINE.initial('create'),
        name: data.name,
        legal_name: data.legal_name,
        nit,
        dv,
        data: JSON.stringify(data),
        status_reason: null,
        live_keys_issued_at: null,
        reviewed_at: null,
        activated_at: null,
        rejected_at: null,
        created_at: now,
        updated_at: now,
      })
      .returningAll()
      .executeTakeFirstOrThrow();
    // The new company's test fiscal profile: the KYB issuer data over the sandbox defaults
    // (software id, PIN, regime), checked by the fiscal module's own rules.
    await putFiscalProfile(
      trx,
      ctx.deps.secrets,
      { companyId: child.id, environment: 'test' },
      {
        nit,
        dv,
        legal_name: data.legal_name,
        trade_name: data.name,
        address: { line: data.address.address, city_code: data.city_id },
        email: data.email,
        phone: data.phone,
        fiscal_responsibilities: data.fiscal_responsibilities,
      },
      now,
    );
    return { ...toCompanyResponse(row), keys: { test: child.keys } };
  });
}

async function loadOnboarding(ctx: RequestContext, id: string, lock = false): Promise<OnboardingRow> {
  if (!COMPANY_ID.test(id)) throw new ApiError('record_not_found');
  let q = ctx.db.selectFrom('company_onboardings').selectAll().where('company_id', '=', ctx.companyId).where('id', '=', id);
  if (lock) q = q.forUpdate();
  const row = await q.executeTakeFirst();
  if (!row) throw new ApiError('record_not_found');
  if (row.environment !== ctx.environment) throw new ApiError('environment_key_mismatch');
  return row;
}

export async function getOnboarding(ctx: RequestContext, id: string): Promise<CompanyResponse> {
  await requirePlatform(ctx);
  return toCompanyResponse(await loadOnboarding(ctx, id));
}

export async function listOnboardings(ctx: RequestContext, query: Record<string, unknown>, path: string) {
  await requirePlatform(ctx);
  const list = parseListQuery(companyList, query);
  let q = ctx.db.selectFrom('company_onboardings').selectAll().$call(inTenant(ctx));
  if (list.filters.status !== undefined) q = q.where('status', '=', list.filters.status as OnboardingRow['status']);
  return paginate(q, list, {
    path,
    query,
    table: 'company_onboardings',
    defaultSort: { field: 'created_at', direction: 'desc' },
    map: toCompanyResponse,
  });
}

/** POST /companies/{id}/keys: the live keys of an active company, once. */
export async function issueCompanyLiveKeys(ctx: RequestContext, id: string) {
  await requirePlatform(ctx);
  // Live secrets only to the platform's live key: a test key (a sandbox integration) never gets them.
  if (ctx.environment !== 'live') throw new ApiError('environment_key_mismatch', { message: 'Live keys are taken with the platform’s live key.' });
  return inTransaction(ctx.db, async (trx) => {
    // The onboarding must be the live key's own: one made with a test key is a sandbox company,
    // and never gets live keys (docs/companies.md; 404 environment_key_mismatch, as from the other
    // environment everywhere).
    const row = await loadOnboarding({ ...ctx, db: trx }, id, true);
    if (row.status !== 'active') throw new ApiError('company_not_active');
    if (row.live_keys_issued_at) throw new ApiError('company_keys_already_issued');
    const now = ctx.deps.clock.now();
    const keys = await issueLiveKeys(trx, row.id, now);
    await trx
      .updateTable('company_onboardings')
      .set({ live_keys_issued_at: now, updated_at: now })
      .$call(inTenant({ companyId: ctx.companyId, environment: row.environment }))
      .where('id', '=', row.id)
      .execute();
    return { company_id: row.id, environment: 'live' as const, keys };
  });
}

/** A review the operator cannot make (CLI exit code 2, control socket 400). */
export class ReviewError extends OperatorInputError {}

/**
 * The operator's review (`recaudo companies review --company ID --start|--approve|--reject`):
 * start moves pending → in_review; approve moves to active (through in_review when still
 * pending); reject (a reason required) moves pending or in_review to rejected.
 */
export async function reviewOnboarding(
  deps: ServiceScope['deps'],
  db: Executor,
  input: { company?: string; action?: 'start' | 'approve' | 'reject'; reason?: string },
): Promise<{ company: CompanyResponse; platform: string }> {
  if (!input.company) throw new ReviewError('--company is required');
  if (!input.action) throw new ReviewError('pass one of --start, --approve, --reject');
  if (input.action === 'reject' && !input.reason?.trim()) throw new ReviewError('--reason is required with --reject');
  return inTransaction(db, async (trx) => {
    const found = await trx.selectFrom('company_onboardings').selectAll().where('id', '=', input.company!).forUpdate().executeTakeFirst();
    if (!found) throw new ReviewError(`company ${input.company} was not onboarded by a platform`);
    const tenant: Tenant = { companyId: found.company_id, environment: found.environment };
    const scope: ServiceScope = { ...tenant, db: trx, deps };
    const now = deps.clock.now();
    const steps: OnboardingAction[] =
      input.action === 'start'
        ? ['review']
        : input.action === 'reject'
          ? ['reject']
          : found.status === 'pending'
            ? ['review', 'approve']
            : ['approve'];
    let row = found;
    for (const action of steps) {
      if (!ONBOARDING_MACHINE.find(row.status, action))
        throw new ReviewError(`a ${row.status} company cannot be ${input.action === 'start' ? 'put in review' : `${input.action}d`}`);
      const set: Record<string, unknown> =
        action === 'review'
          ? { reviewed_at: now }
          : action === 'approve'
            ? { activated_at: now, status_reason: null }
            : { rejected_at: now, status_reason: input.reason!.trim().slice(0, 500) };
      row = (await applyTransition(trx, scope, ONBOARDING_MACHINE, { table: 'company_onboardings', row, action, now, set: () => set })).row;
    }
    return { company: toCompanyResponse(row), platform: found.company_id };
  });
}
