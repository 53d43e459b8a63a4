import { sql, type Transaction } from 'kysely';
import type { Executor } from '../db/database.ts';
import type { DB, Environment } from '../db/schema.ts';
import type { Tenant } from '../scope.ts';
import { prefixedId } from '../ids.ts';

export interface EventScope extends Tenant {
  db: Executor;
  /** Where this runtime's sinks are registered (AppDeps.eventSinks). */
  deps: { eventSinks: EventSinks };
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

/** A tenant with its runtime's sinks: what may emit events (with a transaction as `db`). */
export type EmitterScope = Tenant & { deps: { eventSinks: EventSinks } };

/** The sinks of one runtime (AppDeps.eventSinks), never a process-global list. */
export class EventSinks {
  private readonly sinks: EventSink[] = [];

  add(sink: EventSink): void {
    if (!this.sinks.includes(sink)) this.sinks.push(sink);
  }

  async run(trx: Transaction<DB>, scope: Tenant, event: OutboxEvent, at: Date): Promise<void> {
    for (const sink of this.sinks) await sink(trx, scope, event, at);
  }
}

const notified = new WeakSet<object>();
export const WORK_CHANNEL = 'recaudo_work';

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
  await scope.deps.eventSinks.run(scope.db as Transaction<DB>, { companyId: scope.companyId, environment: scope.environment }, event, at);
  // Workers in other processes LISTEN: the notification is sent when (and only if) this commits.
  if (!notified.has(scope.db)) {
    notified.add(scope.db);
    await sql`select pg_notify(${WORK_CHANNEL}, '')`.execute(scope.db);
  }
  scope.notifyWorkers?.();
  return event;
}
