import { sql } from 'kysely';
import type { AppDeps } from '../../platform/context.ts';
import { ApiError } from '../../platform/errors/api-error.ts';
import { OperatorInputError } from '../companies/service.ts';
import { describeFieldErrors, scopeOf } from '../companies/operator.ts';
import { ADVANCE_JOB, advanceTestClock, createTestClock, getTestClock, runAdvance, type ClockContext, type TestClockResponse } from './service.ts';

export interface TestClockCommand {
  action: 'create' | 'advance';
  company?: string;
  frozen_time?: string;
  name?: string;
  clock?: string;
}

/** `--frozen-time`: unix seconds or ISO 8601, as the API takes it. */
const frozenTimeOf = (value: string | undefined): number | string => {
  if (!value) throw new OperatorInputError('--frozen-time is required (unix seconds or ISO 8601)');
  return /^\d{1,12}$/.test(value) ? Number(value) : value;
};

/**
 * `recaudo test-clock create|advance` (the CLI and the server's control socket), with the rules of
 * the API (test environment only). `inProcess`: this process runs the advance itself and answers
 * when the clock is ready, reporting what ran; through a server, its workers run it (advancing).
 */
export async function testClockOperator(
  deps: AppDeps,
  input: TestClockCommand,
  opts: { inProcess: boolean; onProgress?: (line: string) => void } = { inProcess: false },
): Promise<{ test_clock: TestClockResponse; progress: string[] }> {
  const db = deps.database.db;
  const scope = await scopeOf(db, { company: input.company ?? '', env: 'test' });
  const ctx: ClockContext = { ...scope, db, deps, isTest: true, notifyWorkers: () => deps.jobs.wake() };
  const progress: string[] = [];
  const say = (line: string) => {
    progress.push(line);
    opts.onProgress?.(line);
  };
  try {
    if (input.action === 'create')
      return { test_clock: await createTestClock(ctx, { frozen_time: frozenTimeOf(input.frozen_time), name: input.name }), progress };
    if (!input.clock) throw new OperatorInputError('--clock is required');
    const started = await advanceTestClock(ctx, input.clock, { frozen_time: frozenTimeOf(input.frozen_time) });
    say(`advancing ${started.id} to ${started.advancing_to}...`);
    if (!opts.inProcess) return { test_clock: started, progress };
    // This process runs the advance now (the queued job would find the clock ready and do nothing).
    await db
      .deleteFrom('jobs')
      .where('kind', '=', ADVANCE_JOB)
      .where(sql<string>`payload->>'clock_id'`, '=', started.id)
      .execute();
    let ran = 0;
    await runAdvance(deps, { clock_id: started.id }, (at) => {
      ran++;
      if (ran % 100 === 0) say(`${ran} scheduled jobs run, clock at ${at.toISOString()}`);
    });
    const done = await getTestClock(ctx, started.id);
    say(`ready at ${done.frozen_time} (${ran} scheduled jobs run)`);
    return { test_clock: done, progress };
  } catch (error) {
    if (error instanceof ApiError) {
      const details = describeFieldErrors(error.errors);
      throw new OperatorInputError(details ? `invalid test clock command:\n  ${details}` : error.message);
    }
    throw error;
  }
}
