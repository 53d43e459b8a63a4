import pino, { type Logger } from 'pino';
import type { Config } from './config.ts';
import { systemClock, type Clock } from './platform/clock.ts';
import { openDatabase, type Database } from './platform/db/database.ts';
import { migrate } from './platform/db/migrate.ts';
import { acquireLock, type LockInfo } from './platform/db/data-dir-lock.ts';
import { JobQueue } from './platform/jobs/queue.ts';
import { MetricsRegistry } from './platform/metrics.ts';
import { createRails } from './rails/index.ts';
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

export function createLogger(config: Config, name = 'recaudo'): Logger {
  return pino({
    name,
    level: config.logLevel,
    // Card numbers, CVVs and keys never reach the logs.
    redact: { paths: ['req.headers.authorization', '*.card_number', '*.cvv', '*.ccv', '*.key'], censor: '[redacted]' },
  });
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
      (await openDatabase({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, poolSize: config.dbPoolSize }));
    await migrate(database, (msg) => logger.info(msg));
    await seedCatalogues(database);
  } catch (error) {
    releaseLock();
    throw error;
  }
  const clock = opts.clock ?? systemClock;
  const jobs = new JobQueue(database, clock, logger);
  const rails = createRails(config, logger, { clock });
  const deps: AppDeps = { config, database, clock, logger, jobs, metrics: new MetricsRegistry(), rails };
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
