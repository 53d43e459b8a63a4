import type { Selectable } from 'kysely';
import type { RequestContext } from '../../platform/context.ts';
import type { Executor } from '../../platform/db/database.ts';
import type { Environment } from '../../platform/db/schema.ts';
import { inTransaction } from '../../platform/db/database.ts';
import { ApiError, validationError, type FieldErrors } from '../../platform/errors/api-error.ts';
import { prefixedId } from '../../platform/ids.ts';
import { paginate, parseListQuery, type ListSpec } from '../../platform/lists/lists.ts';
import { fromBasisPoints } from '../../platform/money.ts';
import { inTenant, iso, loadInScope } from '../../platform/scope.ts';
import type { CreatePriceBody, PriceResponse, UpdatePriceBody } from './schemas.ts';
import type { PricesTable } from './tables.ts';
import { resolveTaxInput, type ResolvedTax } from './tax.ts';
import './tables.ts';

export type PriceRow = Selectable<PricesTable>;

export const PRICE_ID = /^price_[0-9a-z]{26}$/;

export const priceList: ListSpec<'active' | 'currency', 'created_at'> = { filters: ['active', 'currency'], sorts: ['created_at'] };

export function toPriceResponse(row: PriceRow): PriceResponse {
  return {
    id: row.id,
    name: row.name,
    unit_amount: Number(row.unit_amount),
    currency: row.currency,
    tax: { rate: fromBasisPoints(row.tax_rate_bp), behavior: row.tax_behavior, type: row.tax_type },
    active: row.active,
    is_test: row.environment === 'test',
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
  };
}

const NO_TAX: ResolvedTax = { type: 'iva', rateBp: 0, behavior: 'exclusive' };

function priceTax(input: CreatePriceBody['tax']): ResolvedTax {
  if (!input) return NO_TAX;
  const errors: FieldErrors = {};
  const tax = resolveTaxInput(input, 'tax', errors);
  if (!tax) throw validationError(errors);
  return tax;
}

export async function createPrice(ctx: RequestContext, body: CreatePriceBody): Promise<PriceResponse> {
  const now = ctx.deps.clock.now();
  const tax = priceTax(body.tax);
  const row = await ctx.db
    .insertInto('prices')
    .values({
      company_id: ctx.companyId,
      environment: ctx.environment,
      id: prefixedId('price', now.getTime()),
      name: body.name,
      unit_amount: BigInt(body.unit_amount),
      currency: body.currency ?? 'COP',
      tax_type: tax.type,
      tax_rate_bp: tax.rateBp,
      tax_behavior: tax.behavior,
      active: body.active ?? true,
      created_at: now,
      updated_at: now,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
  return toPriceResponse(row);
}

/** Prices of the company by id (any environment: the caller decides what another environment means). */
export async function findPrices(db: Executor, companyId: string, ids: string[]): Promise<Map<string, PriceRow>> {
  const wanted = [...new Set(ids.filter((id) => PRICE_ID.test(id)))];
  if (wanted.length === 0) return new Map();
  const rows = await db.selectFrom('prices').selectAll().where('company_id', '=', companyId).where('id', 'in', wanted).execute();
  return new Map(rows.map((r) => [r.id, r]));
}

export async function loadPrice(ctx: { db: Executor; companyId: string; environment: Environment }, id: string): Promise<PriceRow> {
  if (!PRICE_ID.test(id)) throw new ApiError('record_not_found');
  return loadInScope(ctx, (scoped) => ctx.db.selectFrom('prices').selectAll().$call(scoped).where('id', '=', id).executeTakeFirst());
}

export async function getPrice(ctx: RequestContext, id: string): Promise<PriceResponse> {
  return toPriceResponse(await loadPrice(ctx, id));
}

export async function listPrices(ctx: RequestContext, query: Record<string, unknown>, path: string) {
  const list = parseListQuery(priceList, query);
  const f = list.filters;
  let q = ctx.db.selectFrom('prices').selectAll().$call(inTenant(ctx));
  if (f.active !== undefined) {
    if (f.active !== 'true' && f.active !== 'false') throw validationError({ 'filter[active]': ['must be true or false'] });
    q = q.where('active', '=', f.active === 'true');
  }
  if (f.currency !== undefined) q = q.where('currency', '=', f.currency.toUpperCase());
  return paginate(q, list, { path, query, table: 'prices', map: toPriceResponse });
}

/** PUT /prices/{id}: unsent fields keep their value; a sent `tax` replaces the whole tax. */
export async function updatePrice(ctx: RequestContext, id: string, body: UpdatePriceBody): Promise<PriceResponse> {
  return inTransaction(ctx.db, async (trx) => {
    const current = await loadPrice({ ...ctx, db: trx }, id);
    const set: Record<string, unknown> = { updated_at: ctx.deps.clock.now() };
    if (body.name !== undefined) set.name = body.name;
    if (body.unit_amount !== undefined) set.unit_amount = BigInt(body.unit_amount);
    if (body.currency !== undefined) set.currency = body.currency;
    if (body.active !== undefined && body.active !== null) set.active = body.active;
    if (body.tax !== undefined && body.tax !== null) {
      const tax = priceTax(body.tax);
      Object.assign(set, { tax_type: tax.type, tax_rate_bp: tax.rateBp, tax_behavior: tax.behavior });
    }
    const row = await trx.updateTable('prices').set(set).$call(inTenant(ctx)).where('id', '=', current.id).returningAll().executeTakeFirstOrThrow();
    return toPriceResponse(row);
  });
}
