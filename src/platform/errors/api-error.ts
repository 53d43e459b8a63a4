import { Errors, type ErrorDef, type ErrorName } from './registry.ts';

export type FieldErrors = Record<string, string[]>;

/** The one error type modules throw; the HTTP error handler turns it into the SPEC.md envelope. */
export class ApiError extends Error {
  readonly def: ErrorDef;
  readonly errors?: FieldErrors;
  readonly extra?: Record<string, unknown>;
  readonly headers?: Record<string, string>;

  constructor(
    name: ErrorName,
    opts: { message?: string; errors?: FieldErrors; extra?: Record<string, unknown>; headers?: Record<string, string> } = {},
  ) {
    const d = Errors[name];
    super(opts.message ?? d.message);
    this.name = 'ApiError';
    this.def = d;
    this.errors = opts.errors;
    this.extra = opts.extra;
    this.headers = opts.headers;
  }

  get status(): number {
    return this.def.status;
  }

  body(): Record<string, unknown> {
    const out: Record<string, unknown> = { message: this.message };
    if (this.def.code !== null) out.code = this.def.code;
    if (this.def.codeName !== null) out.code_name = this.def.codeName;
    if (this.errors) out.errors = this.errors;
    if (this.extra) Object.assign(out, this.extra);
    return out;
  }
}

/** Shorthand for a 422 validation_error about specific fields. */
export function validationError(errors: FieldErrors, message?: string): ApiError {
  return new ApiError('validation_error', { errors, message });
}

export function notFound(): ApiError {
  return new ApiError('record_not_found');
}
