import pino, { type Logger } from 'pino';
import type { Config } from './config.ts';
import { systemClock, type Clock } from './platform/clock.ts';
import { openDatabase, type Database } from './platform/db/database.ts';
import { migrate } from './platform/db/migrate.ts';
import { acquireLock, type LockInfo } from './platform/db/data-dir-lock.ts';
import { JobQueue } from './platform/jobs/queue.ts';
import { MetricsRegistry } from './platform/metrics.ts';
import { createRails } from './rails/index.ts';
import { TransitionListeners } from './platform/transitions.ts';
import { EventSinks } from './platform/outbox/outbox.ts';
import { DianDocumentBuilder } from './documents/dian/builder.ts';
import { renderFiscalPdf } from './documents/dian/pdf.ts';
import { dianConfigFromProfile } from './modules/fiscal/dian-config.ts';
import { readConnectorSettings } from './modules/connectors/settings.ts';
import type { AppDeps } from './platform/context.ts';
import { seedCatalogues, registerJobHandlers } from './modules/index.ts';

export class DataDirBusyError extends Error {
  constructor(
    readonly dataDir: string,
    readonly holder: LockInfo,
  ) {
    super(
      `The data directory ${dataDir} is in use by another Recaudo ${holder.role} (pid ${holder.pid}). ` +
        `An embedded database belongs to one process: stop that process, use another DATA_DIR, or set DATABASE_URL to share a PostgreSQL database.`,
    );
  }
}

export interface Runtime {
  deps: AppDeps;
  close(): Promise<void>;
}

/**
 * Card numbers, CVVs, keys and request bodies never reach the logs: requests are logged without
 * their bodies (app.ts), and these paths are censored wherever a log call might carry them.
 */
export const LOG_REDACT_PATHS = [
  'req.headers.authorization',
  'req.body',
  '*.body',
  'card_number',
  'cvv',
  'ccv',
  '*.card_number',
  '*.cvv',
  '*.ccv',
  '*.*.card_number',
  '*.*.cvv',
  '*.*.ccv',
  '*.key',
];

export function createLogger(config: Config, name = 'recaudo', destination?: pino.DestinationStream): Logger {
  const options = { name, level: config.logLevel, redact: { paths: LOG_REDACT_PATHS, censor: '[redacted]' } };
  return destination ? pino(options, destination) : pino(options);
}

/** Opens the database (locking an embedded data directory), applies migrations and seeds catalogues. */
export async function createRuntime(
  config: Config,
  opts: { role: LockInfo['role']; socket?: string; logger?: Logger; clock?: Clock; database?: Database } = { role: 'server' },
): Promise<Runtime> {
  const logger = opts.logger ?? createLogger(config);
  let releaseLock = () => {};
  if (!opts.database && !config.databaseUrl) {
    const lock = acquireLock(config.dataDir, { pid: process.pid, role: opts.role, socket: opts.socket });
    if (!lock.ok) throw new DataDirBusyError(config.dataDir, lock.holder);
    releaseLock = lock.release;
  }
  let database: Database;
  try {
    database =
      opts.database ??
      (await openDatabase({
        databaseUrl: config.databaseUrl,
        dataDir: config.dataDir,
        poolSize: config.dbPoolSize,
        limits: {
          statementTimeoutMs: config.dbStatementTimeoutMs,
          lockTimeoutMs: config.dbLockTimeoutMs,
          idleInTransactionTimeoutMs: config.dbIdleInTransactionTimeoutMs,
          connectTimeoutMs: config.dbConnectTimeoutMs,
        },
        onConnectionError: (error) => logger.warn({ err: error.message }, 'database connection lost; the pool replaces it'),
      }));
    await migrate(database, (msg) => logger.info(msg));
    await seedCatalogues(database);
  } catch (error) {
    releaseLock();
    throw error;
  }
  const clock = opts.clock ?? systemClock;
  const metrics = new MetricsRegistry();
  // outcome "unavailable" is an unknown outcome (timeout, 5xx): its reconciler settles it.
  const connectorCalls = metrics.counter('recaudo_connector_calls_total', 'Calls to payment providers by connector, operation and outcome');
  const connectorLatency = metrics.histogram(
    'recaudo_connector_call_seconds',
    'Latency of calls to payment providers',
    [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20],
  );
  const jobs = new JobQueue(database, clock, logger, {
    pollMs: config.jobsPollMs,
    leaseMs: config.jobsLeaseMs,
    concurrency: config.jobsConcurrency,
    metrics,
  });
  const rails = createRails(config, logger, {
    clock,
    dianConfig: (companyId, environment) => dianConfigFromProfile(database.db, companyId, environment),
    connectorSettings: (scope) => readConnectorSettings({ config }, scope.db ?? database.db, scope),
    observeConnector: (connector, call) => {
      connectorCalls.inc({ connector, operation: call.operation, outcome: call.outcome });
      connectorLatency.observe(call.ms / 1000, { connector, operation: call.operation });
    },
  });
  const documents = new DianDocumentBuilder({ renderPdf: renderFiscalPdf });
  const deps: AppDeps = {
    config,
    database,
    clock,
    logger,
    jobs,
    metrics,
    rails,
    documents,
    transitions: new TransitionListeners(),
    eventSinks: new EventSinks(),
  };
  registerJobHandlers(deps);
  return {
    deps,
    async close() {
      await jobs.stop();
      await rails.close();
      await database.close();
      releaseLock();
    },
  };
}
