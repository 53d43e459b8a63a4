/**
 * The one registry of coded errors. SPEC.md codes first, exactly as written there; then the
 * platform codes Recaudo adds for situations SPEC.md leaves open (documented in docs/errors.md).
 * `code: null` means the error has a code_name but no numeric code (as SPEC.md shows).
 */
export interface ErrorDef {
  code: number | string | null;
  codeName: string | null;
  status: number;
  message: string;
}

function def(code: number | string | null, codeName: string | null, status: number, message: string): ErrorDef {
  return { code, codeName, status, message };
}

export const Errors = {
  // SPEC.md "Coded errors"
  unauthenticated: def(10000, 'unauthenticated', 401, 'Authentication is required: send Authorization: Bearer <API key>.'),
  validation_error: def(10001, 'validation_error', 422, 'The request has invalid or missing fields.'),
  record_not_found: def(10002, 'record_not_found', 404, 'The record does not exist.'),
  idempotency_error: def(10003, 'idempotency_error', 409, 'The x-idempotency header is required on this request.'),
  not_found: def(10004, 'not_found', 404, 'The webhook does not exist.'),
  card_cvv: def(10102, 'card_cvv', 422, 'The card security code is invalid.'),
  card_number: def(10104, 'card_number', 422, 'The card number is invalid.'),
  card_expired: def(10122, 'card_expired', 422, 'The card expiry date is invalid.'),
  customer_data_invalid: def(10126, 'customer_data_invalid', 422, 'The document, its type or the phone does not match the wallet account.'),
  transaction_otp_invalid: def(10136, 'transaction_otp_invalid', 422, 'The OTP is wrong; the request is now failed.'),
  request_to_pay_not_available: def(10140, 'request_to_pay_not_available', 422, 'The id is not a walletb request.'),
  request_to_pay_in_progress: def(10141, 'request_to_pay_in_progress', 422, 'An open request to pay already exists.'),
  transaction_otp_expired: def(10148, 'transaction_otp_expired', 422, 'The OTP expired; the request is now failed.'),
  charge_refunded: def(10805, 'charge_refunded', 422, 'The charge is already refunded or a refund is in progress.'),
  charge_is_test: def(10806, 'charge_is_test', 422, 'A test charge cannot be refunded.'),
  charge_is_not_paid: def(10807, 'charge_is_not_paid', 422, 'The charge is not paid.'),
  charge_not_cancellable: def(10808, 'charge_not_cancellable', 422, 'Only created or processing charges can be cancelled.'),
  cant_cancel_payment: def(15001, 'cant_cancel_payment', 422, 'The payment belongs to a utility-service invoice and cannot be cancelled.'),
  cant_retry_payment: def(15002, 'cant_retry_payment', 422, 'The payment is in a state that cannot be resent.'),
  payment_already_paid: def(15003, 'payment_already_paid', 422, 'The payment is already paid.'),
  payment_cancelled: def(15004, 'payment_cancelled', 422, 'The payment is already cancelled.'),
  payment_charge_in_progress: def(15004, 'payment_charge_in_progress', 422, 'A payment attempt is in progress; retry after it ends.'),
  banklink_payment_duplicate: def(
    15005,
    'banklink_payment_duplicate',
    429,
    'A banklink charge for the same customer, bank and amount was created less than 2 minutes ago.',
  ),
  cant_update_payment: def(15007, 'cant_update_payment', 422, 'The payment state no longer allows updates.'),
  charge_persistence_lost: def(
    90005,
    'charge_persistence_lost',
    503,
    'The charge was processed but saving it was not confirmed; search by external_id before retrying with a new idempotency value.',
  ),
  qr_generation_failed: def(90100, 'qr_generation_failed', 400, 'The instant-key registration or QR generation failed; no charge was created.'),
  environment_key_mismatch: def(null, 'environment_key_mismatch', 404, 'The record belongs to the other environment than the key used.'),

  // SPEC.md "Invoicing errors" (string codes)
  customer_not_invoiceable: def('customer_not_invoiceable', 'customer_not_invoiceable', 422, 'The customer lacks data required to invoice.'),
  invalid_invoice_line: def('invalid_invoice_line', 'invalid_invoice_line', 422, 'An invoice line cannot be resolved.'),
  credit_note_not_issuable: def('credit_note_not_issuable', 'credit_note_not_issuable', 422, 'The credit note cannot be issued.'),
  resolution_not_activatable: def(
    'resolution_not_activatable',
    'resolution_not_activatable',
    422,
    'The resolution is expired or has no folios left.',
  ),
  invoice_not_stampable: def('invoice_not_stampable', 'invoice_not_stampable', 422, 'The invoice cannot be stamped.'),

  // SPEC.md "Errors without a code"
  invalid_list_query: def(null, null, 400, 'A filter or sort is not allowed on this endpoint.'),
  rate_limited: def(null, null, 429, 'Too many requests; retry after the number of seconds in Retry-After.'),
  test_only: def(null, null, 403, 'This endpoint is only for test resources with a test key.'),
  not_resolvable: def(null, null, 422, 'Only an open test payment or charge can be resolved (a payment: pending, in_progress or declined).'),
  feature_disabled: def(null, null, 403, 'This feature is not enabled for the company.'),
  customer_token_invalid: def(
    null,
    null,
    401,
    'Send X-Customer-Token: a session token from POST /customers/login/verify, not expired, with the key that made it.',
  ),
  login_code_too_soon: def(null, null, 418, 'A login code was sent less than a minute ago; wait before asking for another.'),
  login_code_invalid: def(null, null, 422, 'The login code is wrong or expired.'),
  session_charge_refused: def(
    null,
    null,
    422,
    'The session charge cannot be made: the payment method is not a saved card of this customer, the card expired, or a charge is already waiting for approval.',
  ),
  session_charge_not_found: def(null, null, 404, 'The charge does not exist or is not a charge of the session’s customer.'),

  // Platform codes Recaudo adds where SPEC.md is silent (docs/errors.md)
  malformed_json: def(10005, 'malformed_json', 400, 'The request body is not valid JSON.'),
  unsupported_media_type: def(10006, 'unsupported_media_type', 415, 'The request body must be application/json.'),
  payload_too_large: def(10007, 'payload_too_large', 413, 'The request body exceeds 1 MB.'),
  route_not_found: def(10008, 'route_not_found', 404, 'No such endpoint.'),
  idempotency_key_reused: def(10003, 'idempotency_error', 409, 'This x-idempotency value was already used with a different request.'),
  idempotency_key_invalid: def(10003, 'idempotency_error', 409, 'The x-idempotency value must be 1 to 255 printable ASCII characters.'),
  service_unavailable: def(10009, 'service_unavailable', 503, 'The service is shutting down or the database is unreachable; retry shortly.'),
  insufficient_balance: def(
    10010,
    'insufficient_balance',
    422,
    'The available balance is not enough for this operation (a refund, a reversal, a cash-out).',
  ),
  body_too_deep: def(10011, 'body_too_deep', 400, 'The request body nests objects and arrays more than 64 levels deep.'),
  media_unreachable: def(
    10012,
    'media_unreachable',
    422,
    'The campaign media URL could not be fetched (connection refused, no answer in time, or a non-2xx answer); nothing was created.',
  ),
  rail_not_configured: def(
    10900,
    'rail_not_configured',
    422,
    'No payment connector serves this rail for live keys; nothing was created (docs/rails.md).',
  ),
  rail_refund_unavailable: def(
    10901,
    'rail_refund_unavailable',
    422,
    'The connector that collected this charge cannot give money back through its API; nothing was recorded (docs/connectors.md).',
  ),
  // PRODUCT.md "Cash-outs and wallets"
  balance_is_empty: def(10500, 'balance_is_empty', 422, 'The available balance is empty: there is nothing to cash out.'),
  insufficient_funds: def(10501, 'insufficient_funds', 422, 'The available balance does not cover this amount; nothing was created.'),
  cashout_not_cancellable: def(10511, 'cashout_not_cancellable', 422, 'Only a created or require_approval cash-out can be cancelled.'),
  cashout_approver_is_creator: def(
    10512,
    'cashout_approver_is_creator',
    422,
    'The cash-out was created with this key: another key of the company (or a dashboard user) must approve it.',
  ),
  cashout_not_pending_approval: def(10514, 'cashout_not_pending_approval', 422, 'Only a cash-out in require_approval can be approved or rejected.'),
  cashout_external_id_taken: def(10513, 'cashout_external_id_taken', 409, 'A cash-out with this external_id already exists in this environment.'),
  company_account_not_found: def(
    10809,
    'company_account_not_found',
    422,
    'The company has no payout account: send account_id or set one (PUT /v1/company/payout-account).',
  ),
  // PRODUCT.md "Recurring billing"
  subscription_transition_not_allowed: def(
    10600,
    'subscription_transition_not_allowed',
    422,
    "The subscription's status does not allow this action.",
  ),
  // PRODUCT.md "Campaigns"
  campaign_not_cancellable: def(10700, 'campaign_not_cancellable', 422, 'Only a queued or sending campaign can be cancelled.'),
  // Issuing cards (docs/issuing.md) and utilities (docs/utilities.md)
  issuing_card_transition_not_allowed: def(
    11100,
    'issuing_card_transition_not_allowed',
    422,
    "The card's status does not allow this action (active ↔ blocked → canceled; canceled is final).",
  ),
  issuing_card_not_active: def(
    11101,
    'issuing_card_not_active',
    422,
    'The card is not active (being issued, blocked or canceled); it cannot be used.',
  ),
  utility_bill_not_found: def(11200, 'utility_bill_not_found', 404, 'The biller has no bill with this reference.'),
  utility_bill_already_paid: def(11201, 'utility_bill_already_paid', 422, 'The bill is already paid; nothing was created.'),
  utility_in_progress: def(11202, 'utility_in_progress', 409, 'A payment of this bill is already in progress; nothing was created.'),
  // Companies onboarded by a platform (docs/companies.md)
  platform_only: def(11400, 'platform_only', 403, 'Only the key of a platform company can onboard companies (the operator sets the flag).'),
  company_not_active: def(11401, 'company_not_active', 422, 'The company is not active yet: its live keys are issued once its review approves it.'),
  company_keys_already_issued: def(
    11402,
    'company_keys_already_issued',
    409,
    'The live keys of this company were already issued (shown once); the operator rotates them with recaudo keys rotate.',
  ),
  // 10500 is PRODUCT.md's balance_is_empty: a bug's 500 has a code of its own.
  internal_error: def(90000, 'internal_error', 500, 'An unexpected error occurred; it has been logged with the request id.'),
} as const satisfies Record<string, ErrorDef>;

export type ErrorName = keyof typeof Errors;
