import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { errorEnvelope, errorResponses } from '../../platform/http/openapi.ts';
import { readIdempotencyKey } from '../../platform/idempotency/idempotency.ts';
import { createBanklinkCharge } from './banklink.ts';
import { QR_FAILURE_SCENARIO, WALLET_DECLINING_PHONE, WALLET_APPROVING_PHONE, WALLETB_TEST_OTP } from '../../rails/sandbox-table.ts';
import { banklinkBody, emptyBody, requestIdParams, rtkeyBody, walletaBody, walletbBody, walletbConfirmBody } from './collect-schemas.ts';
import { createRtkeyCharge } from './rtkey.ts';
import { chargeResponse } from './schemas.ts';
import { recoverCharge } from './service.ts';
import { confirmWalleta, confirmWalletb, createWalletaRequest, createWalletbRequest } from './wallets.ts';

/** 15005 carries the previous charge (and the rate limit's 429 shares the status). */
const duplicateError = errorEnvelope
  .extend({
    previous_payment_id: z.string().optional().describe('the banklink charge this one duplicates'),
    previous_payment_created_at: z.string().optional(),
    time_elapsed_seconds: z.number().int().optional().describe('seconds since it was created (less than 120)'),
  })
  .describe('banklink_payment_duplicate (15005), or the rate limit');
/** 10141 names the open request. */
const inProgressError = errorEnvelope
  .extend({ previous_payment_id: z.string().optional().describe('request_to_pay_in_progress (10141): the open request') })
  .describe('validation_error (10001), customer_data_invalid (10126), request_to_pay_in_progress (10141)');

/** Routes of the rails a payer acts on: banklink and rtkey charges, wallet request-to-pay (docs/charges.md). */
export function collectRoutes(app: FastifyInstance): void {
  const r = app.withTypeProvider<ZodTypeProvider>();
  const chargeTags = ['Charges'];
  const walletTags = ['Wallet request-to-pay'];
  const sandboxPhones = `Sandbox: ${WALLET_APPROVING_PHONE} approves, ${WALLET_DECLINING_PHONE} declines (TRANSACTION_REJECTED), any other phone approves.`;

  r.post('/charges/banklink', {
    config: { recover: recoverCharge },
    schema: {
      tags: chargeTags,
      summary: 'Create a bank-transfer (banklink) charge',
      description:
        'Answers the charge, processing, with `url`: the bank page where the payer approves or declines; the payer then goes to redirect_url with charge_id added (confirm the outcome with GET /v1/charges/{id} or the charge.paid / charge.failed webhook). Open for 30 minutes, then failed with remarks EXPIRED. 429 15005 banklink_payment_duplicate when a banklink charge of the same customer, bank and amount was created less than 2 minutes ago (other external_id or reference do not change that): the body has previous_payment_id, previous_payment_created_at, time_elapsed_seconds, and Retry-After says when the window ends. Sandbox: Aprobar or Rechazar on the bank page.',
      body: banklinkBody,
      response: { 200: chargeResponse, ...errorResponses(401, 404, 409, 422, 503), 429: duplicateError },
    },
    handler: async (req) => createBanklinkCharge(req.ctx, req.body, readIdempotencyKey(req) ?? null),
  });

  r.post('/charges/rtkey', {
    config: { recover: recoverCharge },
    schema: {
      tags: chargeTags,
      summary: 'Create an instant-key (rtkey) QR charge',
      description: `Answers the charge, processing, with qr: {payload (EMVCo merchant-presented, CRC-16 in tag 63), image (PNG data URL)} and url (a page with the QR). Open for expires_in minutes, then failed with remarks EXPIRED. 400 90100 qr_generation_failed when the scheme refuses the QR: no charge is created. Sandbox (test keys): an amount whose pesos end in 13 with no cents (e.g. 1013, 25013), or test_scenario ${QR_FAILURE_SCENARIO}, makes the registration fail; "Simular pago" on the url pays it.`,
      body: rtkeyBody,
      response: { 200: chargeResponse, ...errorResponses(400, 401, 404, 409, 422, 503) },
    },
    handler: async (req) => createRtkeyCharge(req.ctx, req.body, readIdempotencyKey(req) ?? null),
  });

  r.post('/request-to-pay/walleta', {
    config: { recover: recoverCharge },
    schema: {
      tags: walletTags,
      summary: 'Request a payment in walleta',
      description: `Answers the request, a charge with payment_method_type walleta, processing: the payer gets it in the wallet app. 10141 request_to_pay_in_progress when an open walleta request has the same external_id. Settle it with POST /request-to-pay/walleta/{id}/confirm. ${sandboxPhones}`,
      body: walletaBody,
      response: { 200: chargeResponse, ...errorResponses(401, 404, 409, 503), 422: inProgressError },
    },
    handler: async (req) => createWalletaRequest(req.ctx, req.body, readIdempotencyKey(req) ?? null),
  });

  r.post('/request-to-pay/walleta/:id/confirm', {
    config: { idempotent: false },
    schema: {
      tags: walletTags,
      summary: 'Confirm a walleta request',
      description: `No x-idempotency needed: confirming is idempotent (a settled request is answered as it is). The wallet's answer settles the request: paid, or failed with the reason in remarks (HTTP 200 either way). 10140 request_to_pay_not_available when the id is not a walleta request. ${sandboxPhones}`,
      params: requestIdParams,
      body: emptyBody,
      response: { 200: chargeResponse, ...errorResponses(401, 404, 422) },
    },
    handler: async (req) => confirmWalleta(req.ctx, req.params.id),
  });

  r.post('/request-to-pay/walletb', {
    config: { recover: recoverCharge },
    schema: {
      tags: walletTags,
      summary: 'Request a payment in walletb',
      description:
        'Answers the request, a charge with payment_method_type walletb, processing, for 10 minutes; the payer gets an OTP in the wallet app. 10126 customer_data_invalid when the customer has no such document (type and number) on file, or the phone is not the number of an ACTIVE account of the customer at a wallet bank (connection_type CONFIRMATION). 10141 request_to_pay_in_progress when an open walletb request exists for that wallet account.',
      body: walletbBody,
      response: { 200: chargeResponse, ...errorResponses(401, 404, 409, 503), 422: inProgressError },
    },
    handler: async (req) => createWalletbRequest(req.ctx, req.body, readIdempotencyKey(req) ?? null),
  });

  r.post('/request-to-pay/walletb/:id/confirm', {
    config: { recover: recoverCharge },
    schema: {
      tags: walletTags,
      summary: 'Confirm a walletb request with the OTP',
      description: `The right OTP settles the request: paid, or failed with the reason in remarks (HTTP 200). 10136 transaction_otp_invalid: wrong OTP; the request is now failed and takes no other OTP. 10148 transaction_otp_expired: past its 10 minutes; the request is now failed. 10140 request_to_pay_not_available: the id is not a walletb request, or the request is settled. Sandbox: OTP ${WALLETB_TEST_OTP}; ${sandboxPhones}`,
      params: requestIdParams,
      body: walletbConfirmBody,
      response: { 200: chargeResponse, ...errorResponses(401, 404, 409, 422) },
    },
    handler: async (req) => confirmWalletb(req.ctx, req.params.id, req.body.otp),
  });
}
