import type { RequestContext } from '../../platform/context.ts';
import { ApiError } from '../../platform/errors/api-error.ts';
import { paginate, parseListQuery, parseTimestampFilter, RANGE_SQL, type ListSpec, type RangeOp } from '../../platform/lists/lists.ts';

export const eventList: ListSpec<'type' | 'created_at' | 'id', 'created_at'> = {
  filters: ['id', 'type', 'created_at'],
  sorts: ['created_at'],
  ranges: ['created_at'],
};

/** The API shape of an event is exactly its delivery body. */
import type { OutboxEvent } from '../../platform/outbox/outbox.ts';
import { findInCompany, inTenant } from '../../platform/scope.ts';

function toEvent(row: { payload: string }): OutboxEvent {
  return JSON.parse(row.payload) as OutboxEvent;
}

export async function listEvents(ctx: RequestContext, query: Record<string, unknown>, path: string) {
  const list = parseListQuery(eventList, query);
  let q = ctx.db.selectFrom('events').select(['id', 'payload', 'created_at']).$call(inTenant(ctx));
  if (list.filters.id !== undefined) q = q.where('id', '=', list.filters.id);
  if (list.filters.type !== undefined) q = q.where('type', '=', list.filters.type);
  if (list.filters.created_at !== undefined) {
    const day = parseTimestampFilter('filter[created_at]', list.filters.created_at);
    const exactDay = /^\d{4}-\d{2}-\d{2}$/.test(list.filters.created_at);
    q = exactDay ? q.where('created_at', '>=', day).where('created_at', '<', new Date(day.getTime() + 86_400_000)) : q.where('created_at', '=', day);
  }
  for (const [op, value] of Object.entries(list.ranges.created_at ?? {})) {
    q = q.where('created_at', RANGE_SQL[op as RangeOp], parseTimestampFilter(`filter[created_at][${op}]`, value as string));
  }
  return paginate(q, list, { path, query, table: 'events', map: toEvent });
}

export async function getEvent(ctx: RequestContext, id: string) {
  const row = await findInCompany(ctx, (scoped) =>
    ctx.db.selectFrom('events').select(['payload', 'environment']).$call(scoped).where('id', '=', id).executeTakeFirst(),
  );
  if (!row) throw new ApiError('record_not_found');
  if (row.environment !== ctx.environment) throw new ApiError('environment_key_mismatch');
  return toEvent(row);
}
