import { z } from 'zod';
import type { AppDeps } from '../../platform/context.ts';
import { inTransaction, type Executor } from '../../platform/db/database.ts';
import { ApiError, validationError } from '../../platform/errors/api-error.ts';
import { prefixedId } from '../../platform/ids.ts';
import type { ClockBinding } from '../../platform/jobs/queue.ts';
import { paginate, parseListQuery, type ListSpec } from '../../platform/lists/lists.ts';
import { findInCompany, inTenant, iso, type Tenant } from '../../platform/scope.ts';
import { parseTimestamp } from '../payments/validate.ts';
import type { TestClockRow } from './tables.ts';
import './tables.ts';

/**
 * Test clocks (docs/subscriptions.md "Test clocks"): simulated time for test customers. A customer
 * created with `test_clock` lives on it; what is scheduled for it (cycles, dunning checks, trial
 * starts) is a job bound to the clock, parked until an advance passes its time. An advance runs
 * those jobs in time order in the background (`advancing`), each seeing its own time as "now",
 * then the clock is `ready` at the new time.
 */
export const ADVANCE_JOB = 'test_clocks.advance';
export const TEST_CLOCK_ID = /^clock_[0-9a-z]{26}$/;
/** How far one advance may go (and how far from now a clock may start): five years. */
const MAX_SPAN_MS = 5 * 366 * 86_400_000;

/** What the clock operations need: a request context is one, and so is the operator CLI's. */
export interface ClockContext extends Tenant {
  db: Executor;
  deps: AppDeps;
  isTest: boolean;
  notifyWorkers?: () => void;
}

export const testClockList: ListSpec<'status', 'created_at'> = { filters: ['status'], sorts: ['created_at'] };

export const frozenTime = z
  .union([z.number().int().min(0).max(253_402_300_799), z.string().max(40)])
  .describe('unix seconds (as Stripe sends it) or ISO 8601 (without an offset: Bogotá time)');

export const testClockResponse = z.object({
  id: z.string().describe('clock_…'),
  object: z.literal('test_clock'),
  name: z.string().nullable(),
  frozen_time: z.string().describe('the simulated time (ISO 8601)'),
  status: z.enum(['ready', 'advancing']),
  advancing_to: z.string().nullable(),
  created_at: z.string(),
  updated_at: z.string(),
});
export type TestClockResponse = z.infer<typeof testClockResponse>;

export function toTestClockResponse(row: TestClockRow): TestClockResponse {
  return {
    id: row.id,
    object: 'test_clock',
    name: row.name,
    frozen_time: iso(row.frozen_time),
    status: row.status,
    advancing_to: row.advance_to ? iso(row.advance_to) : null,
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
  };
}

function parseFrozenTime(value: number | string): Date {
  const at = typeof value === 'number' ? new Date(value * 1000) : parseTimestamp(value);
  if (!at || Number.isNaN(at.getTime())) throw validationError({ frozen_time: ['must be unix seconds or an ISO 8601 timestamp'] });
  return at;
}

function testOnly(ctx: ClockContext): void {
  if (!ctx.isTest) throw new ApiError('test_only', { message: 'Test clocks exist only with a test key.' });
}

export async function createTestClock(ctx: ClockContext, body: { frozen_time: number | string; name?: string | null }): Promise<TestClockResponse> {
  testOnly(ctx);
  const at = parseFrozenTime(body.frozen_time);
  const now = ctx.deps.clock.now();
  if (Math.abs(at.getTime() - now.getTime()) > MAX_SPAN_MS) throw validationError({ frozen_time: ['must be within five years of now'] });
  const row = await ctx.db
    .insertInto('test_clocks')
    .values({
      company_id: ctx.companyId,
      environment: 'test',
      id: prefixedId('clock', now.getTime()),
      name: body.name ?? null,
      frozen_time: at,
      status: 'ready',
      advance_to: null,
      created_at: now,
      updated_at: now,
      deleted_at: null,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
  return toTestClockResponse(row);
}

async function findClock(db: Executor, scope: Tenant, id: string): Promise<TestClockRow | undefined> {
  if (!TEST_CLOCK_ID.test(id)) return undefined;
  return findInCompany(scope, (scoped) =>
    db.selectFrom('test_clocks').selectAll().$call(scoped).where('id', '=', id).where('deleted_at', 'is', null).executeTakeFirst(),
  );
}

/** A clock of the company: with a live key it is the other environment's (404, as every resource). */
async function loadClock(ctx: ClockContext, id: string): Promise<TestClockRow> {
  const row = await findClock(ctx.db, ctx, id);
  if (!row) throw new ApiError('record_not_found');
  if (!ctx.isTest) throw new ApiError('environment_key_mismatch');
  return row;
}

export async function getTestClock(ctx: ClockContext, id: string): Promise<TestClockResponse> {
  return toTestClockResponse(await loadClock(ctx, id));
}

export async function listTestClocks(ctx: ClockContext, query: Record<string, unknown>, path: string) {
  testOnly(ctx);
  const list = parseListQuery(testClockList, query);
  let q = ctx.db.selectFrom('test_clocks').selectAll().$call(inTenant(ctx)).where('deleted_at', 'is', null);
  if (list.filters.status !== undefined) q = q.where('status', '=', list.filters.status as TestClockRow['status']);
  return paginate(q, list, { path, query, table: 'test_clocks', map: toTestClockResponse });
}

/** POST /test-clocks/{id}/advance: forward only, one advance at a time; answers `advancing`. */
export async function advanceTestClock(ctx: ClockContext, id: string, body: { frozen_time: number | string }): Promise<TestClockResponse> {
  const found = await loadClock(ctx, id);
  const to = parseFrozenTime(body.frozen_time);
  return inTransaction(ctx.db, async (trx) => {
    const row = await trx.selectFrom('test_clocks').selectAll().where('id', '=', found.id).forUpdate().executeTakeFirstOrThrow();
    if (row.status === 'advancing') throw validationError({ frozen_time: ['the clock is still advancing; wait until it is ready'] });
    if (to.getTime() <= new Date(row.frozen_time).getTime())
      throw validationError({ frozen_time: ['must be after the clock’s current frozen_time'] });
    if (to.getTime() - new Date(row.frozen_time).getTime() > MAX_SPAN_MS)
      throw validationError({ frozen_time: ['one advance goes at most five years'] });
    const now = ctx.deps.clock.now();
    const updated = await trx
      .updateTable('test_clocks')
      .set({ status: 'advancing', advance_to: to, updated_at: now })
      .where('id', '=', row.id)
      .returningAll()
      .executeTakeFirstOrThrow();
    await ctx.deps.jobs.enqueue(trx, ADVANCE_JOB, { clock_id: row.id });
    ctx.notifyWorkers?.();
    return toTestClockResponse(updated);
  });
}

/** DELETE /test-clocks/{id}: nothing scheduled on it runs any more; its customers stay. */
export async function deleteTestClock(ctx: ClockContext, id: string): Promise<void> {
  const row = await loadClock(ctx, id);
  await inTransaction(ctx.db, async (trx) => {
    await trx
      .updateTable('test_clocks')
      .set({ deleted_at: ctx.deps.clock.now(), updated_at: ctx.deps.clock.now() })
      .where('id', '=', row.id)
      .execute();
    await ctx.deps.jobs.dropClock(trx, row.id);
  });
}

/** The advance job: runs the clock's jobs up to the target, moving frozen_time along, then ready. */
export async function runAdvance(deps: AppDeps, payload: Record<string, unknown>, onJob?: (at: Date) => void): Promise<void> {
  const id = String(payload.clock_id);
  const db = deps.database.db;
  const row = await db.selectFrom('test_clocks').selectAll().where('id', '=', id).executeTakeFirst();
  if (!row || row.deleted_at || row.status !== 'advancing' || !row.advance_to) return;
  const target = new Date(row.advance_to);
  const { failedAt } = await deps.jobs.runClock(id, target, {
    onJob: async (at) => {
      onJob?.(at);
      await db.updateTable('test_clocks').set({ frozen_time: at }).where('id', '=', id).where('frozen_time', '<', at).execute();
    },
  });
  await db
    .updateTable('test_clocks')
    .set({ frozen_time: failedAt ?? target, status: 'ready', advance_to: null, updated_at: deps.clock.now() })
    .where('id', '=', id)
    .execute();
  deps.jobs.wake(); // the events and messages of what ran
}

/**
 * A customer's clock for another module: the binding its scheduled jobs carry and its current
 * simulated time. Null when the customer lives in real time.
 */
export async function clockOf(db: Executor, scope: Tenant, clockId: string | null): Promise<{ binding: ClockBinding; now: Date } | null> {
  if (!clockId) return null;
  const row = await db.selectFrom('test_clocks').select(['id', 'frozen_time']).$call(inTenant(scope)).where('id', '=', clockId).executeTakeFirst();
  if (!row) return null;
  return { binding: { clockId: row.id }, now: new Date(row.frozen_time) };
}

/** Validates the `test_clock` of a new customer: a live clock of the company, test keys only. */
export async function usableClock(db: Executor, scope: Tenant & { isTest: boolean }, clockId: string): Promise<string> {
  if (!scope.isTest) throw validationError({ test_clock: ['test clocks exist only with a test key'] });
  const row = await findClock(db, scope, clockId);
  if (!row || row.environment !== 'test') throw validationError({ test_clock: ['no such test clock'] });
  return row.id;
}

export function registerTestClockJobs(deps: AppDeps): void {
  deps.jobs.register(ADVANCE_JOB, (payload) => runAdvance(deps, payload));
}
