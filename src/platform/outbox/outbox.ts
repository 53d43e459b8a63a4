import { sql, type Transaction } from 'kysely';
import type { Executor } from '../db/database.ts';
import type { DB, Environment } from '../db/schema.ts';
import type { Tenant } from '../scope.ts';
import { prefixedId } from '../ids.ts';

export interface EventScope extends Tenant {
  db: Executor;
  /** A request context wakes this process's workers once its transaction commits. */
  notifyWorkers?: () => void;
}

export interface OutboxEvent {
  id: string;
  event: string;
  created_at: string;
  is_test: boolean;
  data: Record<string, unknown>;
}

/** Something that reacts to an event inside the emitting transaction (webhook fan-out). */
export type EventSink = (trx: Transaction<DB>, scope: { companyId: string; environment: Environment }, event: OutboxEvent, at: Date) => Promise<void>;
const sinks: EventSink[] = [];
const notified = new WeakSet<object>();
export const WORK_CHANNEL = 'recaudo_work';
export function addEventSink(sink: EventSink): void {
  if (!sinks.includes(sink)) sinks.push(sink);
}

/**
 * Writes an event into the outbox. Call it with the executor of the transaction that makes the
 * state change, so the event (and its webhook deliveries) exist if and only if the change commits.
 */
export async function emitEvent(scope: EventScope, type: string, data: Record<string, unknown>, at: Date): Promise<OutboxEvent> {
  if (!scope.db.isTransaction) throw new Error(`emitEvent(${type}) must run inside the state change's transaction`);
  const id = prefixedId('evt', at.getTime());
  const event: OutboxEvent = { id, event: type, created_at: at.toISOString(), is_test: scope.environment === 'test', data };
  await scope.db
    .insertInto('events')
    .values({
      company_id: scope.companyId,
      environment: scope.environment,
      id,
      type,
      data: JSON.stringify(data),
      payload: JSON.stringify(event),
      created_at: at,
    })
    .execute();
  for (const sink of sinks) await sink(scope.db as Transaction<DB>, scope, event, at);
  // Workers in other processes LISTEN: the notification is sent when (and only if) this commits.
  if (!notified.has(scope.db)) {
    notified.add(scope.db);
    await sql`select pg_notify(${WORK_CHANNEL}, '')`.execute(scope.db);
  }
  scope.notifyWorkers?.();
  return event;
}
