import type { Executor } from '../db/database.ts';
import type { Environment } from '../db/schema.ts';
import { prefixedId } from '../ids.ts';

export interface EventScope {
  companyId: string;
  environment: Environment;
  db: Executor;
}

export interface OutboxEvent {
  id: string;
  event: string;
  created_at: string;
  is_test: boolean;
  data: Record<string, unknown>;
}

/**
 * Writes an event into the outbox. Call it with the executor of the transaction that makes the
 * state change, so the event exists if and only if the change commits.
 */
export async function emitEvent(
  scope: EventScope,
  type: string,
  data: Record<string, unknown>,
  at: Date,
): Promise<OutboxEvent> {
  if (!scope.db.isTransaction) throw new Error(`emitEvent(${type}) must run inside the state change's transaction`);
  const id = prefixedId('evt', at.getTime());
  await scope.db
    .insertInto('events')
    .values({
      company_id: scope.companyId,
      environment: scope.environment,
      id,
      type,
      data: JSON.stringify(data),
      created_at: at,
    })
    .execute();
  return { id, event: type, created_at: at.toISOString(), is_test: scope.environment === 'test', data };
}
