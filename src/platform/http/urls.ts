import type { FastifyRequest } from 'fastify';

/** Absolute URL of the list being requested, without its query (the envelope's `path`). */
export function listPath(req: FastifyRequest): string {
  return `${req.ctx.deps.config.baseUrl}${req.url.split('?')[0]}`;
}
