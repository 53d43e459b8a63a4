// The service's OpenAPI document, built in-process from the repository's source (no server, no
// network): an embedded database, the app's routes, GET /v1/openapi.json. Used by
// `npm run generate` (writes src/schema.d.ts) and by test/schema.test.ts (checks it is current).
import { PGlite } from '@electric-sql/pglite';
import pino from 'pino';
import { loadConfig } from '../../../src/config.ts';
import { wrapPglite, type Database } from '../../../src/platform/db/database.ts';
import type { RouteInfo } from '../../../src/platform/http/app.ts';
import { createRuntime } from '../../../src/runtime.ts';
import { createHttpApp } from '../../../src/server.ts';

/** A fixed base URL: the document's `servers` entry must not depend on who generates it. */
export const DOCUMENT_BASE_URL = 'https://api.recaudo.co';

export interface ServiceDescription {
  document: Record<string, unknown>;
  routes: RouteInfo[];
}

/**
 * Builds the app and answers its OpenAPI document and route table. `database`: an already migrated
 * one (the tests' template, for speed); default a fresh in-memory embedded database.
 */
export async function describeService(database?: Database): Promise<ServiceDescription> {
  // Only the settings the document depends on; the caller's environment (DATABASE_URL, PORT…) is ignored.
  const config = loadConfig({ DATABASE_URL: '', PUBLIC_BASE_URL: DOCUMENT_BASE_URL, RUN_WORKERS: 'false', LOG_LEVEL: 'error' });
  database ??= wrapPglite(await PGlite.create({ parsers: { 20: (v: string) => BigInt(v) } }));
  // Errors only, on stderr: a route that breaks the document logs why before the 500 below.
  const runtime = await createRuntime(config, { role: 'server', database, logger: pino({ level: 'error' }, pino.destination(2)) });
  try {
    const { app, routes } = await createHttpApp(runtime);
    try {
      const res = await app.inject({ method: 'GET', url: '/v1/openapi.json' });
      if (res.statusCode !== 200) throw new Error(`GET /v1/openapi.json answered ${res.statusCode}: ${res.body}`);
      return { document: JSON.parse(res.body) as Record<string, unknown>, routes };
    } finally {
      await app.close();
    }
  } finally {
    await runtime.close();
  }
}
