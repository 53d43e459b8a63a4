import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Tenant } from '../scope.ts';

/**
 * Cross-origin access for the few routes a browser calls with a publishable key (POST /v1/tokens;
 * docs/browser-tokenization.md). A route opts in with `config.cors`; every other route, and so every
 * secret-key route, never sends a CORS header, and answers OPTIONS like any unknown route.
 *
 * - The preflight (OPTIONS, no key: browsers never send one) cannot know the company, so it answers
 *   every well-formed http(s) origin alike: `Access-Control-Allow-Origin` with that exact origin,
 *   the method and the headers a token request needs, cached 10 minutes. It used to answer only
 *   origins some company allowed, which told anyone whether a given origin was on some company's
 *   list (issue 29); the decision that matters is the request's, below. A malformed origin, another
 *   method or no origin gets a 204 without them.
 * - The request itself gets `Access-Control-Allow-Origin` only when its key's company allows the
 *   origin in the key's environment, on success and on errors after the key is known (a 422 is
 *   readable by the page); otherwise the browser withholds the answer from the page.
 * No credentials (cookies) are involved: the key is a bearer header, so no Allow-Credentials.
 */
export interface CorsPolicy {
  /** The request: does the key's company allow this origin in the key's environment? */
  allows(tenant: Tenant, origin: string): Promise<boolean>;
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Cross-origin browser access for this route (publishable-key routes only). */
    cors?: CorsPolicy;
  }
}

const ALLOWED_HEADERS = 'authorization, content-type, x-idempotency, idempotency-key, x-request-id';
const EXPOSED_HEADERS = 'x-request-id, x-ratelimit-limit, x-ratelimit-remaining, retry-after';
const PREFLIGHT_MAX_AGE_S = 600;

function originOf(req: FastifyRequest): string | null {
  const origin = req.headers.origin;
  return typeof origin === 'string' && origin.length <= 300 ? origin : null;
}

/** A browser's Origin header as browsers send it: http(s), a host, a port at most; nothing else. */
function wellFormedOrigin(origin: string): boolean {
  try {
    const url = new URL(origin);
    return (url.protocol === 'https:' || url.protocol === 'http:') && url.origin === origin;
  } catch {
    return false;
  }
}

/** The OPTIONS handler of a CORS route that takes `method`: the same answer for every origin (no lookup). */
export function corsPreflight(method: string) {
  return async (req: FastifyRequest, reply: FastifyReply) => {
    reply.header('vary', 'Origin, Access-Control-Request-Method, Access-Control-Request-Headers');
    const origin = originOf(req);
    const wanted = req.headers['access-control-request-method'];
    if (origin && wanted === method && wellFormedOrigin(origin)) {
      reply.header('access-control-allow-origin', origin);
      reply.header('access-control-allow-methods', method);
      reply.header('access-control-allow-headers', ALLOWED_HEADERS);
      reply.header('access-control-max-age', String(PREFLIGHT_MAX_AGE_S));
    }
    return reply.code(204).send();
  };
}

/** The origin a request on a CORS route may be answered to, decided once the key is known. */
const answerable = new WeakMap<FastifyRequest, string>();

/**
 * Decides, right after the key is checked and before the request's transaction opens (on the
 * embedded database a lookup inside onSend would wait for that very transaction), whether the
 * answer may carry `Access-Control-Allow-Origin` (an onRequest step; app.ts).
 */
export async function corsDecide(req: FastifyRequest): Promise<void> {
  const policy = req.routeOptions.config?.cors;
  if (!policy || req.method === 'OPTIONS' || !req.caller) return;
  const origin = originOf(req);
  if (origin && (await policy.allows({ companyId: req.caller.companyId, environment: req.caller.environment }, origin))) answerable.set(req, origin);
}

/** The CORS headers of an actual request's answer (an onSend step; app.ts): synchronous, no lookup. */
export function corsResponseHeaders(req: FastifyRequest, reply: FastifyReply): void {
  if (!req.routeOptions.config?.cors || req.method === 'OPTIONS') return; // the preflight sets its own
  reply.header('vary', 'Origin');
  const origin = answerable.get(req);
  if (!origin) return;
  reply.header('access-control-allow-origin', origin);
  reply.header('access-control-expose-headers', EXPOSED_HEADERS);
}
