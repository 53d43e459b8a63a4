import { startTracing } from './platform/tracing.ts';

// With OTEL_EXPORTER_OTLP_ENDPOINT set, tracing starts before http, Fastify and pg are loaded (their
// instrumentation patches them as they load), so everything else is imported after it. Without it
// nothing of OpenTelemetry is loaded.
const tracing = await startTracing();
const { loadConfig } = await import('./config.ts');
const { createLogger, createRuntime, DataDirBusyError } = await import('./runtime.ts');
const { createHttpApp, startControlSocket } = await import('./server.ts');
const { controlSocketPath, removeControlSocket } = await import('./platform/db/data-dir-lock.ts');
const { KeyResolver } = await import('./platform/auth/api-keys.ts');
const { SecretsKeyMissing } = await import('./platform/secrets.ts');

/** `npm start` (API + workers) or `recaudo worker` (workers only). */
async function main(): Promise<void> {
  const mode = process.argv[2] === 'worker' ? 'worker' : 'serve';
  const config = loadConfig();
  const logger = createLogger(config);
  const socket = config.databaseUrl ? undefined : controlSocketPath(config.dataDir);
  let runtime;
  try {
    runtime = await createRuntime(config, { role: 'server', socket, logger });
  } catch (error) {
    if (socket) removeControlSocket(socket, config.dataDir, { ours: false });
    if (error instanceof DataDirBusyError || error instanceof SecretsKeyMissing) {
      logger.fatal(error.message);
      process.exit(1);
    }
    throw error;
  }

  let shuttingDown = false;
  let closeHttp: () => Promise<void> = async () => {};
  const shutdown = async (signal: string, code = 0) => {
    if (shuttingDown) return;
    shuttingDown = true;
    logger.info({ signal }, 'shutting down: finishing in-flight requests');
    // One budget, SHUTDOWN_TIMEOUT_MS: in-flight requests get most of it (app.ts bounds that wait),
    // the workers and the database the rest. A webhook attempt or a job still running at the end is
    // abandoned: its lease lapses and another worker runs it again (at-least-once), so the process
    // exits 0. Only a shutdown stuck past the budget (and a grace second) exits 1.
    const deadline = Date.now() + config.shutdownTimeoutMs;
    const force = setTimeout(() => {
      logger.error('shutdown timed out; exiting');
      process.exit(1);
    }, config.shutdownTimeoutMs + 1_000);
    force.unref();
    try {
      await closeHttp();
      let timer: NodeJS.Timeout | undefined;
      const closed = await Promise.race([
        runtime.close().then(() => true),
        new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), Math.max(0, deadline - Date.now())))),
      ]);
      clearTimeout(timer);
      if (closed) logger.info('stopped');
      else logger.warn('workers still busy at the end of SHUTDOWN_TIMEOUT_MS; exiting (their work runs again elsewhere)');
      // The last spans still batched go out (bounded by the exporter's own timeout).
      await tracing?.shutdown().catch(() => {});
      process.exit(code);
    } catch (error) {
      logger.error({ err: error }, 'error during shutdown');
      process.exit(1);
    }
  };
  // A promise nobody awaited must not take the process (and every request in it) down: it is a bug
  // to fix, logged with its stack, while the service keeps answering.
  process.on('unhandledRejection', (reason) => logger.error({ err: reason }, 'unhandled promise rejection'));
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));

  if (mode === 'serve') {
    const { app, keys } = await createHttpApp(runtime);
    const control = socket ? startControlSocket(runtime, socket, keys) : null;
    await app.listen({ port: config.port, host: config.host });
    closeHttp = async () => {
      control?.close();
      if (socket) removeControlSocket(socket, config.dataDir);
      // server.close() waits for every open connection: keep-alive sockets that go idle after their
      // last answer are closed as they appear, and at 80% of the budget whatever is left is cut, so
      // a client holding a connection open never holds the shutdown.
      // First a short last call: a request a client already put on an idle keep-alive connection
      // as the signal came is still answered (with Connection: close) rather than reset unread.
      app.server.prependListener('request', (_req, res) => {
        res.shouldKeepAlive = false;
      });
      await new Promise((resolve) => setTimeout(resolve, Math.min(250, Math.floor(config.shutdownTimeoutMs * 0.05))));
      const sweep = setInterval(() => app.server.closeIdleConnections(), 100);
      const cut = setTimeout(() => app.server.closeAllConnections(), Math.floor(config.shutdownTimeoutMs * 0.8));
      try {
        await app.close();
      } finally {
        clearInterval(sweep);
        clearTimeout(cut);
      }
    };
  }
  if (mode === 'worker' && socket) {
    // The worker owns the embedded data directory: operator commands (recaudo jobs ...) reach it here.
    const control = startControlSocket(runtime, socket, new KeyResolver(runtime.deps.database.db));
    closeHttp = async () => {
      control.close();
      removeControlSocket(socket, config.dataDir);
    };
  }
  if (config.workers || mode === 'worker') {
    runtime.deps.jobs.start({
      // Poll timers do not hold the event loop: this does, until the workers stop (a worker-only
      // process has nothing else that would, once its database connections drop).
      keepAlive: true,
      // A worker that cannot reach its database for this long exits 1 for its supervisor to
      // restart it; an API process keeps serving (its requests answer 503 meanwhile).
      maxOutageMs: mode === 'worker' ? config.workerMaxOutageMs : 0,
      onFatal: ({ down_ms, error }) => {
        logger.fatal(
          { down_ms, err: error, limit_ms: config.workerMaxOutageMs },
          'worker cannot reach the database (WORKER_MAX_OUTAGE_MS); exiting 1',
        );
        void shutdown('fatal', 1);
      },
    });
  }
  logger.info({ mode, engine: runtime.deps.database.engine, port: mode === 'serve' ? config.port : undefined }, 'recaudo started');
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
