import type { RequestContext } from '../../platform/context.ts';
import { ApiError, validationError, type FieldErrors } from '../../platform/errors/api-error.ts';
import { prefixedId, randomToken } from '../../platform/ids.ts';
import { paginate, parseListQuery, type ListSpec } from '../../platform/lists/lists.ts';
import { findInCompany, inTenant, iso } from '../../platform/scope.ts';
import { openNullable, sealSecret, type Keyring } from '../../platform/secrets.ts';
import { checkWebhookUrl } from '../webhooks/service.ts';
import { findSelectableTemplate } from '../templates/service.ts';
import { filterProblems, type FlowAction, type FlowFilter } from './filters.ts';
import type { CreateFlowBody, FlowResponse, FlowRunResponse } from './schemas.ts';
import type { FlowRow, FlowRunRow } from './tables.ts';
import './tables.ts';

/**
 * Flows (docs/flows.md): automations a company configures — on an event type, when the event's
 * data passes the filters, call a URL or send a message template. Configuration, so `POST /flows`
 * takes no x-idempotency (SPEC.md); each (flow, event) runs once (sink.ts, runner.ts).
 */
export const FLOW_ID = /^flow_[0-9a-z]{26}$/;
export const flowList: ListSpec<'event', 'created_at'> = { filters: ['event'], sorts: ['created_at'] };
export const flowRunList: ListSpec<'status' | 'event_id', 'created_at'> = { filters: ['status', 'event_id'], sorts: ['created_at'] };

export function toFlowResponse(secrets: Keyring, row: FlowRow, withSecret = false): FlowResponse {
  const out: FlowResponse = {
    id: row.id,
    name: row.name,
    event: row.event_type,
    filters: row.filters,
    action: row.action,
    is_test: row.environment === 'test',
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
  };
  // Sealed at rest; opened only for the creation answer.
  if (withSecret && row.secret) out.secret = openNullable(secrets, row.secret)!;
  return out;
}

export function toFlowRunResponse(row: FlowRunRow): FlowRunResponse {
  return {
    id: row.id,
    flow_id: row.flow_id,
    event_id: row.event_id,
    event: row.event_type,
    status: row.status,
    attempts: row.attempts,
    last_status_code: row.last_status_code,
    last_error: row.last_error,
    next_attempt_at: row.next_attempt_at ? iso(row.next_attempt_at) : null,
    created_at: iso(row.created_at),
    completed_at: row.completed_at ? iso(row.completed_at) : null,
  };
}

/** Checks the body beyond its schema and resolves the action; every problem at once (422). */
async function resolveAction(ctx: RequestContext, body: CreateFlowBody, errors: FieldErrors): Promise<FlowAction | null> {
  const add = (field: string, message: string) => (errors[field] ??= []).push(message);
  const a = body.action;
  if (a.type === 'call_url') {
    // The webhooks module's URL rules for this environment (a DNS lookup: outside any transaction;
    // this route holds none, it is not idempotent).
    const checked = await checkWebhookUrl(ctx.deps, ctx.environment, a.url);
    if (checked.problem) add('action.url', checked.problem);
    return { type: 'call_url', url: a.url };
  }
  const template = await findSelectableTemplate(ctx.db, a.template);
  if (!template) add('action.template', 'is not a selectable template (GET /templates)');
  if (!!a.to === !!a.to_path) add('action.to', 'give exactly one of to (a phone) or to_path (a path of the event data)');
  return template
    ? { type: 'send_message', template_id: template.id, to: a.to ?? null, to_path: a.to_path ?? null, variables: a.variables ?? {} }
    : null;
}

export async function createFlow(ctx: RequestContext, body: CreateFlowBody): Promise<FlowResponse> {
  const errors: FieldErrors = {};
  const filters: FlowFilter[] = (body.filters ?? []).map((f) => ({ path: f.path, op: f.op, ...(f.value !== undefined ? { value: f.value } : {}) }));
  filters.forEach((f, i) => Object.assign(errors, filterProblems(f, i)));
  const action = await resolveAction(ctx, body, errors);
  if (Object.keys(errors).length || !action) throw validationError(errors);
  const now = ctx.deps.clock.now();
  const row = await ctx.db
    .insertInto('flows')
    .values({
      company_id: ctx.companyId,
      environment: ctx.environment,
      id: prefixedId('flow', now.getTime()),
      name: body.name,
      event_type: body.event,
      filters: JSON.stringify(filters),
      action: JSON.stringify(action),
      secret: action.type === 'call_url' ? sealSecret(ctx.deps.secrets, `wh_tok_${randomToken(40)}`) : null,
      created_at: now,
      updated_at: now,
      deleted_at: null,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
  return toFlowResponse(ctx.deps.secrets, row, true);
}

export async function loadFlow(ctx: RequestContext, id: string): Promise<FlowRow> {
  if (!FLOW_ID.test(id)) throw new ApiError('record_not_found');
  const row = await findInCompany(ctx, (scoped) => ctx.db.selectFrom('flows').selectAll().$call(scoped).where('id', '=', id).executeTakeFirst());
  if (!row || row.deleted_at) throw new ApiError('record_not_found');
  if (row.environment !== ctx.environment) throw new ApiError('environment_key_mismatch');
  return row;
}

export async function getFlow(ctx: RequestContext, id: string): Promise<FlowResponse> {
  return toFlowResponse(ctx.deps.secrets, await loadFlow(ctx, id));
}

export async function listFlows(ctx: RequestContext, query: Record<string, unknown>, path: string) {
  const list = parseListQuery(flowList, query);
  let q = ctx.db.selectFrom('flows').selectAll().$call(inTenant(ctx)).where('deleted_at', 'is', null);
  if (list.filters.event !== undefined) q = q.where('event_type', '=', list.filters.event);
  return paginate(q, list, {
    path,
    query,
    table: 'flows',
    defaultSort: { field: 'created_at', direction: 'desc' },
    map: (r) => toFlowResponse(ctx.deps.secrets, r),
  });
}

/** DELETE /flows/{id}: no new runs from now on; runs already recorded still finish. */
export async function deleteFlow(ctx: RequestContext, id: string): Promise<void> {
  const row = await loadFlow(ctx, id);
  const now = ctx.deps.clock.now();
  await ctx.db.updateTable('flows').set({ deleted_at: now, updated_at: now }).$call(inTenant(ctx)).where('id', '=', row.id).execute();
}

export async function listFlowRuns(ctx: RequestContext, id: string, query: Record<string, unknown>, path: string) {
  const flow = await loadFlow(ctx, id);
  const list = parseListQuery(flowRunList, query);
  let q = ctx.db.selectFrom('flow_runs').selectAll().$call(inTenant(ctx)).where('flow_id', '=', flow.id);
  if (list.filters.status !== undefined) q = q.where('status', '=', list.filters.status as FlowRunRow['status']);
  if (list.filters.event_id !== undefined) q = q.where('event_id', '=', list.filters.event_id);
  return paginate(q, list, { path, query, table: 'flow_runs', defaultSort: { field: 'created_at', direction: 'desc' }, map: toFlowRunResponse });
}
