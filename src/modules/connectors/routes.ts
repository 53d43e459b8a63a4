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
import { whatsappRoutes } from './whatsapp.ts';

const tags = ['Connectors'];

export function connectorRoutes(app: FastifyInstance, deps: AppDeps): void {
  // Before /connectors/:name (a static path wins anyway): WhatsApp's settings and webhook.
  whatsappRoutes(app, deps);
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

  // The provider's events: authenticated by their checksum with the secret of the company whose
  // events URL they were posted to (the token), not by an API key. The URL without a token is the
  // one earlier releases answered (deprecated): the company is then found from the event itself.
  const eventsParams = z.object({ token: z.string().max(100) });
  r.post('/rails/wompi/events/:token', {
    config: { auth: 'none', idempotent: false },
    schema: {
      tags,
      summary: "Wompi's signed events, on the company's own events URL (events_url)",
      params: eventsParams,
      response: { 200: eventAck, ...errorResponses(401, 503) },
    },
    handler: async (req) => receiveWompiEvent(deps, req.body, req.params.token),
  });
  r.post('/rails/wompi/events', {
    config: { auth: 'none', idempotent: false },
    schema: {
      tags,
      summary: "Wompi's signed events (deprecated URL: use the connector's events_url)",
      response: { 200: eventAck, ...errorResponses(401, 503) },
    },
    handler: async (req) => receiveWompiEvent(deps, req.body, null),
  });

  // Third-Party Payments events (cash-outs): their own URL and secret in the provider's dashboard.
  const payoutHandler = (token: string | null) => async (req: { body: unknown; headers: Record<string, unknown> }) => {
    const header = req.headers['x-event-checksum'];
    return receiveWompiPayoutEvent(deps, req.body, typeof header === 'string' ? header : undefined, token);
  };
  r.post('/rails/wompi/payout-events/:token', {
    config: { auth: 'none', idempotent: false },
    schema: {
      tags,
      summary: "Wompi's signed Third-Party Payments events, on the company's own URL (payouts_events_url)",
      params: eventsParams,
      response: { 200: eventAck, ...errorResponses(401, 503) },
    },
    handler: async (req) => payoutHandler(req.params.token)(req),
  });
  r.post('/rails/wompi/payout-events', {
    config: { auth: 'none', idempotent: false },
    schema: {
      tags,
      summary: "Wompi's signed Third-Party Payments events (deprecated URL: use the connector's payouts_events_url)",
      response: { 200: eventAck, ...errorResponses(401, 503) },
    },
    handler: payoutHandler(null),
  });
}
