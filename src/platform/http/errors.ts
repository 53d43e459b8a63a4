import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { hasZodFastifySchemaValidationErrors } from 'fastify-type-provider-zod';
import { isDatabaseUnavailable } from '../db/database.ts';
import { ApiError, type FieldErrors } from '../errors/api-error.ts';

function issueMessage(message: string): string {
  if (/received undefined/.test(message)) return 'is required';
  return message.replace(/^Invalid input: /, '');
}

/** Turns schema-validation failures into SPEC.md's 422 with `errors` keyed by dotted path. */
function fromValidation(error: FastifyError): ApiError {
  const errors: FieldErrors = {};
  for (const v of error.validation ?? []) {
    const path = (v.instancePath ?? '').split('/').filter(Boolean).join('.');
    const key = path || (error.validationContext === 'body' ? 'body' : String(error.validationContext ?? 'request'));
    const message = issueMessage(v.message ?? 'is invalid');
    const list = (errors[key] ??= []);
    if (!list.includes(message)) list.push(message);
  }
  return new ApiError('validation_error', { errors });
}

/** Maps anything thrown during a request to a coded error; only real bugs become 500. */
export function toApiError(error: unknown): ApiError {
  if (error instanceof ApiError) return error;
  const e = error as FastifyError;
  if (hasZodFastifySchemaValidationErrors(e) || e?.validation) return fromValidation(e);
  switch (e?.code) {
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new ApiError('unsupported_media_type');
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new ApiError('payload_too_large');
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return new ApiError('malformed_json');
  }
  if (e instanceof SyntaxError || e?.statusCode === 400) return new ApiError('malformed_json');
  if (e?.statusCode === 415) return new ApiError('unsupported_media_type');
  if (e?.statusCode === 413) return new ApiError('payload_too_large');
  if (e?.statusCode === 503 || isDatabaseUnavailable(error)) return new ApiError('service_unavailable');
  return new ApiError('internal_error');
}

export function errorHandler(error: unknown, req: FastifyRequest, reply: FastifyReply) {
  const apiError = toApiError(error);
  if (apiError.status >= 500) {
    req.log.error({ err: error }, 'request failed');
  } else {
    req.log.info({ code: apiError.def.codeName ?? apiError.status, msg: apiError.message }, 'request rejected');
  }
  if (apiError.headers) reply.headers(apiError.headers);
  else if (apiError.status === 503) reply.header('retry-after', '1');
  return reply.code(apiError.status).send(apiError.body());
}
