import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';
import pino, { type Logger } from 'pino';
import { loadConfig, type Config } from '../src/config.ts';
import { ManualClock } from '../src/platform/clock.ts';
import { openDatabase, wrapPglite, type Database } from '../src/platform/db/database.ts';
import { createRuntime, type Runtime } from '../src/runtime.ts';
import { createHttpApp } from '../src/server.ts';
import type { RouteInfo } from '../src/platform/http/app.ts';
import { createCompany, type CreatedCompany } from '../src/modules/companies/service.ts';
import { pgliteFromTemplate } from './template.ts';
import { dispatchers } from '../src/modules/webhooks/dispatcher.ts';

process.env.VALIDATE_RESPONSES ??= '1';

export const ENGINE: 'pglite' | 'postgres' = process.env.TEST_DATABASE_URL ? 'postgres' : 'pglite';

export interface Harness {
  app: FastifyInstance;
  routes: RouteInfo[];
  runtime: Runtime;
  clock: ManualClock;
  config: Config;
  company(name?: string): Promise<Company>;
  /** One webhook delivery round for this harness's companies only (PostgreSQL is shared by test files). */
  deliverWebhooks(): Promise<number>;
  close(): Promise<void>;
}

export interface Company extends CreatedCompany {
  /** Request with this company's test key (or live with env: 'live'). */
  req(opts: Req): Promise<Res>;
}

export interface Req {
  method?: InjectOptions['method'];
  url: string;
  body?: unknown;
  env?: 'test' | 'live';
  key?: string | null;
  idem?: string | false;
  headers?: Record<string, string>;
}

export interface Res {
  status: number;
  body: any;
  headers: LightMyRequestResponse['headers'];
  raw: string;
}

export async function send(app: FastifyInstance, opts: Req & { key?: string | null }): Promise<Res> {
  const method = opts.method ?? (opts.body !== undefined ? 'POST' : 'GET');
  const headers: Record<string, string> = { ...(opts.headers ?? {}) };
  if (opts.key) headers.authorization = `Bearer ${opts.key}`;
  if (method === 'POST' && opts.idem !== false) headers['x-idempotency'] ??= typeof opts.idem === 'string' ? opts.idem : randomUUID();
  let payload: string | undefined;
  if (opts.body !== undefined) {
    payload = typeof opts.body === 'string' ? opts.body : JSON.stringify(opts.body);
    headers['content-type'] ??= 'application/json';
  }
  const res = await app.inject({ method, url: opts.url, headers, payload });
  let body: unknown = undefined;
  try {
    body = res.body ? JSON.parse(res.body) : undefined;
  } catch {
    body = res.body;
  }
  return { status: res.statusCode, body, headers: res.headers, raw: res.body };
}

/** A fresh app on a fresh database (PGlite from the template, or the shared PostgreSQL test database). */
export async function createHarness(env: Record<string, string> = {}, opts: { logger?: Logger } = {}): Promise<Harness> {
  const config = loadConfig({
    RATE_LIMIT_TEST: '100000',
    RATE_LIMIT_LIVE: '100000',
    PAGES_RATE_LIMIT: '100000',
    AUTH_FAILURE_LIMIT: '100000',
    // The suites' receivers and fakes listen on 127.0.0.1: the explicit opt-in for local development.
    ALLOW_PRIVATE_WEBHOOKS: 'true',
    SANDBOX_ACCOUNT_DELAY_MS: '1000',
    MESSAGING_SANDBOX_DELAY_MS: '0',
    PUBLIC_BASE_URL: 'http://recaudo.test',
    DATABASE_URL: process.env.TEST_DATABASE_URL ?? '',
    // Set by scripts/pgbouncer-tests.sh: LISTEN straight to PostgreSQL, the rest through PgBouncer.
    DATABASE_DIRECT_URL: process.env.TEST_DATABASE_DIRECT_URL ?? '',
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    ...env,
  });
  const database: Database = config.databaseUrl
    ? await openDatabase({ databaseUrl: config.databaseUrl, listenUrl: config.databaseDirectUrl, poolSize: 10 })
    : wrapPglite(await pgliteFromTemplate());
  const clock = new ManualClock();
  const runtime = await createRuntime(config, { role: 'server', database, clock, logger: opts.logger ?? pino({ level: config.logLevel }) });
  const { app, routes } = await createHttpApp(runtime);
  const companies: Company[] = [];
  return {
    app,
    routes,
    runtime,
    clock,
    config,
    async company(name = 'Test Co SAS') {
      const created = await createCompany(database.db, { name }, clock.now());
      const company: Company = {
        ...created,
        req: (opts) => send(app, { ...opts, key: opts.key === undefined ? created.keys[opts.env ?? 'test'] : opts.key }),
      };
      companies.push(company);
      return company;
    },
    deliverWebhooks() {
      return dispatchers.get(runtime.deps)!.tick(companies.map((c) => c.company.id));
    },
    async close() {
      await app.close();
      await runtime.close();
    },
  };
}

export function expectError(res: Res, status: number, codeName?: string | null, code?: number | string): void {
  assert.equal(res.status, status, `expected ${status}, got ${res.status}: ${res.raw}`);
  assert.equal(typeof res.body?.message, 'string', 'error body has a message');
  if (codeName !== undefined) assert.equal(res.body.code_name, codeName ?? undefined, res.raw);
  if (code !== undefined) assert.equal(res.body.code, code, res.raw);
}

export function expectValidation(res: Res, ...fields: string[]): void {
  expectError(res, 422, 'validation_error', 10001);
  for (const f of fields) assert.ok(res.body.errors?.[f]?.length, `expected an error for ${f}: ${res.raw}`);
}

/** Polls a condition driven by background jobs (never a fixed sleep). */
export async function eventually<T>(fn: () => Promise<T | undefined | null | false>, timeoutMs = 10_000): Promise<T> {
  const start = Date.now();
  for (;;) {
    const value = await fn();
    if (value) return value;
    if (Date.now() - start > timeoutMs) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 25));
  }
}
