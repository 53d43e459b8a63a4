import type { Executor } from '../../platform/db/database.ts';
import { inTransaction } from '../../platform/db/database.ts';
import { ApiError } from '../../platform/errors/api-error.ts';
import { CONNECTOR_NAMES, type ConnectorName } from '../../rails/index.ts';
import { OperatorInputError } from '../companies/service.ts';
import { describeFieldErrors, scopeOf } from '../companies/operator.ts';
import { putConnectorBody, type ConnectorResponse } from './schemas.ts';
import { getConnector, putConnector, type SettingsDeps } from './settings.ts';

/**
 * `recaudo connectors show|set` (the CLI and the server's control socket): the same schema and
 * rules as GET/PUT /v1/connectors/{name}; problems become OperatorInputError (exit code 2).
 */
export interface ConnectorCommand {
  company: string;
  env: string;
  name?: string;
  settings?: Record<string, unknown>;
}

export interface ConnectorOutput {
  company: { id: string };
  environment: 'test' | 'live';
  connector: ConnectorResponse;
}

function nameOf(input: ConnectorCommand): ConnectorName {
  const name = input.name ?? 'wompi';
  if (!(CONNECTOR_NAMES as readonly string[]).includes(name))
    throw new OperatorInputError(`unknown connector ${name} (known: ${CONNECTOR_NAMES.join(', ')})`);
  return name as ConnectorName;
}

function operatorError(error: unknown): never {
  if (error instanceof ApiError) {
    const details = describeFieldErrors(error.errors);
    throw new OperatorInputError(details ? `invalid connector settings:\n  ${details}` : error.message);
  }
  throw error;
}

export async function showConnector(deps: SettingsDeps, db: Executor, input: ConnectorCommand): Promise<ConnectorOutput> {
  const scope = await scopeOf(db, input);
  try {
    return { company: { id: scope.companyId }, environment: scope.environment, connector: await getConnector(deps, db, scope, nameOf(input)) };
  } catch (error) {
    operatorError(error);
  }
}

export async function setConnector(deps: SettingsDeps, db: Executor, input: ConnectorCommand, now: Date): Promise<ConnectorOutput> {
  const scope = await scopeOf(db, input);
  const parsed = putConnectorBody.safeParse(input.settings ?? {});
  if (!parsed.success) {
    throw new OperatorInputError(
      `invalid connector settings:\n  ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('\n  ')}`,
    );
  }
  try {
    const connector = await inTransaction(db, (trx) => putConnector(deps, trx, scope, nameOf(input), parsed.data, now));
    return { company: { id: scope.companyId }, environment: scope.environment, connector };
  } catch (error) {
    operatorError(error);
  }
}
