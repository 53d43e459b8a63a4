import Fastify, { LogController, type FastifyInstance, type FastifyRequest } from 'fastify';
import swagger from '@fastify/swagger';
import { serializerCompiler, validatorCompiler, type ZodTypeProvider } from 'fastify-type-provider-zod';
import { sql } from 'kysely';
import type { AppDeps, Caller, RequestContext } from '../context.ts';
import { KeyResolver } from '../auth/api-keys.ts';
import { ApiError } from '../errors/api-error.ts';
import { errorHandler } from './errors.ts';
import { randomToken } from '../ids.ts';
import {
  abandonIdempotency,
  claimIdempotencyKey,
  detachIdempotency,
  replayFromMemory,
  requireIdempotencyKey,
  settleIdempotency,
  type IdempotencyState,
  type RecoverResource,
} from '../idempotency/idempotency.ts';
import { AuthFailures, clientBucket, MemoryRateLimiter, PostgresRateLimiter, type RateLimiter } from '../rate-limit/rate-limit.ts';
import { jsonTooDeep, MAX_BODY_DEPTH } from './body-depth.ts';
import { bearerTokenMatches } from '../auth/tokens.ts';
import { committedExecutor } from '../db/database.ts';
import { corsDecide, corsResponseHeaders } from './cors.ts';
import { OpenApiDocument } from './openapi-document.ts';
import { registerDocsPage } from './docs-page.ts';

export type AuthMode = 'secret' | 'publishable' | 'none';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Who may call the route; default 'secret'. */
    auth?: AuthMode;
    /** POST routes are idempotent (x-idempotency required) unless this is false. */
    idempotent?: boolean;
    /** The body carries card data: its idempotency fingerprint is a keyed hash (docs/platform.md). */
    sensitiveBody?: boolean;
    /**
     * The route commits early (ctx.commitEarly) before an outside call: how a retry of a key whose
     * run failed or died after that answers the resource it recorded (docs/platform.md).
     */
    recover?: RecoverResource;
  }
  interface FastifyInstance {
    /** The OpenAPI document's builder: the API-docs module hands it the document's content (openapi-document.ts). */
    openapiDocs: OpenApiDocument;
  }
  interface FastifyRequest {
    caller: Caller | null;
    ctx: RequestContext;
    idempotency: IdempotencyState | null;
    afterCommitTasks: (() => void)[] | null;
  }
}

export type App = FastifyInstance;

/** Counts /v1 requests from their first hook to their last; idle() resolves when none is left. */
class InFlight {
  private readonly open = new WeakSet<object>();
  private count = 0;
  private waiters: (() => void)[] = [];
  enter(req: object): void {
    if (this.open.has(req)) return;
    this.open.add(req);
    this.count++;
  }
  leave(req: object): void {
    if (!this.open.delete(req)) return;
    if (--this.count === 0) for (const wake of this.waiters.splice(0)) wake();
  }
  idle(): Promise<void> {
    return this.count === 0 ? Promise.resolve() : new Promise((resolve) => this.waiters.push(resolve));
  }
}
export type ModuleRegistrar = (app: FastifyInstance, deps: AppDeps) => void | Promise<void>;

const REQUEST_ID_RE = /^[A-Za-z0-9._:-]{1,128}$/;

// Unique per process start (random prefix) and cheap per request (a counter).
const REQUEST_ID_PREFIX = `req_${randomToken(10)}`;
let requestCounter = 0;
function nextRequestId(): string {
  requestCounter = (requestCounter + 1) % Number.MAX_SAFE_INTEGER;
  return `${REQUEST_ID_PREFIX}${requestCounter.toString(36).padStart(6, '0')}`;
}
const API_VERSION = '0.1.0';

export interface RouteInfo {
  method: string;
  url: string;
  auth: AuthMode;
  idempotent: boolean;
}

/**
 * Node checks request deadlines on an interval (30 s by default): check often enough that a cut
 * comes within a quarter of the timeout, and never wait longer for headers than for the request.
 */
function requestTimeoutOptions(requestTimeoutMs: number): { connectionsCheckingInterval: number; headersTimeout: number } | undefined {
  if (requestTimeoutMs <= 0) return undefined;
  return {
    connectionsCheckingInterval: Math.max(50, Math.min(30_000, Math.floor(requestTimeoutMs / 4))),
    headersTimeout: Math.min(60_000, requestTimeoutMs),
  };
}

/** TRUST_PROXY as Fastify takes it: a hop count becomes "the first n hops are proxies". */
function trustProxyOption(value: boolean | number | string[]): boolean | string[] | ((address: string, hop: number) => boolean) {
  return typeof value === 'number' ? (_address, hop) => hop < value : value;
}

const SURROGATE_ESCAPE = /\\u[dD][89a-fA-F]/;
// In unicode mode a surrogate only matches when it is unpaired.
const LONE_SURROGATE = /\p{Cs}/u;
const isWellFormed = (s: string): boolean => !LONE_SURROGATE.test(s);

/** True when every string (keys included) of a parsed body is well-formed UTF-16. */
function wellFormed(value: unknown): boolean {
  if (typeof value === 'string') return isWellFormed(value);
  if (Array.isArray(value)) return value.every(wellFormed);
  if (value && typeof value === 'object') return Object.entries(value).every(([k, v]) => isWellFormed(k) && wellFormed(v));
  return true;
}

export async function buildApp(deps: AppDeps, modules: ModuleRegistrar[]): Promise<{ app: FastifyInstance; routes: RouteInfo[]; keys: KeyResolver }> {
  const app = Fastify({
    loggerInstance: deps.logger,
    bodyLimit: 1_048_576,
    logController: new LogController({ requestIdLogLabel: 'request_id', disableRequestLogging: true }),
    genReqId: (req) => {
      const incoming = req.headers['x-request-id'];
      return typeof incoming === 'string' && REQUEST_ID_RE.test(incoming) ? incoming : nextRequestId();
    },
    return503OnClosing: true,
    forceCloseConnections: 'idle',
    // A client must send its whole request (headers and body) within REQUEST_TIMEOUT_MS, or it is
    // answered 408 and the connection closed: a body trickled byte by byte never holds a socket
    // and a parser forever. Handling time is not bounded by it (docs/platform.md).
    requestTimeout: deps.config.requestTimeoutMs,
    http: requestTimeoutOptions(deps.config.requestTimeoutMs),
    // The client address of the payer pages' rate limit (X-Forwarded-For only from TRUST_PROXY).
    trustProxy: trustProxyOption(deps.config.trustProxy),
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: 500 },
    // The router's own refusals (a path segment that is not valid percent-encoded UTF-8, a path
    // parameter over 500 characters) answer in the registry's envelope like every other error.
    frameworkErrors: (error, req, reply) => {
      reply.header('x-request-id', req.id);
      const problem =
        error.code === 'FST_ERR_MAX_PARAM_LENGTH' ? 'has a path parameter longer than 500 characters' : 'is not a valid URL (bad percent-encoding)';
      return errorHandler(new ApiError('validation_error', { errors: { url: [problem] } }), req, reply);
    },
  }).withTypeProvider<ZodTypeProvider>();

  app.setValidatorCompiler(validatorCompiler);
  // Responses are shaped by the modules' mappers; validating them costs throughput, so it is a test-time check.
  if (process.env.VALIDATE_RESPONSES === '1') app.setSerializerCompiler(serializerCompiler);
  else app.setSerializerCompiler(() => (data) => JSON.stringify(data));

  // A POST with an empty body is an empty JSON object (refund, cancel, activate...).
  // JSON only: any other content type is 415 unsupported_media_type.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (req, body, done) => {
    const text = body as string;
    // The exact text, for the few routes that check a signature over the bytes (WhatsApp's webhook).
    (req as FastifyRequest & { rawBody?: string }).rawBody = text;
    if (text.trim() === '') return done(null, {});
    // PostgreSQL text cannot hold NUL; refuse it here rather than fail deep in a query.
    if (text.includes('\\u0000') || text.includes('\u0000')) {
      return done(new ApiError('validation_error', { errors: { body: ['must not contain NUL (\\u0000) characters'] } }), undefined);
    }
    // Before JSON.parse and without recursion: a body nested thousands of levels deep would
    // overflow the stack of everything that walks it afterwards (fingerprint, validation).
    if (jsonTooDeep(text, MAX_BODY_DEPTH)) return done(new ApiError('body_too_deep'), undefined);
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      return done(new ApiError('malformed_json'), undefined);
    }
    // A "\ud800" escape parses into a lone surrogate, which no UTF-8 column (nor jsonb) can hold.
    // Only bodies that have a surrogate escape at all are walked.
    if (SURROGATE_ESCAPE.test(text) && !wellFormed(parsed)) {
      return done(
        new ApiError('validation_error', { errors: { body: ['must not contain unpaired UTF-16 surrogates (\\ud800-\\udfff)'] } }),
        undefined,
      );
    }
    done(null, parsed);
  });

  const keys = new KeyResolver(deps.database.db);
  const wakeWorkers = () => deps.jobs.wake();
  const limiter: RateLimiter = deps.database.engine === 'postgres' ? new PostgresRateLimiter(deps.database) : new MemoryRateLimiter();
  const authFailures = new AuthFailures({ limit: deps.config.authFailureLimit, windowMs: deps.config.authFailureWindowMs });
  const routes: RouteInfo[] = [];

  app.decorateRequest('caller', null);
  app.decorateRequest('ctx', null as unknown as RequestContext);
  app.decorateRequest('idempotency', null);
  app.decorateRequest('afterCommitTasks', null);

  app.addHook('onRoute', (route) => {
    if (!route.url.startsWith('/v1/') || route.method === 'HEAD') return;
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    for (const method of methods) {
      if (method === 'HEAD') continue;
      routes.push({
        method,
        url: route.url,
        auth: route.config?.auth ?? 'secret',
        idempotent: method === 'POST' && route.config?.idempotent !== false,
      });
    }
  });

  // Hot-path hooks use the callback form: no promise per request.
  // HSTS (production by default): browsers keep to https for this host once they have seen it.
  const hsts = deps.config.hstsMaxAge > 0 ? `max-age=${deps.config.hstsMaxAge}; includeSubDomains` : null;
  app.addHook('onRequest', (req, reply, done) => {
    reply.header('x-request-id', req.id);
    if (hsts) reply.header('strict-transport-security', hsts);
    if (req.url.includes('%00')) return done(new ApiError('validation_error', { errors: { url: ['must not contain NUL (%00) characters'] } }));
    done();
  });
  // While shutting down, answers close their keep-alive connection so the server can finish.
  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
  });
  // A request's work goes on after its socket closes (storing the idempotent response, releasing a
  // claim, after-commit tasks): close waits for it, so the database is never closed under it.
  const inflight = new InFlight();
  app.addHook('onClose', async () => {
    // Bounded: a request that never reaches its last hook must not hold the shutdown forever.
    let timer: NodeJS.Timeout | undefined;
    // Most of SHUTDOWN_TIMEOUT_MS; the rest is for the workers and the database (main.ts).
    const bound = new Promise<void>((resolve) => (timer = setTimeout(resolve, Math.floor(deps.config.shutdownTimeoutMs * 0.7)).unref()));
    await Promise.race([inflight.idle(), bound]);
    clearTimeout(timer);
  });
  app.addHook('onSend', (_req, reply, payload, done) => {
    if (closing) reply.header('connection', 'close');
    done(null, payload);
  });
  const httpRequests = deps.metrics.counter('recaudo_http_requests_total', 'HTTP requests by route and status class');
  const httpLatency = deps.metrics.histogram(
    'recaudo_http_request_seconds',
    'HTTP request latency',
    [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
  );
  const logRequests = deps.logger.isLevelEnabled('info');
  const labelSets = new Map<string, { request: Record<string, string>; route: Record<string, string> }>();
  app.addHook('onResponse', (req, reply, done) => {
    const route = req.routeOptions.url ?? 'unmatched';
    const status = `${Math.floor(reply.statusCode / 100)}xx`;
    const key = `${req.method} ${route} ${status}`;
    let labels = labelSets.get(key);
    if (!labels) {
      labels = { request: { method: req.method, route, status }, route: { route } };
      labelSets.set(key, labels);
    }
    httpRequests.inc(labels.request);
    httpLatency.observe(reply.elapsedTime / 1000, labels.route);
    if (logRequests) {
      req.log.info({ method: req.method, url: req.url, status: reply.statusCode, ms: Math.round(reply.elapsedTime) }, 'request');
    }
    done();
  });
  app.setErrorHandler(errorHandler);
  app.setNotFoundHandler((req, reply) => errorHandler(new ApiError('route_not_found'), req, reply));

  // The document: route schemas → OpenAPI 3.1, completed by openapi-document.ts (operationIds,
  // security schemes, idempotency and rate-limit headers, named schemas, webhooks; docs/openapi.md).
  const openapiDocs = new OpenApiDocument();
  app.decorate('openapiDocs', openapiDocs);
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: { title: 'Recaudo API', version: API_VERSION, description: 'Payment collection and electronic invoicing for Colombian companies.' },
      servers: [{ url: deps.config.baseUrl }],
    },
    transform: openapiDocs.routeTransform,
    transformObject: openapiDocs.documentTransform,
  });
  await registerDocsPage(app as unknown as FastifyInstance);

  app.get('/health', { schema: { hide: true } }, async (_req, reply) => {
    try {
      await sql`select 1`.execute(deps.database.db);
      return { status: 'ok', database: 'ok', engine: deps.database.engine };
    } catch {
      return reply.code(503).send({ status: 'unavailable', database: 'unreachable' });
    }
  });

  // Prometheus text; protected by METRICS_TOKEN (Bearer, compared in constant time) when it is set.
  // In production without a token it is not served at all (404, as an unknown route).
  app.get('/metrics', { schema: { hide: true } }, async (req, reply) => {
    const token = deps.config.metricsToken;
    if (!token && deps.config.production) return reply.callNotFound();
    if (token && !bearerTokenMatches(req.headers.authorization, token)) throw new ApiError('unauthenticated');
    return reply.type('text/plain; version=0.0.4').send(await deps.metrics.render());
  });

  await app.register(
    async (v1) => {
      v1.get('/openapi.json', { schema: { hide: true }, config: { auth: 'none' } }, async () => app.swagger());

      v1.addHook('onRequest', (req, _reply, done) => {
        inflight.enter(req);
        done();
      });
      v1.addHook('onRequest', async (req, reply) => {
        const mode = req.routeOptions.config?.auth ?? 'secret';
        if (mode === 'none' || !req.routeOptions.url) return;
        const header = req.headers.authorization;
        const match = typeof header === 'string' ? /^Bearer\s+(\S+)\s*$/i.exec(header) : null;
        if (!match) throw new ApiError('unauthenticated');
        // An address that keeps sending keys that match none is refused before any lookup (a key this
        // process knows to be good still passes: a shared address does not lock out its good clients).
        const address = `auth:${clientBucket(req.ip)}`;
        const blocked = authFailures.blockedFor(address, Date.now());
        if (blocked && !keys.known(match[1])) throw new ApiError('rate_limited', { headers: { 'retry-after': String(blocked) } });
        const caller = await keys.resolve(match[1]);
        const wanted = mode === 'publishable' ? 'publishable' : 'secret';
        if (!caller || caller.keyKind !== wanted) {
          authFailures.fail(address, Date.now());
          throw new ApiError('record_not_found', { message: 'The API key is invalid.' });
        }
        req.caller = caller;

        const limit = caller.environment === 'live' ? deps.config.rateLimitLive : deps.config.rateLimitTest;
        const decision = await limiter.hit(caller.keyId, limit, 1000, Date.now());
        reply.header('x-ratelimit-limit', String(decision.limit));
        reply.header('x-ratelimit-remaining', String(decision.remaining));
        if (!decision.allowed) {
          throw new ApiError('rate_limited', { headers: { 'retry-after': String(decision.retryAfterSeconds) } });
        }
        if (req.method === 'POST' && req.routeOptions.config?.idempotent !== false) requireIdempotencyKey(req);

        const tasks: (() => void)[] = [];
        req.afterCommitTasks = tasks;
        req.ctx = {
          ...caller,
          isTest: caller.environment === 'test',
          db: deps.database.db,
          deps,
          afterCommit: (fn) => tasks.push(fn),
          notifyWorkers: () => {
            if (!tasks.includes(wakeWorkers)) tasks.push(wakeWorkers);
          },
          recordedResourceId: null,
          commitEarly: async (resourceId) => {
            const state = req.idempotency;
            if (!state || state.settled || state.detachedAt) return;
            await detachIdempotency(deps, state, caller, resourceId ?? null);
            // The transaction is over: ctx.db refuses further use rather than becoming the pool unseen.
            req.ctx.db = committedExecutor();
            // What the request wrote so far is committed: its after-commit work is due now.
            for (const task of tasks.splice(0)) {
              try {
                task();
              } catch (error) {
                req.log.error({ err: error }, 'after-commit task failed');
              }
            }
          },
        };
      });

      // A route that opts into CORS learns whether the key's company allows the Origin (cors.ts).
      // A failed lookup answers without CORS headers (the browser withholds the answer).
      v1.addHook('onRequest', (req, _reply, done) => {
        if (!req.routeOptions.config?.cors) return done();
        corsDecide(req).then(
          () => done(),
          (error: unknown) => {
            req.log.error({ err: error }, 'CORS origin lookup failed');
            done();
          },
        );
      });

      // Bodiless POST/PUT/DELETE validate as an empty object. A repeat of a request this process
      // answered within the window replays here, before validation: its body was valid then.
      v1.addHook('preValidation', async (req, reply) => {
        if (req.body === undefined && req.method !== 'GET') (req as FastifyRequest & { body: unknown }).body = {};
        if (req.method === 'POST' && req.caller && req.routeOptions.config?.idempotent !== false) {
          if (await replayFromMemory(req, reply, req.caller, requireIdempotencyKey(req), deps.clock.now())) return reply;
        }
      });

      v1.addHook('preHandler', async (req, reply) => {
        if (req.method !== 'POST' || !req.caller || req.routeOptions.config?.idempotent === false) return;
        const key = requireIdempotencyKey(req);
        const state = await claimIdempotencyKey(deps, req, reply, req.caller, key, req.routeOptions.config?.recover);
        if (!state) return reply; // replayed or recovered: reply already sent
        req.idempotency = state;
        req.ctx.db = state.trx;
        req.ctx.recordedResourceId = state.recordedResourceId ?? null;
      });

      // CORS headers only on routes that opt in (POST /v1/tokens; src/platform/http/cors.ts).
      v1.addHook('onSend', (req, reply, payload, done) => {
        corsResponseHeaders(req, reply);
        done(null, payload);
      });

      v1.addHook('onSend', async (req, reply, payload) => {
        if (req.idempotency && req.caller) await settleIdempotency(deps, req.idempotency, req.caller, reply.statusCode, payload);
        return payload;
      });

      v1.addHook('onResponse', async (req, reply) => {
        try {
          if (req.idempotency) await abandonIdempotency(req.idempotency);
          if (reply.statusCode < 400 && req.afterCommitTasks) {
            for (const task of req.afterCommitTasks) {
              try {
                task();
              } catch (error) {
                req.log.error({ err: error }, 'after-commit task failed');
              }
            }
          }
        } finally {
          inflight.leave(req);
        }
      });
      v1.addHook('onRequestAbort', async (req) => {
        try {
          if (req.idempotency) await abandonIdempotency(req.idempotency);
        } finally {
          inflight.leave(req);
        }
      });

      for (const register of modules) await register(v1, deps);
    },
    { prefix: '/v1' },
  );

  return { app: app as unknown as FastifyInstance, routes, keys };
}
