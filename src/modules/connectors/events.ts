import type { AppDeps } from '../../platform/context.ts';
import type { Insertable } from 'kysely';
import type { ConnectorEventsTable } from './tables.ts';
import { ApiError } from '../../platform/errors/api-error.ts';
import { prefixedId } from '../../platform/ids.ts';
import { debitOutcomeOf, polledOutcomeOf } from '../../rails/connectors/wompi/outcomes.ts';
import { eventChecksumValid, WOMPI_STATUSES, type WompiEvent, type WompiTransaction } from '../../rails/connectors/wompi/contract.ts';
import { findChargeTenant } from '../charges/queries.ts';
import { saveDebitOutcome } from '../charges/settle.ts';
import { settlePayerCharge } from '../charges/collect.ts';
import { readConnectorSettings } from './settings.ts';
import { findAttemptTenant, settleAttemptFromProvider } from '../payments/provider-attempts.ts';

/**
 * POST /v1/rails/wompi/events: the provider's signed events (docs/connectors.md "Outcomes"). The
 * reference of the transaction is the charge id, which names the company and environment; the
 * checksum is verified with that tenant's events secret before anything in the event is used. A
 * bad checksum is 401 and recorded; an event for a reference Recaudo does not know (another
 * integration on the same provider account) is acknowledged and recorded. The outcome is saved
 * through the charge's state machine, so the same event twice, or an event and a poll, settle once.
 */

/** What is kept of an event (the row without its id, connector and time). */
export type RecordedEvent = Omit<Insertable<ConnectorEventsTable>, 'id' | 'connector' | 'received_at'>;
type Recorded = RecordedEvent;

/** Every event posted by the provider is kept: verified or refused, and why. */
export async function recordConnectorEvent(deps: AppDeps, row: RecordedEvent): Promise<void> {
  const now = deps.clock.now();
  await deps.database.db
    .insertInto('connector_events')
    .values({ id: prefixedId('cev', now.getTime()), connector: 'wompi', received_at: now, ...row })
    .execute();
}

function transactionOf(body: unknown): WompiTransaction | null {
  const tx = (body as { data?: { transaction?: unknown } } | null)?.data?.transaction as WompiTransaction | undefined;
  if (!tx || typeof tx !== 'object' || typeof tx.id !== 'string' || typeof tx.reference !== 'string') return null;
  if (!(WOMPI_STATUSES as readonly string[]).includes(tx.status)) return null;
  return tx;
}

export async function receiveWompiEvent(deps: AppDeps, body: unknown): Promise<{ received: boolean; settled: string | null }> {
  const event = body as WompiEvent;
  const tx = transactionOf(body);
  const base: Recorded = {
    company_id: null,
    environment: null,
    event: typeof event?.event === 'string' ? event.event.slice(0, 100) : null,
    reference: tx?.reference.slice(0, 100) ?? null,
    provider_id: tx?.id.slice(0, 100) ?? null,
    provider_status: tx?.status ?? null,
    verified: false,
    problem: null,
  };
  if (!tx) {
    await recordConnectorEvent(deps, { ...base, problem: 'not a transaction event' });
    throw new ApiError('unauthenticated', { message: 'The event names no transaction and cannot be verified.' });
  }
  const charge = await findChargeTenant(deps.database.db, tx.reference);
  // A payment page's attempt (its id is the reference) when it is not a charge.
  const attempt = charge ? undefined : await findAttemptTenant(deps.database.db, tx.reference);
  const owner = charge ?? attempt;
  if (!owner) {
    await recordConnectorEvent(deps, { ...base, problem: 'unknown reference' });
    return { received: true, settled: null };
  }
  const scope = { companyId: owner.companyId, environment: owner.environment };
  const tenant = { ...base, company_id: scope.companyId, environment: scope.environment };
  const settings = await readConnectorSettings(deps, deps.database.db, scope);
  if (!settings) {
    await recordConnectorEvent(deps, { ...tenant, problem: 'no connector configured' });
    throw new ApiError('unauthenticated', { message: 'No connector of this company can verify the event.' });
  }
  if (!eventChecksumValid(event, settings.eventsSecret)) {
    await recordConnectorEvent(deps, { ...tenant, problem: 'bad checksum' });
    throw new ApiError('unauthenticated', { message: 'The event checksum does not match.' });
  }
  await recordConnectorEvent(deps, { ...tenant, verified: true });
  if (!charge) return { received: true, settled: await settleAttemptFromProvider(deps, scope, tx.reference, polledOutcomeOf(tx)) };
  if (charge.method === 'card') {
    const settleAt = new Date(deps.clock.now().getTime() + deps.config.connectorPollAfterMs);
    const row = await saveDebitOutcome(deps, scope, tx.reference, debitOutcomeOf(tx, settleAt));
    return { received: true, settled: row.status };
  }
  if (charge.method === 'banklink' || charge.method === 'walleta') {
    const outcome = polledOutcomeOf(tx);
    if (outcome.status === 'pending') return { received: true, settled: null };
    // The provider's final word stands even past the charge's expiry (a payer who paid late still paid).
    const { row } = await settlePayerCharge(deps, scope, tx.reference, outcome, { fromProvider: true });
    return { received: true, settled: row.status };
  }
  return { received: true, settled: null };
}
