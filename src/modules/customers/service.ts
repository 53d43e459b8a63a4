import type { Selectable } from 'kysely';
import type { RequestContext } from '../../platform/context.ts';
import type { CustomersTable } from '../../platform/db/schema.ts';
import { inTransaction, type Executor } from '../../platform/db/database.ts';
import { validationError } from '../../platform/errors/api-error.ts';
import { uuidv7 } from '../../platform/ids.ts';
import { paginate, parseListQuery, type ListSpec } from '../../platform/lists/lists.ts';
import { normalizeMetadata } from '../../platform/validation.ts';
import { inTenant, iso, loadInScope, requireUuid, type Tenant } from '../../platform/scope.ts';
import type { CreateCustomerBody, CustomerResponse, UpdateCustomerBody } from './schemas.ts';
import { customerRuleErrors, type CustomerShape } from './validate.ts';
import { usableClock } from '../test-clocks/service.ts';

type CustomerRow = Selectable<CustomersTable>;

export const customerList: ListSpec<'email' | 'document_number' | 'phone' | 'id', 'created_at' | 'updated_at'> = {
  filters: ['id', 'email', 'document_number', 'phone'],
  sorts: ['created_at', 'updated_at'],
};

export function toCustomerResponse(row: CustomerRow): CustomerResponse {
  return {
    id: row.id,
    type: row.type,
    user_type: row.type,
    first_name: row.first_name,
    last_name: row.last_name,
    email: row.email,
    phone: row.phone,
    document_type: row.document_type,
    document_number: row.document_number,
    document_verification: row.document_verification,
    address: row.address ? { line: row.address.line ?? null, city_code: row.address.city_code ?? '' } : null,
    fiscal_responsibilities: row.fiscal_responsibilities ?? [],
    related_to: row.related_to,
    tax_regime: row.tax_regime,
    metadata: row.metadata ?? {},
    test_clock: row.test_clock ?? null,
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
    is_test: row.environment === 'test',
  };
}

function inferType(body: { type?: string | null; user_type?: string | null; document_type?: string | null }, current?: string) {
  const explicit = body.type ?? body.user_type;
  if (explicit) return explicit as 'natural' | 'company';
  if (body.document_type) return body.document_type === 'NIT' ? 'company' : 'natural';
  return (current as 'natural' | 'company' | undefined) ?? 'natural';
}

async function checkRelated(ctx: RequestContext, relatedTo: string | null | undefined, selfId?: string) {
  if (!relatedTo) return;
  if (relatedTo.toLowerCase() === selfId) throw validationError({ related_to: ['cannot be the customer itself'] });
  const row = await ctx.db
    .selectFrom('customers')
    .select('id')
    .$call(inTenant(ctx))
    .where('id', '=', relatedTo.toLowerCase())
    .where('deleted_at', 'is', null)
    .executeTakeFirst();
  if (!row) throw validationError({ related_to: ['no such customer'] });
}

function assertRules(shape: CustomerShape) {
  const errors = customerRuleErrors(shape);
  if (Object.keys(errors).length) throw validationError(errors);
}

export async function createCustomer(ctx: RequestContext, body: CreateCustomerBody): Promise<CustomerResponse> {
  const now = ctx.deps.clock.now();
  const shape: CustomerShape = {
    type: inferType(body),
    document_type: body.document_type ?? null,
    document_number: body.document_number ?? null,
    document_verification: body.document_verification ?? null,
    address: body.address ?? null,
    fiscal_responsibilities: body.fiscal_responsibilities ?? null,
    tax_regime: body.tax_regime ?? null,
  };
  assertRules(shape);
  await checkRelated(ctx, body.related_to);
  const testClock = body.test_clock ? await usableClock(ctx.db, ctx, body.test_clock) : null;
  const metadata = normalizeMetadata(body.metadata);
  const row = await ctx.db
    .insertInto('customers')
    .values({
      company_id: ctx.companyId,
      environment: ctx.environment,
      id: uuidv7(now.getTime()),
      type: shape.type,
      first_name: body.first_name,
      last_name: body.last_name ?? null,
      email: body.email?.toLowerCase() ?? null,
      phone: body.phone ?? null,
      document_type: shape.document_type,
      document_number: shape.document_number,
      document_verification: shape.document_verification,
      address: body.address ? JSON.stringify({ line: body.address.line ?? null, city_code: body.address.city_code }) : null,
      fiscal_responsibilities: shape.fiscal_responsibilities ? JSON.stringify(shape.fiscal_responsibilities) : null,
      related_to: body.related_to?.toLowerCase() ?? null,
      tax_regime: shape.tax_regime,
      metadata: metadata ? JSON.stringify(metadata) : null,
      test_clock: testClock,
      created_at: now,
      updated_at: now,
      deleted_at: null,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
  return toCustomerResponse(row);
}

/** Loads a live customer of the caller's company, with SPEC.md's 404 rules. */
export async function loadCustomer(ctx: RequestContext, id: string): Promise<CustomerRow> {
  const customerId = requireUuid(id);
  return loadInScope(ctx, (scoped) => ctx.db.selectFrom('customers').selectAll().$call(scoped).where('id', '=', customerId).executeTakeFirst());
}

/**
 * The customer as a payer at a rail (PSE asks for the identity document): null when it does not
 * exist in the tenant. Deleted customers are still payers of the charges they have.
 */
export async function customerAsPayer(
  db: Executor,
  scope: Tenant,
  id: string,
): Promise<{
  kind: 'natural' | 'company';
  documentType: string | null;
  documentNumber: string | null;
  fullName: string;
  email: string | null;
  phone: string | null;
} | null> {
  const row = await db.selectFrom('customers').selectAll().$call(inTenant(scope)).where('id', '=', id).executeTakeFirst();
  if (!row) return null;
  return {
    kind: row.type,
    documentType: row.document_type,
    documentNumber: row.document_number,
    fullName: [row.first_name, row.last_name].filter(Boolean).join(' ').trim(),
    email: row.email,
    phone: row.phone,
  };
}

export async function getCustomer(ctx: RequestContext, id: string): Promise<CustomerResponse> {
  return toCustomerResponse(await loadCustomer(ctx, id));
}

export async function listCustomers(ctx: RequestContext, query: Record<string, unknown>, path: string) {
  const list = parseListQuery(customerList, query);
  let q = ctx.db.selectFrom('customers').selectAll().$call(inTenant(ctx)).where('deleted_at', 'is', null);
  const f = list.filters;
  if (f.id !== undefined) q = q.where('id', '=', /^[0-9a-f-]{36}$/i.test(f.id) ? f.id.toLowerCase() : '00000000-0000-0000-0000-000000000000');
  if (f.email !== undefined) q = q.where('email', '=', f.email.toLowerCase());
  if (f.document_number !== undefined) q = q.where('document_number', '=', f.document_number);
  if (f.phone !== undefined) q = q.where('phone', '=', f.phone);
  return paginate(q, list, { path, query, table: 'customers', map: toCustomerResponse });
}

export async function updateCustomer(ctx: RequestContext, id: string, body: UpdateCustomerBody): Promise<CustomerResponse> {
  return inTransaction(ctx.db, async (trx) => {
    const scoped = { ...ctx, db: trx };
    const current = await loadCustomer(scoped, id);
    await trx.selectFrom('customers').select('id').$call(inTenant(ctx)).where('id', '=', current.id).forUpdate().execute();
    const pick = <K extends keyof UpdateCustomerBody>(key: K, fallback: unknown) => (body[key] === undefined ? fallback : body[key]);
    const shape: CustomerShape = {
      type: body.type || body.user_type ? inferType(body) : current.type,
      document_type: pick('document_type', current.document_type) as string | null,
      document_number: pick('document_number', current.document_number) as string | null,
      document_verification: pick('document_verification', current.document_verification) as string | null,
      address: pick('address', current.address) as CustomerShape['address'],
      fiscal_responsibilities: pick('fiscal_responsibilities', current.fiscal_responsibilities) as string[] | null,
      tax_regime: pick('tax_regime', current.tax_regime) as string | null,
    };
    if (body.first_name === null) throw validationError({ first_name: ['cannot be removed'] });
    assertRules(shape);
    await checkRelated(scoped, body.related_to, current.id);
    const now = ctx.deps.clock.now();
    const set: Record<string, unknown> = { updated_at: now, type: shape.type };
    for (const key of ['first_name', 'last_name', 'phone', 'document_type', 'document_number', 'document_verification', 'tax_regime'] as const) {
      if (body[key] !== undefined) set[key] = body[key];
    }
    if (body.email !== undefined) set.email = body.email?.toLowerCase() ?? null;
    if (body.related_to !== undefined) set.related_to = body.related_to?.toLowerCase() ?? null;
    if (body.address !== undefined)
      set.address = body.address ? JSON.stringify({ line: body.address.line ?? null, city_code: body.address.city_code }) : null;
    if (body.fiscal_responsibilities !== undefined)
      set.fiscal_responsibilities = body.fiscal_responsibilities ? JSON.stringify(body.fiscal_responsibilities) : null;
    if (body.metadata !== undefined) {
      const m = normalizeMetadata(body.metadata);
      set.metadata = m ? JSON.stringify(m) : null;
    }
    const row = await trx
      .updateTable('customers')
      .set(set)
      .$call(inTenant(ctx))
      .where('id', '=', current.id)
      .returningAll()
      .executeTakeFirstOrThrow();
    return toCustomerResponse(row);
  });
}

export async function deleteCustomer(ctx: RequestContext, id: string): Promise<void> {
  const current = await loadCustomer(ctx, id);
  await ctx.db.updateTable('customers').set({ deleted_at: ctx.deps.clock.now() }).$call(inTenant(ctx)).where('id', '=', current.id).execute();
}
