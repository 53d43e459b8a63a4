import type { AppDeps } from '../../platform/context.ts';
import type { Insertable } from 'kysely';
import type { ConnectorEventsTable } from './tables.ts';
import { ApiError } from '../../platform/errors/api-error.ts';
import { prefixedId } from '../../platform/ids.ts';
import { debitOutcomeOf, polledOutcomeOf } from '../../rails/connectors/wompi/outcomes.ts';
import { eventChecksumValid, WOMPI_STATUSES, type WompiEvent, type WompiTransaction } from '../../rails/connectors/wompi/contract.ts';
import { WompiRefused } from '../../rails/connectors/wompi/client.ts';
import { connectorClient, type ConnectorSettings } from '../../rails/index.ts';
import type { Tenant } from '../../platform/scope.ts';
import { findCharge, findChargeTenant } from '../charges/queries.ts';
import { saveDebitOutcome } from '../charges/settle.ts';
import { settlePayerCharge } from '../charges/collect.ts';
import { findSettingsByEventsToken, readConnectorSettings } from './settings.ts';
import { findAttempt, findAttemptTenant, settleAttemptFromProvider } from '../payments/provider-attempts.ts';

/** The provider's signed events (docs/connectors.md "Events"): see receiveWompiEvent. */

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

/** How old an event may be, and how far ahead of our clock its timestamp may run (clock skew), in seconds. */
export const EVENT_MAX_AGE_S = 3_600;
export const EVENT_MAX_SKEW_S = 300;

/** The event types the connector acts on; any other verified event is acknowledged and ignored. */
const USED_EVENTS = ['transaction.updated'];

function transactionOf(body: unknown): WompiTransaction | null {
  const tx = (body as { data?: { transaction?: unknown } } | null)?.data?.transaction as WompiTransaction | undefined;
  if (!tx || typeof tx !== 'object' || typeof tx.id !== 'string' || !tx.id) return null;
  return tx;
}

/** Why an event's timestamp is refused (older than an hour, or from the future), or null. `unit`: the provider's timestamp unit. */
export function staleness(timestamp: unknown, now: Date, unit: 's' | 'ms' = 's'): string | null {
  if (typeof timestamp !== 'number' || !Number.isFinite(timestamp)) return 'no timestamp';
  const seconds = unit === 'ms' ? timestamp / 1000 : timestamp;
  const age = now.getTime() / 1000 - seconds;
  if (age > EVENT_MAX_AGE_S) return 'older than an hour';
  if (age < -EVENT_MAX_SKEW_S) return 'from the future';
  return null;
}

export const refuse = (message: string) => new ApiError('unauthenticated', { message });

/** The settings (tenant and secrets) of a company's events URL; an unknown token is recorded and 401. */
export async function settingsOfEventsUrl(deps: AppDeps, token: string, recorded: RecordedEvent): Promise<ConnectorSettings & Tenant> {
  const found = await findSettingsByEventsToken(deps, deps.database.db, token);
  if (found) return found;
  await recordConnectorEvent(deps, { ...recorded, problem: 'unknown events URL' });
  throw refuse('This events URL belongs to no connector.');
}

/**
 * POST /v1/rails/wompi/events/{token} (and the deprecated URL without a token). An event is a hint,
 * never proof (PRODUCT.md "Live money you can trust"):
 * 1. the tenant comes from the events URL's token (deprecated URL: from the charge or attempt the
 *    event names, whose company's secret must then verify it);
 * 2. the checksum is verified with that company's events secret, and an event older than an hour or
 *    from the future is refused: 401, recorded;
 * 3. an event type the connector does not use is acknowledged (200) and ignored;
 * 4. the transaction is read back from the provider (its id is signed): the provider's answer, not
 *    the event, gives the reference, status, amount and currency;
 * 5. the charge or attempt is the one of the provider's reference in this company; a transaction id
 *    other than the one recorded for it, or an amount or currency other than ours, settles nothing
 *    (recorded);
 * 6. the provider's status is saved through the object's state machine (twice, or after a poll: once).
 */
export async function receiveWompiEvent(deps: AppDeps, body: unknown, token: string | null): Promise<{ received: boolean; settled: string | null }> {
  const event = body as WompiEvent;
  const hinted = transactionOf(body);
  const eventName = typeof event?.event === 'string' ? event.event.slice(0, 100) : null;
  const base: Recorded = {
    company_id: null,
    environment: null,
    event: eventName,
    reference: typeof hinted?.reference === 'string' ? hinted.reference.slice(0, 100) : null,
    provider_id: hinted?.id.slice(0, 100) ?? null,
    provider_status: typeof hinted?.status === 'string' ? hinted.status.slice(0, 40) : null,
    verified: false,
    problem: null,
  };
  const db = deps.database.db;
  let settings: ConnectorSettings | null | undefined;
  let scope: Tenant | undefined;
  if (token !== null) {
    const found = await settingsOfEventsUrl(deps, token, base);
    scope = { companyId: found.companyId, environment: found.environment };
    settings = found;
  } else {
    // The deprecated URL: the event's (unsigned) reference only proposes a company; its secret decides.
    if (!eventName || !USED_EVENTS.includes(eventName) || !hinted || typeof hinted.reference !== 'string') {
      await recordConnectorEvent(deps, { ...base, problem: 'ignored event type' });
      return { received: true, settled: null };
    }
    const owner = (await findChargeTenant(db, hinted.reference)) ?? (await findAttemptTenant(db, hinted.reference));
    if (!owner) {
      await recordConnectorEvent(deps, { ...base, problem: 'unknown reference' });
      return { received: true, settled: null };
    }
    scope = { companyId: owner.companyId, environment: owner.environment };
    settings = await readConnectorSettings(deps, db, scope);
  }
  const tenant: Recorded = { ...base, company_id: scope.companyId, environment: scope.environment };
  if (!settings) {
    await recordConnectorEvent(deps, { ...tenant, problem: 'no connector configured' });
    throw refuse('No connector of this company can verify the event.');
  }
  if (!eventChecksumValid(event, settings.eventsSecret)) {
    await recordConnectorEvent(deps, { ...tenant, problem: 'bad checksum' });
    throw refuse('The event checksum does not match.');
  }
  const stale = staleness(event.timestamp, deps.clock.now());
  if (stale) {
    await recordConnectorEvent(deps, { ...tenant, problem: `refused: ${stale}` });
    throw refuse(`The event is ${stale}: it is not accepted (the transaction is polled instead).`);
  }
  if (!eventName || !USED_EVENTS.includes(eventName) || !hinted) {
    await recordConnectorEvent(deps, { ...tenant, verified: true, problem: 'ignored event type' });
    return { received: true, settled: null };
  }
  // The provider's word on the (signed) transaction id, never the event's fields.
  let tx: WompiTransaction;
  try {
    tx = await connectorClient(settings, { timeoutMs: deps.config.railCallTimeoutMs }).getTransaction(hinted.id);
  } catch (error) {
    if (error instanceof WompiRefused) {
      await recordConnectorEvent(deps, { ...tenant, verified: true, problem: `read back refused: ${error.status}` });
      return { received: true, settled: null };
    }
    await recordConnectorEvent(deps, { ...tenant, verified: true, problem: 'read back unavailable' });
    throw new ApiError('service_unavailable', { message: 'The provider could not be asked about the transaction; send the event again later.' });
  }
  const known: Recorded = {
    ...tenant,
    verified: true,
    reference: String(tx.reference ?? '').slice(0, 100) || null,
    provider_id: String(tx.id).slice(0, 100),
    provider_status: String(tx.status).slice(0, 40),
  };
  if (tx.id !== hinted.id || !(WOMPI_STATUSES as readonly string[]).includes(tx.status)) {
    await recordConnectorEvent(deps, { ...known, problem: 'read back does not match the event' });
    return { received: true, settled: null };
  }
  const charge = await findCharge(db, scope, tx.reference);
  const attempt = charge ? undefined : await findAttempt(db, scope, tx.reference);
  const target = charge ?? attempt;
  if (!target) {
    await recordConnectorEvent(deps, { ...known, problem: 'unknown reference' });
    return { received: true, settled: null };
  }
  const mismatch =
    target.network_id && !target.network_id.startsWith('sbx_') && target.network_id !== tx.id
      ? `transaction ${tx.id} is not the one recorded (${target.network_id})`
      : BigInt(tx.amount_in_cents) !== target.amount || tx.currency !== target.currency
        ? `amount ${tx.amount_in_cents} ${tx.currency} is not the recorded ${target.amount} ${target.currency}`
        : null;
  if (mismatch) {
    deps.logger.error({ company_id: scope.companyId, reference: tx.reference, provider_id: tx.id }, `wompi event refused: ${mismatch}`);
    await recordConnectorEvent(deps, { ...known, problem: mismatch.slice(0, 250) });
    return { received: true, settled: null };
  }
  await recordConnectorEvent(deps, known);
  if (!charge) return { received: true, settled: await settleAttemptFromProvider(deps, scope, tx.reference, polledOutcomeOf(tx)) };
  if (charge.payment_method_type === 'card') {
    const settleAt = new Date(deps.clock.now().getTime() + deps.config.connectorPollAfterMs);
    const row = await saveDebitOutcome(deps, scope, tx.reference, debitOutcomeOf(tx, settleAt));
    return { received: true, settled: row.status };
  }
  if (charge.payment_method_type === 'banklink' || charge.payment_method_type === 'walleta') {
    const outcome = polledOutcomeOf(tx);
    if (outcome.status === 'pending') return { received: true, settled: null };
    // The provider's final word stands even past the charge's expiry (a payer who paid late still paid).
    const { row } = await settlePayerCharge(deps, scope, tx.reference, outcome, { fromProvider: true });
    return { received: true, settled: row.status };
  }
  return { received: true, settled: null };
}
