import pg from 'pg';

/** What a LISTEN subscription reports (a pino logger fits). */
export interface ListenLogger {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
}

export interface ListenOptions {
  logger?: ListenLogger;
  /** First reconnect delay; doubles on each failed attempt up to maxBackoffMs. */
  minBackoffMs?: number;
  maxBackoffMs?: number;
  /** A `SELECT 1` on the session this often finds a connection that died silently (0 = off). */
  pingMs?: number;
  /** Called each time LISTEN is in place (first connect and every reconnect). */
  onListening?: () => void;
}

const noLogger: ListenLogger = { info() {}, warn() {} };

/**
 * LISTEN on a dedicated PostgreSQL session that survives its connection: when the session dies
 * (terminated backend, failover, network reset) it reconnects with capped exponential backoff
 * (100 ms → 5 s by default) and logs it; after each reconnect `onNotify` is called once, since a
 * notification sent while it was away is lost. Resolves after the first attempt, successful or
 * not (a failed one keeps retrying in the background); the returned function unsubscribes.
 * The session holds no timer that keeps the process alive: the worker decides that.
 */
export async function listenPostgres(
  conn: { url: string; applicationName: string },
  channel: string,
  onNotify: () => void,
  opts: ListenOptions = {},
): Promise<() => Promise<void>> {
  if (!/^[a-z_][a-z0-9_]*$/i.test(channel)) throw new Error(`invalid LISTEN channel ${channel}`);
  const logger = opts.logger ?? noLogger;
  const minBackoff = opts.minBackoffMs ?? 100;
  const maxBackoff = opts.maxBackoffMs ?? 5_000;
  const pingMs = opts.pingMs ?? 30_000;
  let client: pg.Client | null = null;
  let stopped = false;
  let failures = 0;
  let lostAt: number | null = null;
  let retryTimer: NodeJS.Timeout | null = null;
  let pingTimer: NodeJS.Timeout | null = null;

  const dropClient = () => {
    if (pingTimer) clearInterval(pingTimer);
    pingTimer = null;
    const c = client;
    client = null;
    if (c) {
      c.removeAllListeners('notification');
      c.removeAllListeners('end');
      // Keep an error listener for life: a late error on a dead client must not crash the process.
      void c.end().catch(() => {});
    }
  };

  const lost = (c: pg.Client, error: unknown) => {
    if (stopped || c !== client) return;
    dropClient();
    lostAt ??= Date.now();
    logger.warn({ channel, err: (error as Error)?.message ?? String(error) }, 'LISTEN connection lost; reconnecting');
    scheduleRetry();
  };

  const scheduleRetry = () => {
    if (stopped) return;
    const delay = Math.min(maxBackoff, minBackoff * 2 ** Math.min(failures, 30));
    failures++;
    retryTimer = setTimeout(() => {
      retryTimer = null;
      void connect();
    }, delay);
    retryTimer.unref?.();
  };

  const connect = async (): Promise<void> => {
    if (stopped) return;
    const c = new pg.Client({
      connectionString: conn.url,
      application_name: `${conn.applicationName}-listen`,
      keepAlive: true,
      keepAliveInitialDelayMillis: 10_000,
      connectionTimeoutMillis: 10_000,
    });
    c.on('error', (error) => lost(c, error));
    c.on('end', () => lost(c, new Error('connection ended')));
    c.on('notification', () => onNotify());
    client = c;
    try {
      await c.connect();
      await c.query(`LISTEN ${channel}`);
    } catch (error) {
      if (client !== c) return; // already handled by the error/end listener
      dropClient();
      if (stopped) return;
      lostAt ??= Date.now();
      logger.warn(
        {
          channel,
          attempt: failures + 1,
          err: (error as Error)?.message ?? String(error),
          retry_in_ms: Math.min(maxBackoff, minBackoff * 2 ** Math.min(failures, 30)),
        },
        'LISTEN connect failed; retrying',
      );
      scheduleRetry();
      return;
    }
    if (stopped) {
      dropClient();
      return;
    }
    if (lostAt !== null) logger.info({ channel, attempts: failures, down_ms: Date.now() - lostAt }, 'LISTEN reconnected');
    const wasDown = lostAt !== null;
    failures = 0;
    lostAt = null;
    if (pingMs > 0) {
      pingTimer = setInterval(() => {
        if (client !== c) return;
        c.query('SELECT 1').catch((error) => lost(c, error));
      }, pingMs);
      pingTimer.unref?.();
    }
    opts.onListening?.();
    // Whatever was notified while the session was away is caught up by one wake-up.
    if (wasDown) onNotify();
  };

  await connect();
  return async () => {
    stopped = true;
    if (retryTimer) clearTimeout(retryTimer);
    retryTimer = null;
    dropClient();
  };
}
