import fs from 'node:fs';
import http from 'node:http';
import type { FastifyInstance } from 'fastify';
import type { Runtime } from './runtime.ts';
import { buildApp, type RouteInfo } from './platform/http/app.ts';
import { modules, pages, retentionRules } from './modules/index.ts';
import { createCompany, createNamedKey, revokeKeyById, setCompany, rotateKey, OperatorInputError } from './modules/companies/service.ts';
import type { KeyResolver } from './platform/auth/api-keys.ts';
import { setFiscalProfile, showFiscalProfile } from './modules/fiscal/operator.ts';
import { setPayoutAccountOperator } from './modules/cashouts/operator.ts';
import { listKeysOperator, setAllowedOriginsOperator } from './modules/companies/operator.ts';
import { setConnector, showConnector } from './modules/connectors/operator.ts';
import { importRanges } from './modules/fiscal/import-ranges.ts';
import { JobOperatorError, listJobs, retryJob } from './platform/jobs/operator.ts';
import { testClockOperator } from './modules/test-clocks/operator.ts';
import { reviewOnboarding } from './modules/onboarding/service.ts';
import { RetentionInputError, runRetentionOperator } from './platform/retention/operator.ts';
import { configureLists } from './platform/lists/lists.ts';

export async function createHttpApp(runtime: Runtime): Promise<{ app: FastifyInstance; routes: RouteInfo[]; keys: KeyResolver }> {
  configureLists(runtime.deps.config);
  const built = await buildApp(runtime.deps, modules);
  for (const register of pages) await register(built.app, runtime.deps);
  await built.app.ready();
  return built;
}

/**
 * The control socket lets the CLI act on an embedded data directory that this server owns,
 * instead of opening it a second time. It is a Unix socket readable only by this user.
 */
export function startControlSocket(runtime: Runtime, socketPath: string, keys: KeyResolver): http.Server {
  try {
    fs.unlinkSync(socketPath);
  } catch {
    /* none left over */
  }
  const server = http.createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const send = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    try {
      const input = chunks.length ? JSON.parse(Buffer.concat(chunks).toString('utf8')) : {};
      const { db } = runtime.deps.database;
      const now = runtime.deps.clock.now();
      if (req.method === 'POST' && req.url === '/companies') return send(200, await createCompany(db, input, now));
      if (req.method === 'POST' && req.url === '/companies/set') return send(200, await setCompany(db, input));
      if (req.method === 'POST' && req.url === '/companies/payout-account') return send(200, await setPayoutAccountOperator(runtime.deps, input));
      if (req.method === 'POST' && req.url === '/companies/allowed-origins') return send(200, await setAllowedOriginsOperator(db, input, now));
      if (req.method === 'POST' && req.url === '/keys/list') return send(200, await listKeysOperator(db, input));
      if (req.method === 'POST' && req.url === '/keys/create') return send(200, await createNamedKey(db, input, now));
      if (req.method === 'POST' && req.url === '/keys/revoke') {
        const out = await revokeKeyById(db, input, now);
        keys.forget();
        return send(200, out);
      }
      if (req.method === 'POST' && req.url === '/keys/rotate') {
        const out = await rotateKey(db, input.company, input.env, now, input.kind);
        keys.forget();
        return send(200, out);
      }
      if (req.method === 'POST' && req.url === '/fiscal-profile/show') return send(200, await showFiscalProfile(db, runtime.deps.secrets, input));
      if (req.method === 'POST' && req.url === '/fiscal-profile/set') return send(200, await setFiscalProfile(db, runtime.deps.secrets, input, now));
      if (req.method === 'POST' && req.url === '/fiscal/import-ranges') return send(200, await importRanges(db, input, runtime.deps));
      if (req.method === 'POST' && req.url === '/connectors/show') return send(200, await showConnector(runtime.deps, db, input));
      if (req.method === 'POST' && req.url === '/connectors/set') {
        const out = await setConnector(runtime.deps, db, input, now);
        runtime.deps.rails.forgetConnectors({ companyId: out.company.id, environment: out.environment });
        return send(200, out);
      }
      if (req.method === 'POST' && req.url === '/test-clock') return send(200, await testClockOperator(runtime.deps, input));
      if (req.method === 'POST' && req.url === '/companies/review') return send(200, await reviewOnboarding(runtime.deps, db, input));
      if (req.method === 'POST' && req.url === '/jobs/list') return send(200, await listJobs(db, input, now));
      if (req.method === 'POST' && req.url === '/retention/run') return send(200, await runRetentionOperator(runtime.deps, retentionRules, input));
      if (req.method === 'POST' && req.url === '/jobs/retry') {
        const out = await retryJob(db, input, now);
        runtime.deps.jobs.wake();
        return send(200, out);
      }
      send(404, { error: 'unknown command' });
    } catch (error) {
      send(error instanceof OperatorInputError || error instanceof JobOperatorError || error instanceof RetentionInputError ? 400 : 500, {
        error: (error as Error).message,
      });
    }
  });
  // The socket sits in a directory only this user can enter (controlSocketPath), so nobody else can
  // squat its path. Should listening fail anyway, the API still serves: the CLI says it cannot reach
  // the server, and the log says why.
  server.on('error', (error) =>
    runtime.deps.logger.error({ err: error, socket: socketPath }, 'control socket unavailable: the CLI cannot reach this server'),
  );
  server.listen(socketPath, () => {
    try {
      fs.chmodSync(socketPath, 0o600);
    } catch {
      /* best effort */
    }
  });
  server.unref();
  return server;
}
