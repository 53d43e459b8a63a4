import type { Transaction } from 'kysely';
import type { DB } from './db/schema.ts';

/** One row of a state machine's table (src/platform/state-machine.ts applies them). */
export interface Transition<S extends string, A extends string> {
  /**
   * The statuses the action is allowed from (null inside the list: a status column still empty);
   * null for the row that creates the resource.
   */
  from: readonly (S | null)[] | null;
  action: A;
  to: S;
  /** The SPEC.md events the transition emits, in order (none for an internal step). */
  events: readonly string[];
}

/**
 * Another module's reaction to a transition of a machine it does not own, run inside the
 * transition's transaction after the row's own events (invoices follow their payment). Registered
 * per runtime (AppDeps.transitions), never in a process-global list.
 */
export type TransitionListener<Scope> = (trx: Transaction<DB>, scope: Scope, row: any, transition: Transition<string, string>) => Promise<void>;

export class TransitionListeners<Scope> {
  private readonly byMachine = new Map<string, TransitionListener<Scope>[]>();

  on(machine: { name: string } | string, listener: TransitionListener<Scope>): void {
    const name = typeof machine === 'string' ? machine : machine.name;
    const list = this.byMachine.get(name) ?? [];
    if (!list.includes(listener)) list.push(listener);
    this.byMachine.set(name, list);
  }

  async notify(trx: Transaction<DB>, scope: Scope, machine: string, row: unknown, transition: Transition<string, string>): Promise<void> {
    for (const listener of this.byMachine.get(machine) ?? []) await listener(trx, scope, row, transition);
  }
}
