import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { AppDeps } from '../../platform/context.ts';
import { validationError } from '../../platform/errors/api-error.ts';
import { errorResponses } from '../../platform/http/openapi.ts';
import { listPath } from '../../platform/http/urls.ts';
import { listEnvelopeSchema } from '../../platform/lists/lists.ts';
import { getIntent, listIntents, listPaymentIntents } from './intents.ts';
import { listPaymentMessages } from './messages.ts';
import {
  cancelPaymentBody,
  cancelPaymentQuery,
  createPaymentBody,
  idParams,
  intentListQuery,
  intentResponse,
  messageResponse,
  paymentIntentsListQuery,
  paymentListQuery,
  paymentMessagesListQuery,
  paymentResponse,
  REJECTION_REASONS,
  resendPaymentBody,
  resolvePaymentBody,
  updatePaymentBody,
} from './schemas.ts';
import { cancelPayment, createPayment, getPayment, listPayments, refundPayment, resendPayment, resolvePayment, updatePayment } from './service.ts';

const tags = ['Payments'];

/** `notify` from the body, or from the query string (DELETE bodies are unusual for some clients). */
function notifyFlag(body: { notify?: boolean | null }, query: Record<string, unknown>): boolean {
  if (body.notify != null) return body.notify;
  const raw = Array.isArray(query.notify) ? query.notify[query.notify.length - 1] : query.notify;
  if (raw === undefined || raw === '') return false;
  if (raw === 'true' || raw === 'false') return raw === 'true';
  throw validationError({ notify: ['must be true or false'] });
}

export function paymentRoutes(app: FastifyInstance, deps: AppDeps): void {
  const r = app.withTypeProvider<ZodTypeProvider>();

  r.post('/payments', {
    schema: {
      tags,
      summary: 'Create a payment (collection link)',
      description:
        'Answers the payment with its absolute payment_link, status pending (event payment.created). amount is in pesos (at most 2 decimals); omit it and send open_amount: true for an open-amount link. The delivery channel follows phone (messaging), email, reference (portal), else manual. See docs/payments.md.',
      body: createPaymentBody,
      response: { 200: paymentResponse, ...errorResponses(401, 404, 409, 422) },
    },
    handler: async (req) => createPayment(req.ctx, req.body),
  });

  r.get('/payments', {
    schema: {
      tags,
      summary: 'List payments',
      description: 'Filters id, status, reference, external_id; sort created_at, paid_at. An invalid id or status filter value gives an empty list.',
      querystring: paymentListQuery,
      response: { 200: listEnvelopeSchema(paymentResponse), ...errorResponses(400, 401, 404, 422) },
    },
    handler: async (req) => listPayments(req.ctx, req.query, listPath(req)),
  });

  r.get('/payments/:id', {
    schema: { tags, summary: 'Get a payment', params: idParams, response: { 200: paymentResponse, ...errorResponses(401, 404) } },
    handler: async (req) => getPayment(req.ctx, req.params.id),
  });

  r.put('/payments/:id', {
    schema: {
      tags,
      summary: 'Update a payment',
      description:
        'Fields as in create; unsent fields keep their value, null clears an optional field. 15007 cant_update_payment once approved, paid_externally, cancelled, expired, refunded or disputed; 15004 payment_charge_in_progress when an attempt is in progress and amount or tax change. status: paid_externally marks it paid outside Recaudo.',
      params: idParams,
      body: updatePaymentBody,
      response: { 200: paymentResponse, ...errorResponses(401, 404, 422) },
    },
    handler: async (req) => updatePayment(req.ctx, req.params.id, req.body),
  });

  r.post('/payments/:id', {
    schema: {
      tags,
      summary: 'Resend a payment',
      description:
        'Sends the link again by the payment channel, optionally with another selectable template. 15002 cant_retry_payment when the payment is approved, paid_externally, cancelled, expired, refunded or disputed.',
      params: idParams,
      body: resendPaymentBody,
      response: { 200: paymentResponse, ...errorResponses(401, 404, 409, 422) },
    },
    handler: async (req) => resendPayment(req.ctx, req.params.id, req.body.template_id),
  });

  r.delete('/payments/:id', {
    schema: {
      tags,
      summary: 'Cancel a payment',
      description:
        'Answers the cancelled payment (event payment.deleted). notify (body or query, boolean) tells the payer by the payment channel. 15003 payment_already_paid, 15004 payment_cancelled, 15004 payment_charge_in_progress, 15001 cant_cancel_payment (utility-service invoices).',
      params: idParams,
      querystring: cancelPaymentQuery,
      body: cancelPaymentBody,
      response: { 200: paymentResponse, ...errorResponses(401, 404, 422) },
    },
    handler: async (req) => cancelPayment(req.ctx, req.params.id, notifyFlag(req.body ?? {}, req.query)),
  });

  r.get('/payments/:id/intents', {
    schema: {
      tags,
      summary: "List a payment's attempts (payment intents)",
      params: idParams,
      querystring: paymentIntentsListQuery,
      response: { 200: listEnvelopeSchema(intentResponse), ...errorResponses(400, 401, 404, 422) },
    },
    handler: async (req) => listPaymentIntents(req.ctx, req.params.id, req.query, listPath(req)),
  });

  r.get('/payments/:id/messages', {
    schema: {
      tags,
      summary: "List a payment's messages (link, resends, cancellation)",
      description:
        'What went out by the payment channel and what became of it: status pending, sent, delivered, failed or replied (the same changes emit payment.message.delivered, payment.message.failed, payment.message.replied). Newest first. The portal and manual channels send nothing.',
      params: idParams,
      querystring: paymentMessagesListQuery,
      response: { 200: listEnvelopeSchema(messageResponse), ...errorResponses(400, 401, 404, 422) },
    },
    handler: async (req) => listPaymentMessages(req.ctx, req.params.id, req.query, listPath(req)),
  });

  // Delivery reports of the live `http` messaging provider (docs/rails.md): authenticated by the
  // provider's bearer token inside receiveStatus, not by an API key; answered with its result.
  r.post('/rails/messaging/status', {
    config: { auth: 'none', idempotent: false },
    schema: { hide: true },
    handler: async (req, reply) => {
      const result = await deps.rails.live.messaging.receiveStatus({ headers: req.headers, body: req.body });
      return reply.code(result.statusCode).send(result.body);
    },
  });

  r.post('/payments/:id/resolve', {
    schema: {
      tags,
      summary: 'Resolve a test payment (sandbox)',
      description: `Test payments with a test key only (else 403). Only from pending, in_progress or declined (else 422). approve → approved (payment.approved); reject → declined (payment.rejected), remarks required: ${REJECTION_REASONS.join(', ')}. Records the outcome as a payment intent.`,
      params: idParams,
      body: resolvePaymentBody,
      response: { 200: paymentResponse, ...errorResponses(401, 403, 404, 409, 422) },
    },
    handler: async (req) => resolvePayment(req.ctx, req.params.id, req.body),
  });

  r.post('/payments/:id/refund', {
    schema: {
      tags,
      summary: 'Refund a payment',
      description:
        'Gives back everything paid of an approved payment: refunded (event payment.refunded), a ledger refund (422 insufficient_balance when the available balance is short). Anything but approved: 422 validation_error on status. The stamped invoice of the payment gets a credit note for what remains (docs/invoicing.md).',
      params: idParams,
      response: { 200: paymentResponse, ...errorResponses(401, 404, 409, 422) },
    },
    handler: async (req) => refundPayment(req.ctx, req.params.id),
  });

  r.get('/payment-intents', {
    schema: {
      tags,
      summary: 'List payment intents',
      description: 'Filters id, status (in_progress, approved, declined), external_id, network_id; sort created_at, paid_at.',
      querystring: intentListQuery,
      response: { 200: listEnvelopeSchema(intentResponse), ...errorResponses(400, 401, 404, 422) },
    },
    handler: async (req) => listIntents(req.ctx, req.query, listPath(req)),
  });

  r.get('/payment-intents/:id', {
    schema: {
      tags,
      summary: 'Get a payment intent by its id (pi_…) or its charge_id',
      params: idParams,
      response: { 200: intentResponse, ...errorResponses(401, 404) },
    },
    handler: async (req) => getIntent(req.ctx, req.params.id),
  });
}
