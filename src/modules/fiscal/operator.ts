import type { Executor } from '../../platform/db/database.ts';
import { inTransaction } from '../../platform/db/database.ts';
import type { Environment } from '../../platform/db/schema.ts';
import { ApiError } from '../../platform/errors/api-error.ts';
import { OperatorInputError } from '../companies/service.ts';
import { describeFieldErrors, scopeOf } from '../companies/operator.ts';
import type { Keyring } from '../../platform/secrets.ts';
import { getFiscalProfile, openBodyCertificate, putFiscalProfile } from './profile.ts';
import { fiscalProfileBody, type FiscalProfileResponse } from './schemas.ts';

/**
 * `recaudo fiscal-profile show|set` (the CLI and the running server's control socket): the same
 * schema and rules as GET/PUT /fiscal-profile; problems become OperatorInputError (exit code 2).
 */
export interface FiscalProfileCommand {
  company: string;
  env: string;
  profile?: Record<string, unknown>;
}

export interface FiscalProfileOutput {
  company: { id: string };
  environment: Environment;
  profile: FiscalProfileResponse;
}

export async function showFiscalProfile(db: Executor, secrets: Keyring, input: FiscalProfileCommand): Promise<FiscalProfileOutput> {
  const scope = await scopeOf(db, input);
  return { company: { id: scope.companyId }, environment: scope.environment, profile: await getFiscalProfile(db, secrets, scope) };
}

export async function setFiscalProfile(db: Executor, secrets: Keyring, input: FiscalProfileCommand, now: Date): Promise<FiscalProfileOutput> {
  const scope = await scopeOf(db, input);
  const parsed = fiscalProfileBody.safeParse(input.profile ?? {});
  if (!parsed.success) {
    const errors: Record<string, string[]> = {};
    for (const issue of parsed.error.issues) (errors[issue.path.join('.') || 'profile'] ??= []).push(issue.message);
    throw new OperatorInputError(`invalid fiscal profile:\n  ${describeFieldErrors(errors)}`);
  }
  try {
    // The certificate is opened (in a worker thread) before the transaction, which must not wait on it.
    const opened = await openBodyCertificate(parsed.data);
    const profile = await inTransaction(db, (trx) => putFiscalProfile(trx, secrets, scope, parsed.data, now, opened));
    return { company: { id: scope.companyId }, environment: scope.environment, profile };
  } catch (error) {
    if (error instanceof ApiError && error.def.codeName === 'validation_error')
      throw new OperatorInputError(`invalid fiscal profile:\n  ${describeFieldErrors(error.errors)}`);
    throw error;
  }
}
