import type { Executor } from '../../platform/db/database.ts';
import type { Environment } from '../../platform/db/schema.ts';
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
