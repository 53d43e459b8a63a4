import type { DocumentBuilder } from '../documents/dian/model.ts';
import type { Logger } from 'pino';
import type { Config } from '../config.ts';
import type { Rails } from '../rails/index.ts';
import type { Clock } from './clock.ts';
import type { Database, Executor } from './db/database.ts';
import type { Environment } from './db/schema.ts';
import type { Tenant } from './scope.ts';
import type { TransitionListeners } from './transitions.ts';
import type { EventSinks } from './outbox/outbox.ts';
import type { ClockBinding, JobQueue } from './jobs/queue.ts';
import type { MetricsRegistry } from './metrics.ts';
import type { Keyring } from './secrets.ts';

/** Process-wide dependencies, built once in main.ts (or by the test harness). */
export interface AppDeps {
  config: Config;
  database: Database;
  clock: Clock;
  logger: Logger;
  jobs: JobQueue;
  metrics: MetricsRegistry;
  /** Every outside system (docs/rails.md); closed after the jobs, before the database. */
  rails: Rails;
  /** Builds the legal DIAN document and its PDF (src/documents/dian; pure). Tests may replace it. */
  documents: DocumentBuilder;
  /** Seals and opens secrets at rest (src/platform/secrets.ts; docs/operations.md "Secrets at rest"). */
  secrets: Keyring;
  /** Reactions of one module to another's status changes, in the same transaction (this runtime's). */
  transitions: TransitionListeners<ServiceScope>;
  /** What reacts to every event inside the emitting transaction (webhook fan-out), this runtime's. */
  eventSinks: EventSinks;
}

/** The same dependencies seen at another time (a job bound to a test clock runs at its simulated time). */
export function atClock(deps: AppDeps, clock: Clock | undefined): AppDeps {
  return clock ? { ...deps, clock } : deps;
}

/**
 * What a domain service needs: the tenant (company and environment), an executor and the process
 * dependencies. A RequestContext is one; jobs and the payer pages build one from AppDeps.
 */
export interface ServiceScope extends Tenant {
  db: Executor;
  deps: AppDeps;
  /** Work for a customer on a test clock: the jobs this scope schedules run in that clock's time. */
  clockBinding?: ClockBinding | null;
  /** A request context wakes this process's workers once its transaction commits. */
  notifyWorkers?: () => void;
}

/** Who is calling: resolved from the API key by the auth hook. */
export interface Caller {
  companyId: string;
  environment: Environment;
  keyId: string;
  keyKind: 'secret' | 'publishable';
}

/**
 * What a service needs for one request: the caller's scope, the executor to use (the request's
 * idempotency transaction for POSTs, the pool otherwise), and work to run after commit.
 */
export interface RequestContext extends Caller {
  isTest: boolean;
  db: Executor;
  deps: AppDeps;
  afterCommit(fn: () => void): void;
  /** Wake this process's background workers after commit (events or jobs were written). */
  notifyWorkers(): void;
  /**
   * POST: commits the request's transaction now, with its idempotency claim still in progress
   * (docs/platform.md); afterwards `db` refuses every use (the code after an outside call names its
   * executor: the settle transaction or the pool) and the response is stored when it is sent.
   * For operations that must record something before an external call (charges). `resourceId`
   * names what was recorded: a retry of the key after a failure answers it (the route's
   * `config.recover`) and never runs the operation again. No-op outside idempotent POSTs.
   */
  commitEarly(resourceId?: string): Promise<void>;
  /**
   * An earlier run of this request's key recorded this resource id before an outside call and
   * failed before the resource existed: reuse it, so the rail sees the same reference again.
   */
  recordedResourceId: string | null;
}

/**
 * A request-shaped context for work a job does on a tenant's behalf (a subscription cycle's
 * debit): it runs on the pool, so the outside-call protocol records in a transaction of its own,
 * durable when it commits (nothing to commit early), and after-commit work runs at once.
 */
export function backgroundContext(deps: AppDeps, tenant: Tenant): RequestContext {
  return {
    ...tenant,
    keyId: 'background',
    keyKind: 'secret',
    isTest: tenant.environment === 'test',
    db: deps.database.db,
    deps,
    afterCommit: (fn) => fn(),
    notifyWorkers: () => deps.jobs.wake(),
    commitEarly: async () => {},
    recordedResourceId: null,
  };
}
