import type { Transaction } from 'kysely';
import type { ServiceScope } from './context.ts';
import type { DB } from './db/schema.ts';
import { emitEvent } from './outbox/outbox.ts';
import { inTenant } from './scope.ts';
import type { Transition } from './transitions.ts';

export type { Transition } from './transitions.ts';

/**
 * THE state-machine engine (docs/architecture.md "State machines"). A resource's lifecycle is a
 * table of `from → action → to (+ events)` rows; every status change of every resource goes
 * through `applyTransition`, which updates the row only if its status is still the one the
 * caller read (so a transition happens at most once when two callers race) and writes the row's
 * events into the outbox in the same transaction. Modules declare their tables; none writes a
 * status column by hand.
 */

/** The table forbids `action` from the resource's current status (or another caller moved it first). */
export class TransitionNotAllowed extends Error {
  constructor(
    readonly machine: string,
    readonly from: string | null,
    readonly action: string,
  ) {
    super(`${machine} transition ${action} is not allowed from ${from ?? '(new)'}`);
    this.name = 'TransitionNotAllowed';
  }
}

export class StateMachine<S extends string, A extends string> {
  constructor(
    readonly name: string,
    readonly transitions: readonly Transition<S, A>[],
  ) {
    // A (from, action) pair has at most one row: the table is a function.
    const seen = new Set<string>();
    for (const t of transitions) {
      for (const from of t.from ?? [null]) {
        const key = `${from}\u0000${t.action}`;
        if (seen.has(key)) throw new Error(`${name}: two transitions for ${t.action} from ${from}`);
        seen.add(key);
      }
    }
  }

  /** The transition for `action` from `from`, or null when the table forbids it. */
  find(from: S | null, action: A): Transition<S, A> | null {
    return this.transitions.find((t) => t.action === action && (t.from === null ? from === null : t.from.includes(from))) ?? null;
  }

  /** As find, but a forbidden action throws TransitionNotAllowed. */
  require(from: S | null, action: A): Transition<S, A> {
    const t = this.find(from, action);
    if (!t) throw new TransitionNotAllowed(this.name, from, action);
    return t;
  }

  /** The statuses `action` is allowed from. */
  sources(action: A): S[] {
    return this.transitions.filter((t) => t.action === action).flatMap((t) => (t.from ?? []).filter((f): f is S => f !== null));
  }

  /**
   * A set-based move of many rows at once (a batch of webhook deliveries settled by the
   * dispatcher): the statuses a row must still have, and the status it gets. The caller's update
   * matches `status IN from`, so the table stays the one authority for those moves too.
   */
  batch(action: A): { from: S[]; to: S } {
    const rows = this.transitions.filter((t) => t.action === action && t.from !== null);
    if (rows.length !== 1) throw new Error(`${this.name}: ${action} must have exactly one row to be applied in batch`);
    return { from: this.sources(action), to: rows[0].to };
  }

  /**
   * The status a creation row gives, for a set-based insert (many rows, ON CONFLICT DO NOTHING) of
   * a creation that emits nothing; one with events goes through insertWithTransition.
   */
  initial(action: A): S {
    const t = this.require(null, action);
    if (t.events.length) throw new Error(`${this.name}: ${action} emits events; insert it with insertWithTransition`);
    return t.to;
  }

  /** Every status the table names. */
  statuses(): S[] {
    return [...new Set(this.transitions.flatMap((t) => [...(t.from ?? []).filter((f): f is S => f !== null), t.to]))];
  }
}

/** Tables whose rows belong to a tenant and carry an id (the engine's contract). */
type TenantTable = {
  [K in keyof DB]: DB[K] extends { company_id: unknown; environment: unknown; id: unknown } ? K : never;
}[keyof DB];

export interface TransitionRequest<S extends string, A extends string, R> {
  /** The resource's table and the column holding the machine's status (default `status`). */
  table: TenantTable;
  column?: string;
  /** The row as the caller read it (locked in this transaction, or read just before). */
  row: R;
  action: A;
  /** Columns that change with the transition (timestamps of the new status, remarks...). */
  set?: (t: Transition<S, A>) => Record<string, unknown>;
  /** The event payload from the updated row; required when the transition emits events. */
  present?: (row: R) => unknown | Promise<unknown>;
  now?: Date;
  /** Sets updated_at (default true; false for a table without the column). */
  touch?: boolean;
}

/**
 * Applies `action` to `row` inside `trx`: checks the table, updates conditionally on the status
 * read, writes the events in the same transaction. Throws TransitionNotAllowed when the table
 * forbids it or the row moved meanwhile (nothing is written then).
 */
export async function applyTransition<S extends string, A extends string, R extends { id: string }>(
  trx: Transaction<DB>,
  scope: ServiceScope,
  machine: StateMachine<S, A>,
  request: TransitionRequest<S, A, R>,
): Promise<{ row: R; transition: Transition<S, A> }> {
  const column = request.column ?? 'status';
  const from = ((request.row as Record<string, unknown>)[column] ?? null) as S | null;
  const t = machine.require(from, request.action);
  const now = request.now ?? scope.deps.clock.now();
  const updated = (await (trx as Transaction<any>)
    .updateTable(request.table)
    .set({ ...(request.set?.(t) ?? {}), [column]: t.to, ...(request.touch === false ? {} : { updated_at: now }) })
    .$call(inTenant(scope))
    .where('id', '=', request.row.id)
    .where(column, from === null ? 'is' : '=', from)
    .returningAll()
    .executeTakeFirst()) as R | undefined;
  if (!updated) throw new TransitionNotAllowed(machine.name, from, request.action);
  await emitAll(trx, scope, t, request.present, updated, now);
  await scope.deps.transitions.notify(trx, scope, machine.name, updated, t);
  return { row: updated, transition: t };
}

/**
 * A resource enters its machine through the `create` row: inserted with that status and the row's
 * events written in the same transaction.
 */
export async function insertWithTransition<R extends { id: string }, S extends string = string, A extends string = string>(
  trx: Transaction<DB>,
  scope: ServiceScope,
  machine: StateMachine<S, A>,
  request: {
    table: TenantTable;
    column?: string;
    action: A;
    values: Record<string, unknown>;
    present?: (row: R) => unknown | Promise<unknown>;
    now?: Date;
  },
): Promise<R> {
  const t = machine.require(null, request.action);
  const row = (await (trx as Transaction<any>)
    .insertInto(request.table)
    .values({ ...request.values, company_id: scope.companyId, environment: scope.environment, [request.column ?? 'status']: t.to })
    .returningAll()
    .executeTakeFirstOrThrow()) as R;
  await emitAll(trx, scope, t, request.present, row, request.now ?? ((row as Record<string, unknown>).created_at as Date) ?? scope.deps.clock.now());
  return row;
}

async function emitAll<S extends string, A extends string, R>(
  trx: Transaction<DB>,
  scope: ServiceScope,
  t: Transition<S, A>,
  present: ((row: R) => unknown | Promise<unknown>) | undefined,
  row: R,
  now: Date,
): Promise<void> {
  if (!t.events.length) return;
  if (!present) throw new Error(`transition ${t.action} emits ${t.events.join(', ')} but has no payload`);
  const data = (await present(row)) as Record<string, unknown>;
  for (const event of t.events) await emitEvent({ ...scope, db: trx }, event, data, now);
}
