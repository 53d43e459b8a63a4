import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { AppDeps } from '../../platform/context.ts';
import { inTransaction } from '../../platform/db/database.ts';
import { errorResponses } from '../../platform/http/openapi.ts';
import { receiveWompiEvent } from './events.ts';
import { receiveWompiPayoutEvent } from './payout-events.ts';
import { connectorHealth } from './health.ts';
import { connectorHealthResponse, connectorParams, connectorResponse, eventAck, putConnectorBody } from './schemas.ts';
import { deleteConnector, getConnector, putConnector } from './settings.ts';

const tags = ['Connectors'];

export function connectorRoutes(app: FastifyInstance, deps: AppDeps): void {
  const r = app.withTypeProvider<ZodTypeProvider>();

  r.get('/connectors/:name', {
    schema: {
      tags,
      summary: "The environment's connector settings (secrets as a summary)",
      params: connectorParams,
      response: { 200: connectorResponse, ...errorResponses(401, 404) },
    },
    handler: async (req) => getConnector(deps, req.ctx.db, req.ctx, req.params.name),
  });

  r.put('/connectors/:name', {
    schema: {
      tags,
      summary: 'Connect a payment provider account for this environment',
      description:
        'Fields not sent keep their value; the first PUT needs every key. Secrets are write-only (sealed with SECRETS_KEY). A live environment only at the provider’s production; keys must match the provider environment. Configure `events_url` in the provider’s dashboard.',
      params: connectorParams,
      body: putConnectorBody,
      response: { 200: connectorResponse, ...errorResponses(401, 404, 422) },
    },
    handler: async (req) => {
      const out = await inTransaction(req.ctx.db, (trx) => putConnector(deps, trx, req.ctx, req.params.name, req.body, deps.clock.now()));
      deps.rails.forgetConnectors(req.ctx);
      return out;
    },
  });

  r.delete('/connectors/:name', {
    schema: {
      tags,
      summary: 'Disconnect the provider account of this environment',
      description: 'Live operations on its rails answer rail_not_configured again; test keys return to the sandbox.',
      params: connectorParams,
      response: { 204: z.null().describe('No content'), ...errorResponses(401, 404) },
    },
    handler: async (req, reply) => {
      await deleteConnector(req.ctx.db, req.ctx, req.params.name);
      deps.rails.forgetConnectors(req.ctx);
      return reply.code(204).send(null);
    },
  });

  r.get('/connectors/:name/health', {
    schema: {
      tags,
      summary: 'Whether the connector works now',
      params: connectorParams,
      response: { 200: connectorHealthResponse, ...errorResponses(401, 404) },
    },
    handler: async (req) => connectorHealth(deps, req.ctx, req.params.name),
  });

  // The provider's events: authenticated by their checksum (the tenant's events secret), not by an API key.
  r.post('/rails/wompi/events', {
    config: { auth: 'none', idempotent: false },
    schema: { tags, summary: "Wompi's signed events (configured in its dashboard)", response: { 200: eventAck, ...errorResponses(401) } },
    handler: async (req) => receiveWompiEvent(deps, req.body),
  });

  // Third-Party Payments events (cash-outs): their own URL and secret in the provider's dashboard.
  r.post('/rails/wompi/payout-events', {
    config: { auth: 'none', idempotent: false },
    schema: {
      tags,
      summary: "Wompi's signed Third-Party Payments events (configured in its dashboard)",
      response: { 200: eventAck, ...errorResponses(401) },
    },
    handler: async (req) => {
      const header = req.headers['x-event-checksum'];
      return receiveWompiPayoutEvent(deps, req.body, typeof header === 'string' ? header : undefined);
    },
  });
}
