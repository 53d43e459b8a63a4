import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { AppDeps } from '../../platform/context.ts';
import { errorResponses } from '../../platform/http/openapi.ts';
import { listPath } from '../../platform/http/urls.ts';
import { listEnvelopeSchema, listQuerySchema } from '../../platform/lists/lists.ts';
import { createFlowBody, flowIdParams, flowResponse, flowRunResponse } from './schemas.ts';
import { createFlow, deleteFlow, flowList, flowRunList, getFlow, listFlowRuns, listFlows } from './service.ts';
import { flowSink, RUN_JOB, runFlow } from './runner.ts';

const tags = ['Flows'];

/** Wires the background side: the sink that records runs at emit time, and the run job. */
export function registerFlowJobs(deps: AppDeps): void {
  deps.eventSinks.add(flowSink(deps));
  deps.jobs.register(RUN_JOB, (payload, job) => runFlow(deps, payload, job));
}

export function flowRoutes(app: FastifyInstance): void {
  const r = app.withTypeProvider<ZodTypeProvider>();
  r.post('/flows', {
    config: { idempotent: false },
    schema: {
      tags,
      summary: 'Create a flow',
      description:
        'No x-idempotency (SPEC.md exempts POST /flows: a flow is configuration). On `event`, when every filter holds on the event data, the action runs once per event: call_url POSTs the event body signed like a webhook (secret shown only here), send_message sends a template within the contact hours. docs/flows.md.',
      body: createFlowBody,
      response: { 200: flowResponse, ...errorResponses(401, 403, 422) },
    },
    handler: async (req) => createFlow(req.ctx, req.body),
  });
  r.get('/flows', {
    schema: {
      tags,
      summary: 'List flows',
      description: 'filter[event]; sort created_at.',
      querystring: listQuerySchema(flowList),
      response: { 200: listEnvelopeSchema(flowResponse), ...errorResponses(400, 401, 403, 422) },
    },
    handler: async (req) => listFlows(req.ctx, req.query, listPath(req)),
  });
  r.get('/flows/:id', {
    schema: { tags, summary: 'Get a flow', params: flowIdParams, response: { 200: flowResponse, ...errorResponses(401, 403, 404) } },
    handler: async (req) => getFlow(req.ctx, req.params.id),
  });
  r.get('/flows/:id/runs', {
    schema: {
      tags,
      summary: "A flow's runs",
      description:
        'One run per event that passed the filters: pending, succeeded or failed (after retries). filter[status], filter[event_id]; sort created_at.',
      params: flowIdParams,
      querystring: listQuerySchema(flowRunList),
      response: { 200: listEnvelopeSchema(flowRunResponse), ...errorResponses(400, 401, 403, 404, 422) },
    },
    handler: async (req) => listFlowRuns(req.ctx, req.params.id, req.query, listPath(req)),
  });
  r.delete('/flows/:id', {
    schema: {
      tags,
      summary: 'Delete a flow',
      description: 'No new runs; runs already recorded still finish.',
      params: flowIdParams,
      response: { 204: z.null().describe('No content'), ...errorResponses(401, 403, 404) },
    },
    handler: async (req, reply) => {
      await deleteFlow(req.ctx, req.params.id);
      return reply.code(204).send(null);
    },
  });
}
