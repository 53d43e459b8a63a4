import type { Selectable, Transaction } from 'kysely';
import type { Executor } from '../../platform/db/database.ts';
import { inTransaction } from '../../platform/db/database.ts';
import type { DB } from '../../platform/db/schema.ts';
import { prefixedId } from '../../platform/ids.ts';
import { emitEvent, type EmitterScope } from '../../platform/outbox/outbox.ts';
import { iso, inTenant, type Tenant } from '../../platform/scope.ts';
import type { FiscalResolutionData } from '../../documents/dian/model.ts';
import { HABILITACION_RANGE } from '../../rails/index.ts';
import { addDays, bogotaDate } from './dates.ts';
import { RESOLUTION_MACHINE } from './lifecycle.ts';
import type { DocumentType, FiscalResolutionsTable } from './tables.ts';
import './tables.ts';

/**
 * Numbering resolutions and their folios (docs/invoicing.md, "Resolutions and folios"). The folio
 * counter lives on the resolution row (`next_folio`) and is advanced in the caller's transaction
 * under a row lock: a committed caller consumed exactly one folio, a rolled-back one none, so
 * folios are contiguous and never repeat however many callers run at once.
 */

export type ResolutionRow = Selectable<FiscalResolutionsTable>;

/** Event types of the alerts (src/modules/events/catalog.ts). */
export const RANGE_ALERT_EVENT = 'fiscal_resolution.range_alert';
export const EXPIRING_EVENT = 'fiscal_resolution.expiring';
export const RANGE_ALERT_THRESHOLDS = [80, 95] as const;
export const EXPIRING_DAYS = 30;

/**
 * The test environment's working resolutions: DIAN's habilitación (test set) numbering for
 * invoices (reference/dian.md) and a sandbox credit-note range with its own prefix.
 */
export const DEFAULT_TEST_RESOLUTIONS = [
  {
    document_type: 'invoice' as const,
    number: HABILITACION_RANGE.number,
    prefix: HABILITACION_RANGE.prefix,
    from: HABILITACION_RANGE.from,
    to: HABILITACION_RANGE.to,
    valid_from: HABILITACION_RANGE.validFrom,
    valid_until: HABILITACION_RANGE.validUntil,
    technical_key: HABILITACION_RANGE.technicalKey,
  },
  {
    document_type: 'credit_note' as const,
    number: '18760000002',
    prefix: 'NC',
    from: 1,
    to: 99_999_999,
    valid_from: '2019-01-19',
    valid_until: '2030-01-19',
    technical_key: null,
  },
];

/** Creates the test environment's default resolutions once (no-op in live or when they exist). */
export async function ensureDefaultResolutions(db: Executor, scope: Tenant, now: Date): Promise<void> {
  if (scope.environment !== 'test') return;
  const existing = await db.selectFrom('fiscal_resolutions').select('document_type').$call(inTenant(scope)).where('is_default', '=', true).execute();
  const missing = DEFAULT_TEST_RESOLUTIONS.filter((d) => !existing.some((e) => e.document_type === d.document_type));
  if (missing.length === 0) return;
  await db
    .insertInto('fiscal_resolutions')
    .values(
      missing.map((d, i) => ({
        company_id: scope.companyId,
        environment: 'test' as const,
        id: prefixedId('res', now.getTime() + i),
        number: d.number,
        prefix: d.prefix,
        document_type: d.document_type,
        from_folio: d.from,
        to_folio: d.to,
        valid_from: d.valid_from,
        valid_until: d.valid_until,
        technical_key: d.technical_key,
        status: RESOLUTION_MACHINE.initial('provision'),
        next_folio: d.from,
        is_default: true,
        activated_at: now,
        retired_at: null,
        alerted_80_at: null,
        alerted_95_at: null,
        alerted_expiring_at: null,
        created_at: now,
        updated_at: now,
      })),
    )
    // Concurrent first uses: the partial unique indexes make the loser a no-op.
    .onConflict((oc) => oc.doNothing())
    .execute();
}

export interface FolioCounts {
  next_folio: number | null;
  used: number;
  remaining: number;
}

/** used = folios consumed (or skipped, see docs), remaining = folios left, next_folio = null when exhausted. */
export function folioCounts(row: Pick<ResolutionRow, 'from_folio' | 'to_folio' | 'next_folio'>): FolioCounts {
  const next = BigInt(row.next_folio);
  const to = BigInt(row.to_folio);
  return {
    next_folio: next <= to ? Number(next) : null,
    used: Number(next - BigInt(row.from_folio)),
    remaining: Number(next <= to ? to - next + 1n : 0n),
  };
}

export function toResolutionData(row: ResolutionRow): FiscalResolutionData {
  return {
    number: row.number,
    prefix: row.prefix,
    from: Number(row.from_folio),
    to: Number(row.to_folio),
    validFrom: row.valid_from,
    validUntil: row.valid_until,
    technicalKey: row.technical_key,
  };
}

/** The resolution as the API shows it (and as alert events carry it). */
export function toResolutionResponse(row: ResolutionRow) {
  return {
    id: row.id,
    number: row.number,
    prefix: row.prefix,
    document_type: row.document_type,
    from: Number(row.from_folio),
    to: Number(row.to_folio),
    valid_from: row.valid_from,
    valid_until: row.valid_until,
    technical_key: row.technical_key,
    status: row.status,
    ...folioCounts(row),
    is_default: row.is_default,
    is_test: row.environment === 'test',
    activated_at: row.activated_at ? iso(row.activated_at) : null,
    retired_at: row.retired_at ? iso(row.retired_at) : null,
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
  };
}
export type ResolutionResponse = ReturnType<typeof toResolutionResponse>;

/** The day the expiry alert is due: valid_until − 30 days (Bogotá calendar). */
export function expiringAlertDate(validUntil: string): string {
  return addDays(validUntil, -EXPIRING_DAYS);
}

/**
 * Emits the alerts due on a locked active resolution, each once: 80 % and 95 % of the range used,
 * and 30 days before valid_until. Runs in the caller's transaction (allocation or the expiry job).
 */
export async function emitDueAlerts(trx: Transaction<DB>, scope: EmitterScope, row: ResolutionRow, at: Date): Promise<ResolutionRow> {
  let current = row;
  const size = BigInt(row.to_folio) - BigInt(row.from_folio) + 1n;
  const used = BigInt(row.next_folio) - BigInt(row.from_folio);
  const set: Partial<Record<'alerted_80_at' | 'alerted_95_at' | 'alerted_expiring_at', Date>> = {};
  const events: { type: string; extra: Record<string, unknown> }[] = [];
  for (const threshold of RANGE_ALERT_THRESHOLDS) {
    const column = threshold === 80 ? 'alerted_80_at' : 'alerted_95_at';
    if (row[column] === null && used * 100n >= BigInt(threshold) * size) {
      set[column] = at;
      events.push({ type: RANGE_ALERT_EVENT, extra: { threshold_percent: threshold } });
    }
  }
  const today = bogotaDate(at);
  if (row.alerted_expiring_at === null && row.status === 'active' && today >= expiringAlertDate(row.valid_until) && today <= row.valid_until) {
    set.alerted_expiring_at = at;
    const days = Math.round((Date.parse(`${row.valid_until}T00:00:00Z`) - Date.parse(`${today}T00:00:00Z`)) / 86_400_000);
    events.push({ type: EXPIRING_EVENT, extra: { days_until_expiry: days } });
  }
  if (events.length === 0) return current;
  current = await trx
    .updateTable('fiscal_resolutions')
    .set(set)
    .$call(inTenant(scope))
    .where('id', '=', row.id)
    .returningAll()
    .executeTakeFirstOrThrow();
  const data = toResolutionResponse(current);
  for (const e of events)
    await emitEvent({ companyId: scope.companyId, environment: scope.environment, deps: scope.deps, db: trx }, e.type, { ...data, ...e.extra }, at);
  return current;
}

export interface AllocatedFolio {
  resolutionId: string;
  folio: number;
  /** prefix + folio */
  number: string;
  resolution: FiscalResolutionData;
}

/**
 * Takes the next folio of the active resolution of `documentType` valid at `at` (Bogotá date), in
 * the caller's open transaction. When several active resolutions (different prefixes) qualify, the
 * most recently activated one is used. null: no active resolution valid at `at` with folios left.
 */
export async function allocateFolio(
  trx: Executor,
  scope: EmitterScope,
  documentType: 'invoice' | 'credit_note',
  at: Date,
): Promise<AllocatedFolio | null> {
  if (!trx.isTransaction) throw new Error("allocateFolio must run inside the caller's transaction");
  const tx = trx as Transaction<DB>;
  await ensureDefaultResolutions(tx, scope, at);
  const today = bogotaDate(at);
  const row = await tx
    .selectFrom('fiscal_resolutions')
    .selectAll()
    .$call(inTenant(scope))
    .where('document_type', '=', documentType satisfies DocumentType)
    .where('status', '=', 'active')
    .where('valid_from', '<=', today)
    .where('valid_until', '>=', today)
    .whereRef('next_folio', '<=', 'to_folio')
    .orderBy('activated_at', 'desc')
    .orderBy('id', 'desc')
    .limit(1)
    .forUpdate()
    .executeTakeFirst();
  if (!row) return null;
  const updated = await tx
    .updateTable('fiscal_resolutions')
    .set((eb) => ({ next_folio: eb('next_folio', '+', 1n), updated_at: at }))
    .$call(inTenant(scope))
    .where('id', '=', row.id)
    .returningAll()
    .executeTakeFirstOrThrow();
  const folio = Number(row.next_folio);
  await emitDueAlerts(tx, scope, updated, at);
  return { resolutionId: row.id, folio, number: `${row.prefix}${folio}`, resolution: toResolutionData(row) };
}

/**
 * Whether allocateFolio would find a folio for `documentType` at `at` (an active resolution valid
 * that day with folios left), without taking one: POST /invoices/{id}/stamp answers
 * resolution_not_activatable at once when it would not. The allocation itself still decides.
 */
export async function hasFolioLeft(db: Executor, scope: Tenant, documentType: 'invoice' | 'credit_note', at: Date): Promise<boolean> {
  await ensureDefaultResolutions(db, scope, at);
  const today = bogotaDate(at);
  const row = await db
    .selectFrom('fiscal_resolutions')
    .select('id')
    .$call(inTenant(scope))
    .where('document_type', '=', documentType satisfies DocumentType)
    .where('status', '=', 'active')
    .where('valid_from', '<=', today)
    .where('valid_until', '>=', today)
    .whereRef('next_folio', '<=', 'to_folio')
    .limit(1)
    .executeTakeFirst();
  return row !== undefined;
}

/** The expiry job of one resolution (scheduled at activation for valid_until − 30 days). */
export async function checkExpiry(db: Executor, scope: EmitterScope, resolutionId: string, at: Date): Promise<void> {
  await inTransaction(db, async (trx) => {
    const row = await trx
      .selectFrom('fiscal_resolutions')
      .selectAll()
      .$call(inTenant(scope))
      .where('id', '=', resolutionId)
      .forUpdate()
      .executeTakeFirst();
    if (row && row.status === 'active') await emitDueAlerts(trx, scope, row, at);
  });
}
