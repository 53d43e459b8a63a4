import type { AppDeps } from '../../platform/context.ts';
import { ApiError } from '../../platform/errors/api-error.ts';
import { OperatorInputError } from '../companies/service.ts';
import { describeFieldErrors, scopeOf } from '../companies/operator.ts';
import { setPayoutAccount } from './service.ts';

/**
 * `recaudo companies set --payout-account ID --env test|live` (the CLI and the server's control
 * socket): the account POST /balances pays to, with the rules of PUT /v1/company/payout-account;
 * problems become OperatorInputError (exit code 2).
 */
export async function setPayoutAccountOperator(
  deps: AppDeps,
  input: { company?: string; env?: string; account?: string },
): Promise<{ company: { id: string }; environment: 'test' | 'live'; payout_account: { account_id: string | null; updated_at: string | null } }> {
  if (!input.account) throw new OperatorInputError('--payout-account is required');
  const db = deps.database.db;
  const scope = await scopeOf(db, { company: input.company ?? '', env: input.env ?? '' });
  try {
    const payoutAccount = await setPayoutAccount({ ...scope, db, deps }, input.account);
    return { company: { id: scope.companyId }, environment: scope.environment, payout_account: payoutAccount };
  } catch (error) {
    if (error instanceof ApiError) {
      const details = describeFieldErrors(error.errors);
      throw new OperatorInputError(details ? `invalid payout account:\n  ${details}` : error.message);
    }
    throw error;
  }
}
