import type { Transaction } from 'kysely';
import type { AppDeps, ServiceScope } from '../../platform/context.ts';
import type { DB } from '../../platform/db/schema.ts';
import { prefixedId } from '../../platform/ids.ts';
import type { EventSink, OutboxEvent } from '../../platform/outbox/outbox.ts';
import { inTenant, type Tenant } from '../../platform/scope.ts';
import { openNullable } from '../../platform/secrets.ts';
import { applyTransition } from '../../platform/state-machine.ts';
import { E164_RE } from '../../platform/validation.ts';
import { mayContactAt, nextContactWindow } from '../contact-policy/index.ts';
import { findTemplate } from '../templates/service.ts';
import { MessagingError } from '../../rails/messaging/index.ts';
import { callFlowUrl } from './call-url.ts';
import { allMatch, valueAt } from './filters.ts';
import { FLOW_RUN_MACHINE } from './lifecycle.ts';
import type { FlowRow, FlowRunRow } from './tables.ts';
import './tables.ts';

export const RUN_JOB = 'flows.run';
/** Attempts of one run (the first and its retries, 2^n s apart by the job queue), then failed. */
export const FLOW_MAX_ATTEMPTS = 8;

/**
 * The event sink (docs/flows.md "Runs"): inside the emitting transaction, one run per live flow of
 * the tenant on that event type whose filters the event's data passes, and its job. A run exists
 * exactly when its event commits; the unique (flow, event) index makes it once.
 */
export function flowSink(deps: AppDeps): EventSink {
  return {
    subscribers: (trx, scope, eventType) =>
      trx.selectFrom('flows').select(['id', 'filters']).$call(inTenant(scope)).where('event_type', '=', eventType).where('deleted_at', 'is', null),
    deliver: async (trx, scope, event, at, rows) => {
      for (const flow of rows as unknown as Pick<FlowRow, 'id' | 'filters'>[]) {
        if (!allMatch(flow.filters, event.data)) continue;
        await recordRun(trx, deps, scope, flow.id, event, at);
      }
    },
  };
}

async function recordRun(trx: Transaction<DB>, deps: AppDeps, scope: Tenant, flowId: string, event: OutboxEvent, at: Date): Promise<void> {
  const id = prefixedId('flrun', at.getTime());
  const inserted = await trx
    .insertInto('flow_runs')
    .values({
      company_id: scope.companyId,
      environment: scope.environment,
      id,
      flow_id: flowId,
      event_id: event.id,
      event_type: event.event,
      payload: JSON.stringify(event),
      status: FLOW_RUN_MACHINE.initial('create'),
      attempts: 0,
      last_status_code: null,
      last_error: null,
      next_attempt_at: at,
      created_at: at,
      updated_at: at,
      completed_at: null,
    })
    .onConflict((oc) => oc.doNothing())
    .returning('id')
    .executeTakeFirst();
  if (inserted) await deps.jobs.enqueue(trx, RUN_JOB, { company_id: scope.companyId, environment: scope.environment, run_id: id }, at);
}

type Outcome = { ok: true; statusCode?: number } | { ok: false; retryable: boolean; error: string; statusCode?: number | null };

/** Fills `{{name}}` of a template body from the flow's variable paths (missing: empty). */
export function renderTemplate(body: string, values: Record<string, string>): string {
  return body.replace(/\{\{\s*([a-z0-9_]+)\s*\}\}/gi, (_m, name: string) => values[name] ?? '');
}

function textOf(value: unknown): string {
  if (value === undefined || value === null) return '';
  return typeof value === 'object' ? JSON.stringify(value) : String(value);
}

async function sendMessage(deps: AppDeps, scope: Tenant, flow: FlowRow, run: FlowRunRow): Promise<Outcome> {
  const action = flow.action;
  if (action.type !== 'send_message') throw new Error('not a message action');
  const data = (JSON.parse(run.payload) as OutboxEvent).data;
  const to = action.to ?? textOf(valueAt(data, action.to_path ?? ''));
  if (!E164_RE.test(to)) return { ok: false, retryable: false, error: `no E.164 phone at ${action.to_path ?? 'to'}` };
  const template = await findTemplate(deps.database.db, action.template_id);
  if (!template) return { ok: false, retryable: false, error: `template ${action.template_id} no longer exists` };
  // Each variable of the template: the flow's path for it, else the event data's field of that
  // name; company_name is the company's name unless the flow maps it.
  const company = await deps.database.db.selectFrom('companies').select('name').where('id', '=', scope.companyId).executeTakeFirst();
  const variables: Record<string, string> = {};
  for (const [, name] of template.body.matchAll(/\{\{\s*([a-z0-9_]+)\s*\}\}/gi)) {
    const path = action.variables[name];
    variables[name] =
      path !== undefined ? textOf(valueAt(data, path)) : name === 'company_name' ? (company?.name ?? '') : textOf(valueAt(data, name));
  }
  try {
    await deps.rails.contact(scope).messaging.send({
      to,
      text: renderTemplate(template.body, variables),
      template: template.name,
      variables,
      // The run's id: a retried send is one message for the provider.
      reference: run.id,
    });
    return { ok: true };
  } catch (error) {
    const retryable = error instanceof MessagingError ? error.retryable : true;
    return { ok: false, retryable, error: (error as Error).message };
  }
}

async function settle(deps: AppDeps, scope: Tenant, run: FlowRunRow, action: 'succeed' | 'fail', patch: Partial<FlowRunRow>): Promise<void> {
  const now = deps.clock.now();
  const serviceScope: ServiceScope = { ...scope, db: deps.database.db, deps };
  await deps.database.db.transaction().execute(async (trx) => {
    const row = await trx.selectFrom('flow_runs').selectAll().$call(inTenant(scope)).where('id', '=', run.id).forUpdate().executeTakeFirst();
    if (!row || row.status !== 'pending') return;
    await applyTransition(trx, { ...serviceScope, db: trx }, FLOW_RUN_MACHINE, {
      table: 'flow_runs',
      row,
      action,
      now,
      set: () => ({ ...patch, completed_at: now, next_attempt_at: null }),
    });
  });
}

/**
 * The `flows.run` job: does the flow's action for one event, at least once until it succeeds
 * (a receiver deduplicates by `x-flow-run-id`/`x-webhook-id`; the messaging provider by the run
 * id), retried by the queue up to FLOW_MAX_ATTEMPTS, then failed. A message outside the contact
 * hours waits for the next window (a new job then), without spending an attempt.
 */
export async function runFlow(deps: AppDeps, payload: Record<string, unknown>, job: { attempts: number }): Promise<void> {
  const scope: Tenant = { companyId: String(payload.company_id), environment: payload.environment === 'live' ? 'live' : 'test' };
  const db = deps.database.db;
  const run = await db.selectFrom('flow_runs').selectAll().$call(inTenant(scope)).where('id', '=', String(payload.run_id)).executeTakeFirst();
  if (!run || run.status !== 'pending') return;
  const flow = await db.selectFrom('flows').selectAll().$call(inTenant(scope)).where('id', '=', run.flow_id).executeTakeFirst();
  if (!flow) return;
  const now = deps.clock.now();
  const attempt = run.attempts + 1;
  let outcome: Outcome;
  if (flow.action.type === 'send_message') {
    if (!mayContactAt(now)) {
      const at = nextContactWindow(now);
      await db.transaction().execute(async (trx) => {
        await trx.updateTable('flow_runs').set({ next_attempt_at: at, updated_at: now }).$call(inTenant(scope)).where('id', '=', run.id).execute();
        await deps.jobs.enqueue(trx, RUN_JOB, payload, at);
      });
      return;
    }
    outcome = await sendMessage(deps, scope, flow, run);
  } else {
    const answer = await callFlowUrl(
      deps,
      scope.environment,
      {
        url: flow.action.url,
        secret: openNullable(deps.secrets, flow.secret),
        eventType: run.event_type,
        eventId: run.event_id,
        flowId: flow.id,
        runId: run.id,
      },
      run.payload,
    );
    outcome =
      answer.error === null
        ? { ok: true, statusCode: answer.statusCode ?? undefined }
        : { ok: false, retryable: true, ...answer, error: answer.error };
  }
  const statusCode = outcome.statusCode ?? null;
  if (outcome.ok) return settle(deps, scope, run, 'succeed', { attempts: attempt, last_status_code: statusCode, last_error: null });
  if (!outcome.retryable || attempt >= FLOW_MAX_ATTEMPTS || job.attempts >= FLOW_MAX_ATTEMPTS) {
    return settle(deps, scope, run, 'fail', { attempts: attempt, last_status_code: statusCode, last_error: outcome.error });
  }
  await db
    .updateTable('flow_runs')
    .set({ attempts: attempt, last_status_code: statusCode, last_error: outcome.error, updated_at: now })
    .$call(inTenant(scope))
    .where('id', '=', run.id)
    .where('status', '=', 'pending')
    .execute();
  throw new Error(`flow run ${run.id} attempt ${attempt} failed: ${outcome.error}`);
}
