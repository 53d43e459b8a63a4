import type { RequestContext } from '../../platform/context.ts';
import { inTransaction, type Executor } from '../../platform/db/database.ts';
import type { Environment } from '../../platform/db/schema.ts';
import { ApiError, validationError, type FieldErrors } from '../../platform/errors/api-error.ts';
import { prefixedId } from '../../platform/ids.ts';
import { paginate, parseListQuery, type ListSpec } from '../../platform/lists/lists.ts';
import { inTenant, loadInScope } from '../../platform/scope.ts';
import { bogotaDate, bogotaMidnight, isCalendarDate } from './dates.ts';
import {
  emitDueAlerts,
  ensureDefaultResolutions,
  expiringAlertDate,
  toResolutionResponse,
  type ResolutionResponse,
  type ResolutionRow,
} from './resolutions.ts';
import type { CreateResolutionBody } from './schemas.ts';
import { DOCUMENT_TYPES, RESOLUTION_STATUSES, type DocumentType } from './tables.ts';
import { applyTransition } from '../../platform/state-machine.ts';
import { RESOLUTION_MACHINE } from './lifecycle.ts';

export const EXPIRY_JOB = 'fiscal.resolution_expiry';
export const RESOLUTION_ID = /^res_[0-9a-z]{26}$/;

export const resolutionList: ListSpec<'status' | 'document_type' | 'prefix', 'created_at'> = {
  filters: ['status', 'document_type', 'prefix'],
  sorts: ['created_at'],
};

export async function createResolution(ctx: RequestContext, body: CreateResolutionBody): Promise<ResolutionResponse> {
  const errors: FieldErrors = {};
  const add = (field: string, message: string) => (errors[field] ??= []).push(message);
  if (!isCalendarDate(body.valid_from)) add('valid_from', 'is not a calendar date');
  if (!isCalendarDate(body.valid_until)) add('valid_until', 'is not a calendar date');
  if (!errors.valid_from && !errors.valid_until && body.valid_from > body.valid_until) add('valid_until', 'must not be before valid_from');
  if (body.from > body.to) add('to', 'must not be below from');
  if (body.document_type === 'invoice' && !body.technical_key) add('technical_key', 'is required for an invoice resolution');
  if (Object.keys(errors).length) throw validationError(errors);
  const now = ctx.deps.clock.now();
  await ensureDefaultResolutions(ctx.db, ctx, now);
  const row = await insertDraftResolution(
    ctx.db,
    ctx,
    {
      number: body.number,
      prefix: body.prefix ?? '',
      document_type: body.document_type,
      from: body.from,
      to: body.to,
      valid_from: body.valid_from,
      valid_until: body.valid_until,
      technical_key: body.technical_key ?? null,
    },
    now,
  );
  return toResolutionResponse(row);
}

/** A new resolution in `draft` (POST /fiscal-resolutions and `recaudo fiscal import-ranges`). */
export async function insertDraftResolution(
  db: Executor,
  scope: { companyId: string; environment: Environment },
  r: {
    number: string;
    prefix: string;
    document_type: DocumentType;
    from: number;
    to: number;
    valid_from: string;
    valid_until: string;
    technical_key: string | null;
  },
  now: Date,
): Promise<ResolutionRow> {
  return db
    .insertInto('fiscal_resolutions')
    .values({
      company_id: scope.companyId,
      environment: scope.environment,
      id: prefixedId('res', now.getTime()),
      number: r.number,
      prefix: r.prefix,
      document_type: r.document_type,
      from_folio: r.from,
      to_folio: r.to,
      valid_from: r.valid_from,
      valid_until: r.valid_until,
      technical_key: r.technical_key,
      status: RESOLUTION_MACHINE.initial('create'),
      next_folio: r.from,
      activated_at: null,
      retired_at: null,
      alerted_80_at: null,
      alerted_95_at: null,
      alerted_expiring_at: null,
      created_at: now,
      updated_at: now,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
}

async function loadResolution(ctx: RequestContext, id: string, lock = false): Promise<ResolutionRow> {
  if (!RESOLUTION_ID.test(id)) throw new ApiError('record_not_found');
  return loadInScope(ctx, (scoped) => {
    const q = ctx.db.selectFrom('fiscal_resolutions').selectAll().$call(scoped).where('id', '=', id);
    return (lock ? q.forUpdate() : q).executeTakeFirst();
  });
}

export async function getResolution(ctx: RequestContext, id: string): Promise<ResolutionResponse> {
  return toResolutionResponse(await loadResolution(ctx, id));
}

export async function listResolutions(ctx: RequestContext, query: Record<string, unknown>, path: string) {
  const list = parseListQuery(resolutionList, query);
  await ensureDefaultResolutions(ctx.db, ctx, ctx.deps.clock.now());
  const f = list.filters;
  let q = ctx.db.selectFrom('fiscal_resolutions').selectAll().$call(inTenant(ctx));
  if (f.status !== undefined) {
    if (!(RESOLUTION_STATUSES as readonly string[]).includes(f.status))
      throw validationError({ 'filter[status]': [`must be one of ${RESOLUTION_STATUSES.join(', ')}`] });
    q = q.where('status', '=', f.status as ResolutionRow['status']);
  }
  if (f.document_type !== undefined) {
    if (!(DOCUMENT_TYPES as readonly string[]).includes(f.document_type))
      throw validationError({ 'filter[document_type]': [`must be one of ${DOCUMENT_TYPES.join(', ')}`] });
    q = q.where('document_type', '=', f.document_type as ResolutionRow['document_type']);
  }
  if (f.prefix !== undefined) q = q.where('prefix', '=', f.prefix);
  return paginate(q, list, { path, query, table: 'fiscal_resolutions', map: toResolutionResponse });
}

/**
 * POST /fiscal-resolutions/{id}/activate. Refused (resolution_not_activatable) when valid_until is
 * before today (Bogotá) or no folio is left. Activating retires the active resolution with the same
 * prefix and document type; numbering continues after the highest folio that prefix already issued.
 * Activating the active resolution again answers it unchanged.
 */

export async function activateResolution(ctx: RequestContext, id: string): Promise<ResolutionResponse> {
  return inTransaction(ctx.db, async (trx) => {
    const scoped = { ...ctx, db: trx };
    const now = ctx.deps.clock.now();
    await ensureDefaultResolutions(trx, ctx, now);
    const target = await loadResolution(scoped, id);
    // Lock every resolution of the prefix and document type: concurrent activations serialize.
    const siblings = await trx
      .selectFrom('fiscal_resolutions')
      .selectAll()
      .$call(inTenant(ctx))
      .where('document_type', '=', target.document_type)
      .where('prefix', '=', target.prefix)
      .orderBy('id')
      .forUpdate()
      .execute();
    const row = siblings.find((s) => s.id === target.id)!;
    if (row.status === 'active') return toResolutionResponse(row);
    const today = bogotaDate(now);
    if (row.valid_until < today) {
      throw new ApiError('resolution_not_activatable', {
        message: `The resolution expired on ${row.valid_until}.`,
        errors: { valid_until: ['is in the past'] },
      });
    }
    // Numbers already issued under this prefix are never issued again.
    const issuedUpTo = siblings
      .filter((s) => s.id !== row.id && s.next_folio > s.from_folio)
      .reduce((max, s) => (s.next_folio - 1n > max ? s.next_folio - 1n : max), 0n);
    let next = row.next_folio;
    if (issuedUpTo >= next && issuedUpTo >= row.from_folio) next = issuedUpTo + 1n;
    if (next > row.to_folio) {
      throw new ApiError('resolution_not_activatable', {
        message: 'The resolution has no folios left.',
        errors: { to: ['no folios left in the range'] },
      });
    }
    // The active sibling (one at most: the rows are locked above) is retired first.
    for (const active of siblings.filter((r) => r.id !== row.id && RESOLUTION_MACHINE.find(r.status, 'retire'))) {
      await applyTransition(trx, scoped, RESOLUTION_MACHINE, {
        table: 'fiscal_resolutions',
        row: active,
        action: 'retire',
        now,
        set: () => ({ retired_at: now }),
      });
    }
    let activated = (
      await applyTransition(trx, scoped, RESOLUTION_MACHINE, {
        table: 'fiscal_resolutions',
        row,
        action: 'activate',
        now,
        set: () => ({ activated_at: now, retired_at: null, next_folio: next }),
      })
    ).row;
    activated = await emitDueAlerts(trx, ctx, activated, now);
    if (activated.alerted_expiring_at === null) {
      const runAt = bogotaMidnight(expiringAlertDate(activated.valid_until));
      await ctx.deps.jobs.enqueue(trx, EXPIRY_JOB, { company_id: ctx.companyId, environment: ctx.environment, resolution_id: activated.id }, runAt);
    }
    ctx.notifyWorkers();
    return toResolutionResponse(activated);
  });
}
