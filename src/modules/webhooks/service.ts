import type { Selectable } from 'kysely';
import type { AppDeps, RequestContext } from '../../platform/context.ts';
import { inTransaction } from '../../platform/db/database.ts';
import { ApiError, validationError } from '../../platform/errors/api-error.ts';
import { isUuid, prefixedId, randomToken, uuidv7 } from '../../platform/ids.ts';
import { paginate, parseListQuery, type ListSpec } from '../../platform/lists/lists.ts';
import { findInCompany, inTenant, iso } from '../../platform/scope.ts';
import { openNullable, sealSecret, type Keyring } from '../../platform/secrets.ts';
import type { CreateWebhookBody, DeliveryResponse, UpdateWebhookBody, WebhookResponse } from './schemas.ts';
import type { WebhookDeliveriesTable, WebhooksTable } from './tables.ts';
import { addressPolicy, privateAddressProblem, urlShapeProblem, type ResolveHost, type UrlProblem } from './url-safety.ts';
import { CANCEL, RETRY } from './lifecycle.ts';
import './tables.ts';

type WebhookRow = Selectable<WebhooksTable>;
type DeliveryRow = Selectable<WebhookDeliveriesTable>;

/** The API shape; the token (`header`) and the secret are sealed at rest and opened here. */
export function toWebhookResponse(secrets: Keyring, row: WebhookRow, withSecret = false): WebhookResponse {
  const out: WebhookResponse = {
    id: row.id,
    name: row.name,
    description: row.description,
    url: row.url,
    events: row.events,
    header: openNullable(secrets, row.header),
    payload_format: row.payload_format,
    is_test: row.environment === 'test',
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
  };
  if (withSecret && row.secret) out.secret = openNullable(secrets, row.secret)!;
  return out;
}

/** A webhook URL judged by its environment's rules, before the request's transaction. */
export interface CheckedUrl {
  url: string;
  problem: UrlProblem;
}

/** Stands in for DNS in the creation/update check of a runtime (tests). */
export const urlResolvers = new WeakMap<AppDeps, ResolveHost>();

/**
 * The URL rules of an environment. Resolving the host takes up to 2 s, so the routes call this
 * before the request's transaction opens: a lookup must never hold a transaction (on PGlite, the
 * only session).
 */
export async function checkWebhookUrl(deps: AppDeps, environment: 'test' | 'live', url: string): Promise<CheckedUrl> {
  const shape = urlShapeProblem(url, environment === 'live');
  if (shape || addressPolicy(deps.config, environment) === 'any') return { url, problem: shape };
  return { url, problem: await privateAddressProblem(url, urlResolvers.get(deps)) };
}

function requireCheckedUrl(checked: CheckedUrl | undefined, url: string): void {
  if (checked?.url !== url) throw new Error('webhook URL not checked before the transaction (checkWebhookUrl)');
  if (checked.problem) throw validationError({ url: [checked.problem] });
}

/** SPEC.md: a missing webhook is 404 not_found (10004); a malformed id is record_not_found. */
export async function loadWebhook(ctx: RequestContext, id: string): Promise<WebhookRow> {
  if (!isUuid(id)) throw new ApiError('record_not_found');
  const row = await findInCompany(ctx, (scoped) =>
    ctx.db.selectFrom('webhooks').selectAll().$call(scoped).where('id', '=', id.toLowerCase()).executeTakeFirst(),
  );
  if (!row || row.deleted_at) throw new ApiError('not_found');
  if (row.environment !== ctx.environment) throw new ApiError('environment_key_mismatch');
  return row;
}

export async function createWebhook(ctx: RequestContext, body: CreateWebhookBody, checked: CheckedUrl | undefined): Promise<WebhookResponse> {
  requireCheckedUrl(checked, body.url);
  const now = ctx.deps.clock.now();
  const row = await ctx.db
    .insertInto('webhooks')
    .values({
      company_id: ctx.companyId,
      environment: ctx.environment,
      id: uuidv7(now.getTime()),
      name: body.name,
      description: body.description ?? null,
      url: body.url,
      events: JSON.stringify([...new Set(body.events)]),
      header: sealSecret(ctx.deps.secrets, body.header ?? `wh_hdr_${randomToken(32)}`),
      secret: sealSecret(ctx.deps.secrets, `wh_tok_${randomToken(40)}`),
      payload_format: body.payload_format ?? 'standard',
      created_at: now,
      updated_at: now,
      deleted_at: null,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
  return toWebhookResponse(ctx.deps.secrets, row, true);
}

export async function listWebhooks(ctx: RequestContext): Promise<WebhookResponse[]> {
  const rows = await ctx.db
    .selectFrom('webhooks')
    .selectAll()
    .$call(inTenant(ctx))
    .where('deleted_at', 'is', null)
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .execute();
  return rows.map((r) => toWebhookResponse(ctx.deps.secrets, r));
}

export async function getWebhook(ctx: RequestContext, id: string): Promise<WebhookResponse> {
  return toWebhookResponse(ctx.deps.secrets, await loadWebhook(ctx, id));
}

export async function updateWebhook(
  ctx: RequestContext,
  id: string,
  body: UpdateWebhookBody,
  checked: CheckedUrl | undefined,
): Promise<WebhookResponse> {
  const current = await loadWebhook(ctx, id);
  if (body.url) requireCheckedUrl(checked, body.url);
  const set: Partial<Record<keyof WebhooksTable, unknown>> = { updated_at: ctx.deps.clock.now() };
  if (body.name) set.name = body.name;
  if (body.description !== undefined) set.description = body.description;
  if (body.url) set.url = body.url;
  if (body.events) set.events = JSON.stringify([...new Set(body.events)]);
  if (body.header) set.header = sealSecret(ctx.deps.secrets, body.header);
  if (body.payload_format) set.payload_format = body.payload_format;
  const row = await ctx.db
    .updateTable('webhooks')
    .set(set as never)
    .$call(inTenant(ctx))
    .where('id', '=', current.id)
    .returningAll()
    .executeTakeFirstOrThrow();
  return toWebhookResponse(ctx.deps.secrets, row);
}

/** Deleting a webhook cancels its pending deliveries in the same transaction. */
export async function deleteWebhook(ctx: RequestContext, id: string): Promise<void> {
  const current = await loadWebhook(ctx, id);
  const now = ctx.deps.clock.now();
  await inTransaction(ctx.db, async (trx) => {
    await trx.updateTable('webhooks').set({ deleted_at: now }).$call(inTenant(ctx)).where('id', '=', current.id).execute();
    await trx
      .updateTable('webhook_deliveries')
      .set({ status: CANCEL.to, completed_at: now, next_attempt_at: null })
      .$call(inTenant(ctx))
      .where('webhook_id', '=', current.id)
      .where('status', 'in', CANCEL.from)
      .execute();
  });
}

export const deliveryList: ListSpec<'status' | 'event' | 'event_id', 'created_at'> = {
  filters: ['status', 'event', 'event_id'],
  sorts: ['created_at'],
};

async function withAttempts(ctx: RequestContext, rows: DeliveryRow[]): Promise<DeliveryResponse[]> {
  if (rows.length === 0) return [];
  const attempts = await ctx.db
    .selectFrom('webhook_attempts')
    .select(['delivery_id', 'attempted_at', 'status_code', 'latency_ms', 'error', 'response_excerpt'])
    .$call(inTenant(ctx))
    .where(
      'delivery_id',
      'in',
      rows.map((r) => r.id),
    )
    .orderBy('attempted_at')
    .orderBy('id')
    .execute();
  return rows.map((r) => ({
    id: r.id,
    webhook_id: r.webhook_id,
    event_id: r.event_id,
    event: r.event_type,
    status: r.status,
    attempts: r.attempts,
    next_attempt_at: r.next_attempt_at && r.status === 'pending' ? iso(r.next_attempt_at) : null,
    last_status_code: r.last_status_code,
    last_error: r.last_error,
    created_at: iso(r.created_at),
    completed_at: r.completed_at ? iso(r.completed_at) : null,
    attempt_history: attempts
      .filter((a) => a.delivery_id === r.id)
      .map((a) => ({
        attempted_at: iso(a.attempted_at),
        status_code: a.status_code,
        latency_ms: a.latency_ms,
        error: a.error,
        response_excerpt: a.response_excerpt,
      })),
  }));
}

export async function listDeliveries(ctx: RequestContext, webhookId: string, query: Record<string, unknown>, path: string) {
  const webhook = await loadWebhook(ctx, webhookId);
  const list = parseListQuery(deliveryList, query);
  let q = ctx.db.selectFrom('webhook_deliveries').selectAll().$call(inTenant(ctx)).where('webhook_id', '=', webhook.id);
  if (list.filters.status !== undefined) q = q.where('status', '=', list.filters.status as DeliveryRow['status']);
  if (list.filters.event !== undefined) q = q.where('event_type', '=', list.filters.event);
  if (list.filters.event_id !== undefined) q = q.where('event_id', '=', list.filters.event_id);
  const page = await paginate(q, list, { path, query, table: 'webhook_deliveries', map: (r) => r });
  return { ...page, data: await withAttempts(ctx, page.data) };
}

/** Re-sends a delivery now. A failed or cancelled one gets exactly one more attempt. */
export async function retryDelivery(ctx: RequestContext, webhookId: string, deliveryId: string): Promise<DeliveryResponse> {
  const webhook = await loadWebhook(ctx, webhookId);
  const now = ctx.deps.clock.now();
  const row = await inTransaction(ctx.db, async (trx) => {
    const current = await trx
      .selectFrom('webhook_deliveries')
      .selectAll()
      .$call(inTenant(ctx))
      .where('webhook_id', '=', webhook.id)
      .where('id', '=', deliveryId)
      .forUpdate()
      .executeTakeFirst();
    if (!current) throw new ApiError('record_not_found', { message: 'The delivery does not exist.' });
    return trx
      .updateTable('webhook_deliveries')
      .set({
        status: RETRY.to,
        next_attempt_at: now,
        completed_at: null,
        max_attempts: current.status === 'pending' ? current.max_attempts : current.attempts + 1,
      })
      .$call(inTenant(ctx))
      .where('id', '=', current.id)
      .where('status', 'in', RETRY.from)
      .returningAll()
      .executeTakeFirstOrThrow();
  });
  ctx.notifyWorkers();
  return (await withAttempts(ctx, [row]))[0];
}

export function newDeliveryId(at: Date): string {
  return prefixedId('whd', at.getTime());
}
