import { sql } from 'kysely';
import type { AppDeps } from '../../platform/context.ts';
import './tables.ts';

/**
 * /metrics: documents waiting for the tax authority (submitting, pending) and the ones it rejected,
 * across every company (docs/operations.md "Metrics").
 */
export function registerStampingMetrics(deps: AppDeps): void {
  deps.metrics.collect(async () => {
    const rows = await deps.database.db
      .selectFrom('stampings')
      .select(['status', sql<string>`count(*)`.as('n')])
      .where('status', 'in', ['submitting', 'pending', 'rejected'])
      .groupBy('status')
      .execute();
    const counts = new Map<string, number>([
      ['submitting', 0],
      ['pending', 0],
      ['rejected', 0],
    ]);
    for (const r of rows) counts.set(r.status, Number(r.n));
    return [
      {
        name: 'recaudo_stampings',
        help: 'Fiscal documents by stamping state: submitting or pending (waiting for the tax authority), rejected',
        samples: [...counts].map(([status, value]) => ({ labels: { status }, value })),
      },
    ];
  });
}
