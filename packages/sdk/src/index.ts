// @recaudo/node: a typed client of the Recaudo API and the webhook verifier (README.md).
export { Recaudo, type RecaudoOptions, type RequestOptions, type RequestInit } from './client.ts';
export { RecaudoError, RecaudoConnectionError, type FieldErrors } from './errors.ts';
export {
  needsIdempotencyKey,
  POST_RETRY_DEADLINE_MS,
  REPLAY_WINDOW_MS,
  SDK_VERSION,
  systemClock,
  type CallOptions,
  type Clock,
} from './transport.ts';
export {
  verifyWebhook,
  WebhookVerificationError,
  DEFAULT_WEBHOOK_TOLERANCE_SECONDS,
  type VerifyWebhookOptions,
  type WebhookEvent,
  type WebhookEventType,
  type WebhookHeaders,
  type WebhookVerificationReason,
} from './webhooks.ts';
export type { HttpMethod, PathParams, PathsWith, QueryParams, RequestBody, ResponseBody, paths } from './types.ts';
