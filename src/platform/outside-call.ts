import type { Transaction } from 'kysely';
import type { AppDeps, RequestContext, ServiceScope } from './context.ts';
import { inTransaction } from './db/database.ts';
import type { DB } from './db/schema.ts';

/**
 * THE protocol of a call to an outside system (a payment rail, the tax authority), in five steps
 * (docs/architecture.md "Calling an outside system"):
 *
 *   1. record: the intent and its safety job (the reconciler that will settle the call if this run
 *      never does), in one transaction;
 *   2. commit: the record is durable before anything leaves (a request commits its idempotency
 *      transaction early with the claim, so a retry of the key answers the recorded resource and
 *      never calls again);
 *   3. call: outside any transaction, bounded by a deadline;
 *   4. settle: the answer in one transaction (state, ledger and outbox through the state machine),
 *      which also removes the safety job;
 *   5. reconcile: when the outcome is unknown (the call threw or missed its deadline) nothing is
 *      guessed: the run answers what was recorded and the safety job asks the rail later.
 *
 * The steps that touch the database get their transaction as a parameter and the call gets none,
 * so whether code runs inside a transaction is visible in its signature.
 */
export interface OutsideCall<Recorded, Outcome, Result> {
  /** What is called (logs): `card`, `banklink`, `tax_authority`... */
  rail: string;
  /** Step 1. `resourceId` names what was recorded (a retry of the request's key answers it). */
  record(trx: Transaction<DB>): Promise<{ recorded: Recorded; resourceId: string; safetyJobId: string | null }>;
  /** Step 3, outside any transaction. */
  call(recorded: Recorded): Promise<Outcome>;
  /** Step 4, in one transaction (the safety job is deleted in it too). */
  settle(trx: Transaction<DB>, recorded: Recorded, outcome: Outcome): Promise<Result>;
  /** Step 5: the answer while the outcome is unknown; the safety job settles it later. */
  unknown(recorded: Recorded, error: unknown): Result | Promise<Result>;
  /** The rail answered but its settlement failed: the error to answer (the safety job settles it). */
  lost(recorded: Recorded, error: unknown): Error;
  /** Overrides the origin's deadline for the call. */
  deadlineMs?: number;
}

/** Where the intent is recorded and how it is made durable before the call. */
export interface CallOrigin {
  deps: AppDeps;
  record<T>(fn: (trx: Transaction<DB>) => Promise<T>): Promise<T>;
  /** `resourceId`: what a retry of the key answers; none when the answer is the stored response (an error that must stay). */
  commit(resourceId?: string): Promise<void>;
}

/** A request: it records in its idempotency transaction and commits it with the key's claim. */
export function requestOrigin(ctx: RequestContext): CallOrigin {
  return {
    deps: ctx.deps,
    record: (fn) => inTransaction(ctx.db, fn),
    commit: (resourceId) => ctx.commitEarly(resourceId),
  };
}

/** A job (or a payer page): it records in a transaction of its own, durable once it commits. */
export function jobOrigin(deps: AppDeps): CallOrigin {
  return {
    deps,
    record: (fn) => deps.database.db.transaction().execute(fn),
    commit: async () => {},
  };
}

/** The call did not answer within its deadline: its outcome is unknown, never guessed. */
export class CallDeadlineExceeded extends Error {
  constructor(
    readonly rail: string,
    readonly ms: number,
  ) {
    super(`${rail} did not answer within ${ms} ms`);
    this.name = 'CallDeadlineExceeded';
  }
}

/** Bounds a call: rejects with CallDeadlineExceeded after `ms` (the call itself may still finish). */
export function withDeadline<T>(call: Promise<T>, ms: number, rail: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new CallDeadlineExceeded(rail, ms)), ms);
    timer.unref();
  });
  return Promise.race([call, deadline]).finally(() => clearTimeout(timer));
}

/**
 * Step 5's question: a reconciler (a job, a poll, an expiry) asks the rail where a recorded call
 * stands, or sends it again under the same reference, bounded by the same deadline as the call.
 * Without an answer it throws: nothing is saved and the job runs again later.
 */
export function askRail<T>(deps: Pick<AppDeps, 'config'>, rail: string, ask: () => Promise<T>): Promise<T> {
  return withDeadline(ask(), deps.config.railCallTimeoutMs, rail);
}

export async function runOutsideCall<Recorded, Outcome, Result>(origin: CallOrigin, op: OutsideCall<Recorded, Outcome, Result>): Promise<Result> {
  const { deps } = origin;
  const { recorded, resourceId, safetyJobId } = await origin.record(op.record);
  await origin.commit(resourceId);

  let outcome: Outcome;
  try {
    outcome = await withDeadline(op.call(recorded), op.deadlineMs ?? deps.config.railCallTimeoutMs, op.rail);
  } catch (error) {
    deps.logger.warn(
      { rail: op.rail, resource: resourceId, err: (error as Error)?.message },
      'outside call without an answer; its reconciler will settle it',
    );
    return op.unknown(recorded, error);
  }

  try {
    return await deps.database.db.transaction().execute(async (trx) => {
      const result = await op.settle(trx, recorded, outcome);
      if (safetyJobId) await trx.deleteFrom('jobs').where('id', '=', safetyJobId).execute();
      return result;
    });
  } catch (error) {
    deps.logger.error(
      { rail: op.rail, resource: resourceId, err: (error as Error)?.message },
      'settling an outside call failed; its reconciler will settle it',
    );
    throw op.lost(recorded, error);
  }
}

/**
 * A settle step run by a reconciler (a job, a payer page) rather than by runOutsideCall: in a
 * transaction of its own, with the scope bound to it.
 */
export function settleAlone<T>(
  deps: AppDeps,
  scope: Omit<ServiceScope, 'db' | 'deps'>,
  settle: (trx: Transaction<DB>, scope: ServiceScope) => Promise<T>,
): Promise<T> {
  return deps.database.db.transaction().execute((trx) => settle(trx, { ...scope, db: trx, deps }));
}
