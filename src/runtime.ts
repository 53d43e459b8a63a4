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
import { seedCatalogues, registerJobHandlers, sealedColumns } from './modules/index.ts';
import { resolveKeyring, type Keyring } from './platform/secrets.ts';
import { PLATFORM_SEALED_COLUMNS, resealColumns } from './platform/secret-columns.ts';

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

function logSecretsKey(logger: Logger, secrets: Keyring & { created?: boolean }): void {
  if (secrets.source === 'file' && secrets.created)
    logger.warn(
      { file: secrets.file },
      'generated a secrets key in the data directory (mode 0600): back it up apart from the data, or set SECRETS_KEY (docs/operations.md)',
    );
  if (secrets.source === 'development')
    logger.warn(
      'SECRETS_KEY is not set: secrets are sealed with the PUBLIC development key. Fine for development and tests; set SECRETS_KEY anywhere else (with NODE_ENV=production this refuses to start)',
    );
}

/** Opens the database (locking an embedded data directory), applies migrations and seeds catalogues. */
export async function createRuntime(
  config: Config,
  opts: { role: LockInfo['role']; socket?: string; logger?: Logger; clock?: Clock; database?: Database; secrets?: Keyring } = { role: 'server' },
): Promise<Runtime> {
  const logger = opts.logger ?? createLogger(config);
  let releaseLock = () => {};
  const ownsDataDir = !opts.database && !config.databaseUrl;
  if (ownsDataDir) {
    const lock = acquireLock(config.dataDir, { pid: process.pid, role: opts.role, socket: opts.socket });
    if (!lock.ok) throw new DataDirBusyError(config.dataDir, lock.holder);
    releaseLock = lock.release;
  }
  let database: Database;
  let secrets: Keyring;
  try {
    // Before the database opens: PostgreSQL in production without SECRETS_KEY refuses to start.
    secrets = opts.secrets ?? resolveKeyring(config, ownsDataDir ? config.dataDir : null);
    logSecretsKey(logger, secrets);
    database =
      opts.database ??
      (await openDatabase({
        databaseUrl: config.databaseUrl,
        listenUrl: config.databaseDirectUrl,
        dataDir: config.dataDir,
        embedded: { sharedBuffers: config.embeddedSharedBuffers, templateDir: config.embeddedTemplateDir },
        poolSize: config.dbPoolSize,
        batchBeginCommit: config.dbBatchBeginCommit,
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
    // Clear values written before sealing existed (an upgrade): sealed once, then never found again.
    const sealed = await resealColumns(database.db, [...sealedColumns, ...PLATFORM_SEALED_COLUMNS], secrets, {
      onlyClear: true,
      now: (opts.clock ?? systemClock).now(),
    });
    const count = sealed.reduce((n, r) => n + r.sealed, 0);
    if (count) logger.info({ sealed: sealed.filter((r) => r.sealed) }, `sealed ${count} secret(s) stored in clear by an earlier release`);
  } catch (error) {
    releaseLock();
    throw error;
  }
  const clock = opts.clock ?? systemClock;
  const metrics = new MetricsRegistry();
  const poolStats = database.poolStats?.bind(database);
  if (poolStats)
    metrics.collect(async () => {
      const { total, idle, waiting } = poolStats();
      return [
        {
          name: 'recaudo_db_pool_connections',
          help: 'PostgreSQL connections of this process by state (in_use, idle) and requests waiting for one (waiting)',
          samples: [
            { labels: { state: 'in_use' }, value: total - idle },
            { labels: { state: 'idle' }, value: idle },
            { labels: { state: 'waiting' }, value: waiting },
          ],
        },
      ];
    });
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
    dianConfig: (companyId, environment) => dianConfigFromProfile(database.db, secrets, companyId, environment),
    connectorSettings: (scope) => readConnectorSettings({ config, secrets }, scope.db ?? database.db, scope),
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
    secrets,
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
