import type { Selectable } from 'kysely';
import type { RequestContext } from '../../platform/context.ts';
import type { ConnectLinksTable } from '../../platform/db/schema.ts';
import { validationError } from '../../platform/errors/api-error.ts';
import { prefixedId, randomToken } from '../../platform/ids.ts';
import { inTenant, iso, loadInScope } from '../../platform/scope.ts';
import { inTransaction } from '../../platform/db/database.ts';
import { applyTransition, insertWithTransition, StateMachine } from '../../platform/state-machine.ts';
import { ENROLLABLE_METHODS, type EnrollableMethod } from '../payments/allows.ts';
import type { ConnectLinkResponse, CreateConnectLinkBody } from './schemas.ts';

export type ConnectLinkRow = Selectable<ConnectLinksTable>;
type ConnectLinkStatus = ConnectLinksTable['status'];
type ConnectLinkAction = 'create' | 'use' | 'complete' | 'delete';

/**
 * A connect link's lifecycle (docs/accounts.md "Connect links"). A payer's enrollment on the page
 * (docs/pages.md "Connect-link page") emits `connect_link.completed`: a single-use link is spent
 * by it (`use`), a reusable one stays active (`complete`).
 */
export const CONNECT_LINK_MACHINE = new StateMachine<ConnectLinkStatus, ConnectLinkAction>('connect_link', [
  { from: null, action: 'create', to: 'active', events: [] },
  { from: ['active'], action: 'use', to: 'used', events: ['connect_link.completed'] },
  { from: ['active'], action: 'complete', to: 'active', events: ['connect_link.completed'] },
  { from: ['active', 'used'], action: 'delete', to: 'deleted', events: [] },
]);

/** Where the payer-facing connect page is served; the token is the only secret in the URL. */
export function connectUrl(baseUrl: string, token: string): string {
  return `${baseUrl}/connect/${token}`;
}

/** What the link's page offers, in the canonical order (a row read back as jsonb, or its text). */
export function linkAllows(row: Pick<ConnectLinkRow, 'allows'>): EnrollableMethod[] {
  const stored: unknown = typeof row.allows === 'string' ? JSON.parse(row.allows) : row.allows;
  const list = Array.isArray(stored) ? (stored as string[]) : [...ENROLLABLE_METHODS];
  return ENROLLABLE_METHODS.filter((m) => list.includes(m));
}

export function toConnectLinkResponse(row: ConnectLinkRow, baseUrl: string): ConnectLinkResponse {
  return {
    id: row.id,
    customer_id: row.customer_id,
    single_use: row.single_use,
    redirect_url: row.redirect_url,
    allows: linkAllows(row),
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
    .$call(inTenant(ctx))
    .where('id', '=', customerId)
    .where('deleted_at', 'is', null)
    .executeTakeFirst();
  if (!customer) throw validationError({ customer_id: ['no such customer in this environment'] });
  const now = ctx.deps.clock.now();
  const row = await inTransaction(ctx.db, (trx) =>
    insertWithTransition<ConnectLinkRow>(trx, ctx, CONNECT_LINK_MACHINE, {
      table: 'connect_links',
      action: 'create',
      values: {
        id: prefixedId('cl', now.getTime()),
        customer_id: customerId,
        single_use: body.single_use,
        redirect_url: body.redirect_url ?? null,
        allows: JSON.stringify(body.allows ?? ENROLLABLE_METHODS),
        token: randomToken(32),
        created_at: now,
        deleted_at: null,
      },
    }),
  );
  return toConnectLinkResponse(row, ctx.deps.config.baseUrl);
}

async function loadConnectLink(ctx: RequestContext, id: string): Promise<ConnectLinkRow> {
  // Ids are opaque: anything that is not one of ours simply finds nothing (404 record_not_found).
  return loadInScope(ctx, (scoped) => ctx.db.selectFrom('connect_links').selectAll().$call(scoped).where('id', '=', id).executeTakeFirst());
}

export async function getConnectLink(ctx: RequestContext, id: string): Promise<ConnectLinkResponse> {
  return toConnectLinkResponse(await loadConnectLink(ctx, id), ctx.deps.config.baseUrl);
}

export async function deleteConnectLink(ctx: RequestContext, id: string): Promise<void> {
  const row = await loadConnectLink(ctx, id);
  const now = ctx.deps.clock.now();
  await inTransaction(ctx.db, (trx) =>
    applyTransition(trx, ctx, CONNECT_LINK_MACHINE, {
      table: 'connect_links',
      row,
      action: 'delete',
      now,
      touch: false,
      set: () => ({ deleted_at: now }),
    }),
  );
}
