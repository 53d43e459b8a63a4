import type { AppDeps } from '../../platform/context.ts';
import { toPesos } from '../../platform/money.ts';
import { emitEvent } from '../../platform/outbox/outbox.ts';
import { inTenant, type Tenant } from '../../platform/scope.ts';
import { BALANCE_NOTICE_JOB, BALANCE_NOTICE_WINDOW_MS } from './balance-notices.ts';
import { ROLL_UP_JOB, rollUp, type RollUpResult } from './roll-up.ts';
import { getBalances } from './service.ts';

/**
 * balance.updated, the sending side (docs/ledger.md "balance.updated"): the job a notice enqueued
 * (balance-notices.ts). In one transaction: no balance.updated of this company, environment and
 * currency in the last second (else it comes back when the second is over); close the notice —
 * its DELETE waits for every posting that joined it to commit —; read the figures; emit. A job
 * that finds no due notice (another run closed it) does nothing, so a retried or duplicate run
 * emits nothing twice. Then, in a short transaction of its own, the company's accounts in that
 * currency are rolled up (roll-up.ts): every posting that joined the notice has committed by then.
 */
export async function sendBalanceNotice(deps: AppDeps, payload: Record<string, unknown>): Promise<void> {
  const scope: Tenant = { companyId: String(payload.company_id), environment: payload.environment === 'live' ? 'live' : 'test' };
  const currency = String(payload.currency);
  const rescheduled = await deps.database.db.transaction().execute(async (trx) => {
    const now = deps.clock.now();
    const last = await trx
      .selectFrom('balance_notice_sends')
      .select('sent_at')
      .$call(inTenant(scope))
      .where('currency', '=', currency)
      .forUpdate()
      .executeTakeFirst();
    const next = last ? new Date(last.sent_at).getTime() + BALANCE_NOTICE_WINDOW_MS : 0;
    if (next > now.getTime()) {
      await deps.jobs.enqueue(trx, BALANCE_NOTICE_JOB, payload, new Date(next));
      return true;
    }
    const closed = await trx
      .deleteFrom('balance_notices')
      .$call(inTenant(scope))
      .where('currency', '=', currency)
      .where('due_at', '<=', now)
      .returning('due_at')
      .executeTakeFirst();
    if (!closed) return false;
    const figures = (await getBalances(trx, scope)).find((b) => b.currency === currency) ?? { currency, available: 0n, pending: 0n, held: 0n };
    await emitEvent(
      { ...scope, db: trx, deps },
      'balance.updated',
      { currency, available: toPesos(figures.available), pending: toPesos(figures.pending), held: toPesos(figures.held) },
      now,
    );
    await trx
      .insertInto('balance_notice_sends')
      .values({ company_id: scope.companyId, environment: scope.environment, currency, sent_at: now })
      .onConflict((oc) => oc.columns(['company_id', 'environment', 'currency']).doUpdateSet({ sent_at: now }))
      .execute();
    return false;
  });
  if (!rescheduled) reportSkipped(deps, scope, await rollUp(deps.database.db, scope, { currency, now: deps.clock.now() }));
}

/**
 * An account the roll-up left out (its fold would break the floor: a bug, roll-up.ts) is logged
 * as an error each time; the roll-up of the others went through and the job succeeds.
 */
function reportSkipped(deps: AppDeps, scope: Tenant, result: RollUpResult): void {
  for (const s of result.skipped)
    deps.logger.error(
      {
        companyId: scope.companyId,
        environment: scope.environment,
        accountId: s.accountId,
        rolledUp: String(s.rolledUp),
        unrolled: String(s.unrolled),
      },
      'ledger roll-up left an account unrolled: folding it would take its balance below zero (see auditLedger)',
    );
}

/** The job a posting enqueues when it leaves unrolled entries and no balance notice (roll-up.ts). */
export async function runRollUp(deps: AppDeps, payload: Record<string, unknown>): Promise<void> {
  const scope: Tenant = { companyId: String(payload.company_id), environment: payload.environment === 'live' ? 'live' : 'test' };
  reportSkipped(deps, scope, await rollUp(deps.database.db, scope, { currency: String(payload.currency), now: deps.clock.now() }));
}

export function registerLedgerJobs(deps: AppDeps): void {
  deps.jobs.register(BALANCE_NOTICE_JOB, (payload) => sendBalanceNotice(deps, payload));
  deps.jobs.register(ROLL_UP_JOB, (payload) => runRollUp(deps, payload));
}
