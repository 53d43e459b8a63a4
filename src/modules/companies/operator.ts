import type { Executor } from '../../platform/db/database.ts';
import type { Environment } from '../../platform/db/schema.ts';
import { ApiError } from '../../platform/errors/api-error.ts';
import { replaceAllowedOrigins } from './allowed-origins.ts';
import { OperatorInputError } from './service.ts';

/**
 * What every operator command (CLI and control socket) starts with: the company and environment it
 * names, checked (problems are OperatorInputError, exit code 2).
 */
export async function scopeOf(db: Executor, input: { company?: string; env?: string }): Promise<{ companyId: string; environment: Environment }> {
  if (input.env !== 'test' && input.env !== 'live') throw new OperatorInputError('--env must be test or live');
  if (typeof input.company !== 'string' || !input.company) throw new OperatorInputError('--company is required');
  const company = await db.selectFrom('companies').select('id').where('id', '=', input.company).executeTakeFirst();
  if (!company) throw new OperatorInputError(`company ${input.company} does not exist`);
  return { companyId: company.id, environment: input.env };
}

/** Field errors as the operator reads them: `field: message; message`, one per line. */
export function describeFieldErrors(errors: Record<string, string[]> | undefined): string {
  return Object.entries(errors ?? {})
    .map(([field, messages]) => `${field}: ${messages.join('; ')}`)
    .join('\n  ');
}

/**
 * `recaudo companies set --company ID --env test|live --allowed-origins A,B` (CLI and control
 * socket): replaces the browser origins of POST /v1/tokens (docs/browser-tokenization.md) with the
 * rules of PUT /v1/company/allowed-origins; an empty value clears the list.
 */
export async function setAllowedOriginsOperator(
  db: Executor,
  input: { company?: string; env?: string; origins?: string },
  now: Date,
): Promise<{ company: { id: string }; environment: Environment; allowed_origins: string[] }> {
  if (typeof input.origins !== 'string') throw new OperatorInputError('--allowed-origins is required (comma-separated; empty clears)');
  const scope = await scopeOf(db, input);
  const list = input.origins
    .split(',')
    .map((o) => o.trim())
    .filter(Boolean);
  try {
    const origins = await replaceAllowedOrigins(db, scope, list, now);
    return { company: { id: scope.companyId }, environment: scope.environment, allowed_origins: origins };
  } catch (error) {
    if (error instanceof ApiError) {
      const details = describeFieldErrors(error.errors);
      throw new OperatorInputError(details ? `invalid allowed origins:\n  ${details}` : error.message);
    }
    throw error;
  }
}

/** One API key as `recaudo keys list` shows it: never the key (only its hash is stored) nor its hash. */
export interface KeyView {
  id: string;
  prefix: string;
  environment: Environment;
  kind: 'secret' | 'publishable';
  created_at: string;
  revoked_at: string | null;
  /** A named key's name (`recaudo keys create`); null for the main key. */
  name: string | null;
}

/** `recaudo keys list --company ID [--env test|live]` (CLI and control socket): newest first. */
export async function listKeysOperator(
  db: Executor,
  input: { company?: string; env?: string },
): Promise<{ company: { id: string }; keys: KeyView[] }> {
  if (typeof input.company !== 'string' || !input.company) throw new OperatorInputError('--company is required');
  if (input.env !== undefined && input.env !== 'test' && input.env !== 'live') throw new OperatorInputError('--env must be test or live');
  const company = await db.selectFrom('companies').select('id').where('id', '=', input.company).executeTakeFirst();
  if (!company) throw new OperatorInputError(`company ${input.company} does not exist`);
  let q = db
    .selectFrom('api_keys')
    .select(['id', 'key_hint', 'environment', 'kind', 'created_at', 'revoked_at', 'name'])
    .where('company_id', '=', company.id)
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc');
  if (input.env) q = q.where('environment', '=', input.env);
  const rows = await q.execute();
  return {
    company: { id: company.id },
    keys: rows.map((r) => ({
      id: r.id,
      prefix: r.key_hint,
      environment: r.environment as Environment,
      kind: r.kind as 'secret' | 'publishable',
      created_at: new Date(r.created_at).toISOString(),
      revoked_at: r.revoked_at ? new Date(r.revoked_at).toISOString() : null,
      name: r.name ?? null,
    })),
  };
}
