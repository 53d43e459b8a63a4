import type { Selectable } from 'kysely';
import type { RequestContext } from '../../platform/context.ts';
import type { ConnectLinksTable } from '../../platform/db/schema.ts';
import { validationError } from '../../platform/errors/api-error.ts';
import { prefixedId, randomToken } from '../../platform/ids.ts';
import { assertInScope, iso } from '../../platform/scope.ts';
import type { ConnectLinkResponse, CreateConnectLinkBody } from './schemas.ts';

type ConnectLinkRow = Selectable<ConnectLinksTable>;

/** Where the payer-facing connect page is served; the token is the only secret in the URL. */
export function connectUrl(baseUrl: string, token: string): string {
  return `${baseUrl}/connect/${token}`;
}

export function toConnectLinkResponse(row: ConnectLinkRow, baseUrl: string): ConnectLinkResponse {
  return {
    id: row.id,
    customer_id: row.customer_id,
    single_use: row.single_use,
    redirect_url: row.redirect_url,
    url: connectUrl(baseUrl, row.token),
    status: row.status,
    created_at: iso(row.created_at),
    is_test: row.environment === 'test',
  };
}

export async function createConnectLink(ctx: RequestContext, body: CreateConnectLinkBody): Promise<ConnectLinkResponse> {
  const customerId = body.customer_id.toLowerCase();
  const customer = await ctx.db
    .selectFrom('customers')
    .select('id')
    .where('company_id', '=', ctx.companyId)
    .where('environment', '=', ctx.environment)
    .where('id', '=', customerId)
    .where('deleted_at', 'is', null)
    .executeTakeFirst();
  if (!customer) throw validationError({ customer_id: ['no such customer in this environment'] });
  const now = ctx.deps.clock.now();
  const row = await ctx.db
    .insertInto('connect_links')
    .values({
      company_id: ctx.companyId,
      environment: ctx.environment,
      id: prefixedId('cl', now.getTime()),
      customer_id: customerId,
      single_use: body.single_use,
      redirect_url: body.redirect_url ?? null,
      token: randomToken(32),
      status: 'active',
      created_at: now,
      deleted_at: null,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
  return toConnectLinkResponse(row, ctx.deps.config.baseUrl);
}

async function loadConnectLink(ctx: RequestContext, id: string): Promise<ConnectLinkRow> {
  // Ids are opaque: anything that is not one of ours simply finds nothing (404 record_not_found).
  const row = await ctx.db.selectFrom('connect_links').selectAll().where('company_id', '=', ctx.companyId).where('id', '=', id).executeTakeFirst();
  return assertInScope(row, ctx);
}

export async function getConnectLink(ctx: RequestContext, id: string): Promise<ConnectLinkResponse> {
  return toConnectLinkResponse(await loadConnectLink(ctx, id), ctx.deps.config.baseUrl);
}

export async function deleteConnectLink(ctx: RequestContext, id: string): Promise<void> {
  const row = await loadConnectLink(ctx, id);
  await ctx.db
    .updateTable('connect_links')
    .set({ status: 'deleted', deleted_at: ctx.deps.clock.now() })
    .where('company_id', '=', ctx.companyId)
    .where('environment', '=', ctx.environment)
    .where('id', '=', row.id)
    .execute();
}
