import { randomBytes } from 'node:crypto';
import { isIP } from 'node:net';
import path from 'node:path';
import { retentionSettings, type RetentionSettings } from './platform/retention/settings.ts';
import { parseKey } from './platform/secrets.ts';

/** Every environment variable the service reads, parsed and validated in one place. */
export interface Config {
  port: number;
  host: string;
  databaseUrl: string | undefined;
  /**
   * DATABASE_DIRECT_URL: PostgreSQL itself, for the sessions a transaction pooler cannot carry
   * (LISTEN); set when DATABASE_URL points at PgBouncer in transaction mode (docs/scaling.md).
   */
  databaseDirectUrl: string | undefined;
  dataDir: string;
  /** The embedded engine (src/platform/db/embedded.ts): its buffer pool and first-start template. */
  embeddedSharedBuffers: string;
  embeddedTemplateDir: string | undefined;
  baseUrl: string;
  logLevel: string;
  rateLimitLive: number;
  rateLimitTest: number;
  maxTransactionCop: bigint;
  workers: boolean;
  dbPoolSize: number;
  /** BEGIN and COMMIT sent with the statements next to them (src/platform/db/pg-client.ts). */
  dbBatchBeginCommit: boolean;
  /** PostgreSQL bounds (docs/operations.md): every statement, lock wait and idle transaction is cut off. */
  dbStatementTimeoutMs: number;
  dbLockTimeoutMs: number;
  dbIdleInTransactionTimeoutMs: number;
  /** Longest wait for a pooled connection (pool exhausted or server unreachable) before a 503. */
  dbConnectTimeoutMs: number;
  /**
   * How long a request that committed its idempotency claim before an outside call is presumed
   * alive: a duplicate waits this long for its answer, then answers the recorded resource.
   */
  idempotencyHoldMs: number;
  shutdownTimeoutMs: number;
  /** Jobs (docs/architecture.md "Jobs"): idle poll interval, lease (renewed while a job runs), jobs run at once per process. */
  jobsPollMs: number;
  jobsLeaseMs: number;
  jobsConcurrency: number;
  /** `recaudo worker` exits 1 (logged fatal) when its jobs loop has failed for this long; 0 = never. */
  workerMaxOutageMs: number;
  sandboxAccountDelayMs: number;
  /** Charges (docs/charges.md): a sandbox bank-account debit settles this long after it is submitted. */
  sandboxChargeDelayMs: number;
  /** SANDBOX_CASHOUT_DELAY_MS: how long a test ACH or TURBO cash-out stays processing (PRODUCT.md). */
  sandboxCashoutDelayMs: number;
  /** The sandbox tax authority answers a stamping after this long (docs/invoicing.md). */
  sandboxStampDelayMs: number;
  /** Charges: the reconciler looks at a charge or refund whose request did not save its outcome after this long. */
  chargeReconcileDelayMs: number;
  /** The deadline of one call to an outside system (src/platform/outside-call.ts). */
  railCallTimeoutMs: number;
  /** Connectors (docs/connectors.md): a provider transaction still PENDING is polled this long after its last answer. */
  connectorPollAfterMs: number;
  /** Connectors: how long a process keeps a company's connector settings before reading them again. */
  connectorSettingsTtlMs: number;
  /**
   * Seals secrets at rest (AES-256-GCM; docs/operations.md "Secrets at rest"). SECRETS_KEY: 32
   * bytes as 64 hex characters or base64; null when unset, and the runtime picks the key
   * (src/platform/secrets.ts resolveKeyring: the data directory's key file, or refusal in production).
   */
  secretsKey: Buffer | null;
  /** SECRETS_KEY_PREVIOUS: the key before a rotation, still accepted for reading. */
  secretsKeyPrevious: Buffer | null;
  /** NODE_ENV=production: stricter defaults (no development secrets key, no private test webhooks). */
  production: boolean;
  /** Wompi's base URLs (WOMPI_SANDBOX_URL, WOMPI_PRODUCTION_URL): the documented ones unless an operator points them at a proxy or a fake. */
  wompiUrls: { sandbox: string; production: string };
  /** WhatsApp Business Cloud API (Meta's Graph API): its base URL and the pinned version (WHATSAPP_GRAPH_URL, WHATSAPP_GRAPH_VERSION). */
  whatsappGraph: { url: string; version: string; timeoutMs: number };
  /** Wompi's Third-Party Payments API (the payout rail), a host apart. */
  wompiPayoutsUrls: { sandbox: string; production: string };
  /**
   * Keys the card fingerprints and the idempotency fingerprints of requests that carry card data
   * (docs/charges.md); the same in every process. Random per start when CARD_DATA_SECRET is unset.
   */
  cardDataSecret: string;
  /** Offsets from a delivery's creation at which it is retried (ms), after the first attempt. */
  webhookRetryScheduleMs: number[];
  webhookTimeoutMs: number;
  webhookConcurrency: number;
  /**
   * Test-mode webhooks, flows and campaign media may target private, loopback and link-local
   * addresses (local receivers). Off unless set, in every mode: a test key must not reach the
   * host's private network; local development opts in.
   */
  allowPrivateWebhooks: boolean;
  /** METRICS_TOKEN; with NODE_ENV=production and none set, /metrics answers 404. */
  metricsToken: string | undefined;
  /** HSTS_MAX_AGE (s): Strict-Transport-Security on every response when positive; a year in production, 0 (none) elsewhere. */
  hstsMaxAge: number;
  /** Longest time a client may take to send a whole request (headers and body) before a 408; 0 = none. */
  requestTimeoutMs: number;
  /** Requests per minute per client address on the payer pages (/pay, /portal); beyond it a 429 page. */
  pagesRateLimit: number;
  /** Requests with an API key that matches none, per client address per AUTH_FAILURE_WINDOW_MS (then 429, no key lookup). */
  authFailureLimit: number;
  authFailureWindowMs: number;
  /** Login codes sent per client address (within a company and environment) per 24 h, and per company and environment per 24 h (docs/session.md). */
  loginCodesPerIpDay: number;
  loginCodesPerCompanyDay: number;
  /** SPEC's per-customer session limits: reads (GET /customers/session/*) and writes (both POSTs) per minute. */
  sessionReadsPerMinute: number;
  sessionWritesPerMinute: number;
  /** Which proxies' X-Forwarded-For to believe for the client address (Fastify `trustProxy`). */
  trustProxy: boolean | number | string[];
  /** Signs the payer pages' form tokens (docs/pages.md); the same in every API process. Random per start when unset. */
  pagesSecret: string | undefined;
  /** Messaging rail (docs/rails.md): `sandbox` records in memory, `http` posts to MESSAGING_HTTP_URL. */
  messagingProvider: 'sandbox' | 'http';
  messagingHttpUrl: string | undefined;
  messagingHttpToken: string | undefined;
  messagingHttpTimeoutMs: number;
  messagingSandboxDelayMs: number;
  /** E-mail rail: SMTP through nodemailer when set, otherwise the in-memory sandbox. */
  smtpUrl: string | undefined;
  smtpFrom: string;
  /** RETENTION_*: what old data is swept, and how (docs/operations.md "Retention"). */
  retention: RetentionSettings;
  /** Lists (docs/lists.md): `total` is counted exactly up to this many matching rows; beyond it `total` is null (0: never counted). */
  listCountCap: number;
}

// About 3 days in all: PRODUCT.md's example schedule, as offsets from the event.
const DEFAULT_RETRY_SCHEDULE = '30s,2m,10m,30m,1h,3h,6h,12h,24h,48h,72h';

function durationList(env: NodeJS.ProcessEnv, name: string, fallback: string): number[] {
  const raw = env[name] || fallback;
  const units: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };
  return raw.split(',').map((part) => {
    const m = /^\s*(\d+)\s*(ms|s|m|h|d)?\s*$/.exec(part);
    if (!m) throw new Error(`${name} must be a comma-separated list of durations like 30s,2m,1h; got "${raw}"`);
    return Number(m[1]) * units[m[2] ?? 's'];
  });
}

function int(env: NodeJS.ProcessEnv, name: string, fallback: number, min = 0): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min) {
    throw new Error(`${name} must be an integer >= ${min}, got "${raw}"`);
  }
  return value;
}

function bool(env: NodeJS.ProcessEnv, name: string, fallback: boolean): boolean {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (/^(1|true|yes|on)$/i.test(raw)) return true;
  if (/^(0|false|no|off)$/i.test(raw)) return false;
  throw new Error(`${name} must be true or false, got "${raw}"`);
}

function railsConfig(env: NodeJS.ProcessEnv) {
  const messagingProvider = env.MESSAGING_PROVIDER || 'sandbox';
  if (messagingProvider !== 'sandbox' && messagingProvider !== 'http') {
    throw new Error(`MESSAGING_PROVIDER must be sandbox or http, got "${messagingProvider}"`);
  }
  const messagingHttpUrl = env.MESSAGING_HTTP_URL || undefined;
  if (messagingHttpUrl && !/^https?:\/\/[^\s]+$/.test(messagingHttpUrl)) {
    throw new Error('MESSAGING_HTTP_URL must be an http:// or https:// URL');
  }
  if (messagingProvider === 'http' && !messagingHttpUrl) throw new Error('MESSAGING_PROVIDER=http needs MESSAGING_HTTP_URL');
  const smtpUrl = env.SMTP_URL || undefined;
  if (smtpUrl && !/^smtps?:\/\//.test(smtpUrl)) throw new Error('SMTP_URL must start with smtp:// or smtps://');
  return {
    messagingProvider: messagingProvider as 'sandbox' | 'http',
    messagingHttpUrl,
    messagingHttpToken: env.MESSAGING_HTTP_TOKEN || undefined,
    messagingHttpTimeoutMs: int(env, 'MESSAGING_HTTP_TIMEOUT_MS', 10_000, 1),
    messagingSandboxDelayMs: int(env, 'MESSAGING_SANDBOX_DELAY_MS', 500, 0),
    smtpUrl,
    smtpFrom: env.SMTP_FROM || 'Recaudo <no-reply@recaudo.local>',
  };
}

function cardDataSecret(env: NodeJS.ProcessEnv): string {
  const raw = env.CARD_DATA_SECRET;
  if (raw === undefined || raw === '') return randomBytes(32).toString('hex');
  if (raw.length < 32) throw new Error('CARD_DATA_SECRET must be at least 32 characters');
  return raw;
}

/** TRUST_PROXY: unset/false, true (any proxy), a hop count, or comma-separated addresses/CIDRs. */
function trustProxy(env: NodeJS.ProcessEnv): boolean | number | string[] {
  const raw = (env.TRUST_PROXY ?? '').trim();
  if (raw === '' || /^(0|false|no|off)$/i.test(raw)) return false;
  if (/^(true|yes|on)$/i.test(raw)) return true;
  if (/^\d+$/.test(raw)) return Number(raw);
  const entries = raw.split(',').map((part) => part.trim());
  for (const entry of entries) {
    const [address, bits, extra] = entry.split('/');
    const named = ['loopback', 'linklocal', 'uniquelocal'].includes(address) && bits === undefined;
    if (!named && (isIP(address) === 0 || extra !== undefined || (bits !== undefined && !/^\d{1,3}$/.test(bits)))) {
      throw new Error(`TRUST_PROXY must be true, false, a hop count or comma-separated addresses/CIDRs; got "${raw}"`);
    }
  }
  return entries;
}

/** A PostgreSQL memory setting such as 32MB or 1GB (at least 1MB of PostgreSQL's own units). */
function memorySize(env: NodeJS.ProcessEnv, name: string, fallback: string): string {
  const raw = env[name] || fallback;
  if (!/^[1-9]\d{0,5}(MB|GB)$/.test(raw)) throw new Error(`${name} must be a size like 32MB or 1GB, got "${raw}"`);
  return raw;
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const port = int(env, 'PORT', 3000);
  const host = env.HOST || '0.0.0.0';
  const databaseUrl = env.DATABASE_URL || undefined;
  if (databaseUrl && !/^postgres(ql)?:\/\//.test(databaseUrl)) {
    throw new Error('DATABASE_URL must start with postgres:// or postgresql://');
  }
  const databaseDirectUrl = env.DATABASE_DIRECT_URL || undefined;
  if (databaseDirectUrl && !/^postgres(ql)?:\/\//.test(databaseDirectUrl)) {
    throw new Error('DATABASE_DIRECT_URL must start with postgres:// or postgresql://');
  }
  return {
    port,
    host,
    databaseUrl,
    databaseDirectUrl,
    dataDir: path.resolve(env.DATA_DIR || './data'),
    embeddedSharedBuffers: memorySize(env, 'EMBEDDED_SHARED_BUFFERS', '32MB'),
    embeddedTemplateDir: env.EMBEDDED_TEMPLATE_DIR ? path.resolve(env.EMBEDDED_TEMPLATE_DIR) : undefined,
    baseUrl: (env.PUBLIC_BASE_URL || `http://localhost:${port}`).replace(/\/+$/, ''),
    logLevel: env.LOG_LEVEL || 'info',
    rateLimitLive: int(env, 'RATE_LIMIT_LIVE', 100, 1),
    rateLimitTest: int(env, 'RATE_LIMIT_TEST', 25, 1),
    maxTransactionCop: BigInt(int(env, 'MAX_TRANSACTION_COP', 500_000_000, 1)),
    workers: bool(env, 'RUN_WORKERS', true),
    dbPoolSize: int(env, 'DB_POOL_SIZE', 20, 1),
    dbBatchBeginCommit: bool(env, 'DB_BATCH_BEGIN_COMMIT', true),
    dbStatementTimeoutMs: int(env, 'DB_STATEMENT_TIMEOUT_MS', 30_000, 0),
    dbLockTimeoutMs: int(env, 'DB_LOCK_TIMEOUT_MS', 15_000, 0),
    dbIdleInTransactionTimeoutMs: int(env, 'DB_IDLE_IN_TRANSACTION_TIMEOUT_MS', 60_000, 0),
    dbConnectTimeoutMs: int(env, 'DB_CONNECT_TIMEOUT_MS', 10_000, 1),
    idempotencyHoldMs: int(env, 'IDEMPOTENCY_HOLD_MS', 30_000, 1),
    shutdownTimeoutMs: int(env, 'SHUTDOWN_TIMEOUT_MS', 10_000, 0),
    jobsPollMs: int(env, 'JOBS_POLL_MS', 250, 10),
    jobsLeaseMs: int(env, 'JOBS_LEASE_MS', 30_000, 300),
    jobsConcurrency: int(env, 'JOBS_CONCURRENCY', 1, 1),
    workerMaxOutageMs: int(env, 'WORKER_MAX_OUTAGE_MS', 300_000, 0),
    sandboxAccountDelayMs: int(env, 'SANDBOX_ACCOUNT_DELAY_MS', 2_000, 0),
    sandboxChargeDelayMs: int(env, 'SANDBOX_CHARGE_DELAY_MS', 3_000, 0),
    sandboxCashoutDelayMs: int(env, 'SANDBOX_CASHOUT_DELAY_MS', 3_000, 0),
    sandboxStampDelayMs: int(env, 'SANDBOX_STAMP_DELAY_MS', 1_000, 0),
    chargeReconcileDelayMs: int(env, 'CHARGE_RECONCILE_DELAY_MS', 30_000, 0),
    railCallTimeoutMs: int(env, 'RAIL_CALL_TIMEOUT_MS', 20_000, 100),
    connectorPollAfterMs: int(env, 'CONNECTOR_POLL_AFTER_MS', 60_000, 0),
    connectorSettingsTtlMs: int(env, 'CONNECTOR_SETTINGS_TTL_MS', 5_000, 0),
    secretsKey: parseKey(env.SECRETS_KEY, 'SECRETS_KEY'),
    secretsKeyPrevious: parseKey(env.SECRETS_KEY_PREVIOUS, 'SECRETS_KEY_PREVIOUS'),
    production: env.NODE_ENV === 'production',
    whatsappGraph: {
      url: env.WHATSAPP_GRAPH_URL || 'https://graph.facebook.com',
      version: (() => {
        const v = env.WHATSAPP_GRAPH_VERSION || 'v23.0';
        if (!/^v\d{1,3}\.\d{1,2}$/.test(v)) throw new Error(`WHATSAPP_GRAPH_VERSION must look like v23.0, got "${v}"`);
        return v;
      })(),
      timeoutMs: int(env, 'WHATSAPP_TIMEOUT_MS', 10_000, 1),
    },
    wompiUrls: {
      sandbox: env.WOMPI_SANDBOX_URL || 'https://sandbox.wompi.co/v1',
      production: env.WOMPI_PRODUCTION_URL || 'https://production.wompi.co/v1',
    },
    wompiPayoutsUrls: {
      sandbox: env.WOMPI_PAYOUTS_SANDBOX_URL || 'https://api.sandbox.payouts.wompi.co/v1',
      production: env.WOMPI_PAYOUTS_PRODUCTION_URL || 'https://api.payouts.wompi.co/v1',
    },
    cardDataSecret: cardDataSecret(env),
    webhookRetryScheduleMs: durationList(env, 'WEBHOOK_RETRY_SCHEDULE', DEFAULT_RETRY_SCHEDULE),
    webhookTimeoutMs: int(env, 'WEBHOOK_TIMEOUT_MS', 30_000, 1),
    webhookConcurrency: int(env, 'WEBHOOK_CONCURRENCY', 64, 1),
    allowPrivateWebhooks: bool(env, 'ALLOW_PRIVATE_WEBHOOKS', false),
    metricsToken: env.METRICS_TOKEN || undefined,
    hstsMaxAge: int(env, 'HSTS_MAX_AGE', env.NODE_ENV === 'production' ? 31_536_000 : 0),
    requestTimeoutMs: int(env, 'REQUEST_TIMEOUT_MS', 30_000, 0),
    pagesRateLimit: int(env, 'PAGES_RATE_LIMIT', 300, 1),
    authFailureLimit: int(env, 'AUTH_FAILURE_LIMIT', 300, 1),
    authFailureWindowMs: int(env, 'AUTH_FAILURE_WINDOW_MS', 60_000, 1_000),
    loginCodesPerIpDay: int(env, 'LOGIN_CODES_PER_IP_DAY', 1000, 1),
    loginCodesPerCompanyDay: int(env, 'LOGIN_CODES_PER_COMPANY_DAY', 5000, 1),
    sessionReadsPerMinute: int(env, 'SESSION_READS_PER_MINUTE', 30, 1),
    sessionWritesPerMinute: int(env, 'SESSION_WRITES_PER_MINUTE', 5, 1),
    trustProxy: trustProxy(env),
    pagesSecret: env.PAGES_SECRET || undefined,
    ...railsConfig(env),
    retention: retentionSettings(env),
    listCountCap: int(env, 'LIST_COUNT_CAP', 10_000, 0),
  };
}
