import { sql, type Compilable, type Transaction } from 'kysely';
import type { Executor } from '../db/database.ts';
import type { DB } from '../db/schema.ts';
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

/**
 * Something that reacts to an event inside the emitting transaction (webhook fan-out, flow runs).
 * `subscribers` is the query finding who listens to the event (one row each, any columns); it runs
 * in the same statement as the event's insert, so an event costs one round trip when nobody
 * listens. `deliver` gets the rows found (only called when there are some).
 */
export interface EventSink {
  subscribers(trx: Transaction<DB>, scope: Tenant, eventType: string): Compilable<Record<string, unknown>>;
  deliver(trx: Transaction<DB>, scope: Tenant, event: OutboxEvent, at: Date, rows: Record<string, unknown>[]): Promise<void>;
}

/** A tenant with its runtime's sinks: what may emit events (with a transaction as `db`). */
export type EmitterScope = Tenant & { deps: { eventSinks: EventSinks } };

/** The sinks of one runtime (AppDeps.eventSinks), never a process-global list. */
export class EventSinks {
  private readonly sinks: EventSink[] = [];

  add(sink: EventSink): void {
    if (!this.sinks.includes(sink)) this.sinks.push(sink);
  }

  /**
   * Inserts the event and finds every sink's subscribers in one statement (a data-modifying CTE
   * runs once whether or not the query reads it), then lets each sink deliver to what it found.
   */
  async insertAndDeliver(trx: Transaction<DB>, scope: Tenant, event: OutboxEvent, at: Date): Promise<void> {
    const insert = trx.insertInto('events').values({
      company_id: scope.companyId,
      environment: scope.environment,
      id: event.id,
      type: event.event,
      data: JSON.stringify(event.data),
      payload: JSON.stringify(event),
      created_at: at,
    });
    if (this.sinks.length === 0) {
      await insert.execute();
      return;
    }
    const lookups = this.sinks.map(
      (sink, i) => sql`SELECT ${sql.lit(i)}::int AS sink, to_jsonb(s) AS row FROM (${sink.subscribers(trx, scope, event.event)}) AS s`,
    );
    const { rows } = await sql<{
      sink: number;
      row: Record<string, unknown>;
    }>`WITH inserted AS (${insert}) ${sql.join(lookups, sql` UNION ALL `)}`.execute(trx);
    for (const [i, sink] of this.sinks.entries()) {
      const found = rows.filter((r) => r.sink === i).map((r) => r.row);
      if (found.length) await sink.deliver(trx, scope, event, at, found);
    }
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
  await scope.deps.eventSinks.insertAndDeliver(
    scope.db as Transaction<DB>,
    { companyId: scope.companyId, environment: scope.environment },
    event,
    at,
  );
  // Workers in other processes LISTEN: the notification is sent when (and only if) this commits.
  if (!notified.has(scope.db)) {
    notified.add(scope.db);
    await sql`select pg_notify(${WORK_CHANNEL}, '')`.execute(scope.db);
  }
  scope.notifyWorkers?.();
  return event;
}
