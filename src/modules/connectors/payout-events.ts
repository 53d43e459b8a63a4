import type { AppDeps } from '../../platform/context.ts';
import type { Executor } from '../../platform/db/database.ts';
import { ApiError } from '../../platform/errors/api-error.ts';
import { inTenant, type Tenant } from '../../platform/scope.ts';
import type { ConnectorSettings } from '../../rails/index.ts';
import { eventChecksumValid, type WompiEvent } from '../../rails/connectors/wompi/contract.ts';
import { WompiPayoutRefused, WompiPayoutsClient } from '../../rails/connectors/wompi/payouts-client.ts';
import { payoutStanding } from '../../rails/connectors/wompi/payouts-contract.ts';
import { readPayout } from '../../rails/connectors/wompi/payouts.ts';
import { CASHOUT_ID, findCashoutByNetworkId, settleCashoutFromRail } from '../cashouts/service.ts';
import { recordConnectorEvent, refuse, settingsOfEventsUrl, staleness, type RecordedEvent } from './events.ts';
import { readConnectorSettings } from './settings.ts';

/** The Third-Party Payments event types the connector acts on; any other verified event is acknowledged and ignored. */
const USED_EVENTS = ['transaction.updated', 'payout.updated'];

interface PayoutEventBody extends WompiEvent {
  data: {
    transaction?: { id?: unknown; payoutId?: unknown; reference?: unknown; status?: unknown };
    payout?: { id?: unknown; reference?: unknown; status?: unknown };
  };
}

type Ack = { received: boolean; settled: string | null };

const text = (v: unknown, max = 100) => (typeof v === 'string' && v ? v.slice(0, max) : null);
const object = <T>(v: unknown): T | undefined => (v && typeof v === 'object' ? (v as T) : undefined);

/** The cash-out a payout reference names (`co-abc…` is the cash-out `co_abc…`), or null. */
function cashoutIdOf(reference: string | null): string | null {
  const id = reference?.replace(/^co-/, 'co_') ?? '';
  return CASHOUT_ID.test(id) ? id : null;
}

/** The cash-out of the tenant the event names: by the provider id recorded on it, else by its payout reference. */
async function findNamedCashout(db: Executor, scope: Tenant, networkIds: string[], cashoutId: string | null) {
  const columns = ['id', 'amount', 'currency', 'status', 'network_id'] as const;
  if (networkIds.length) {
    const row = await db.selectFrom('cashouts').select(columns).$call(inTenant(scope)).where('network_id', 'in', networkIds).executeTakeFirst();
    if (row) return row;
  }
  if (!cashoutId) return undefined;
  return db.selectFrom('cashouts').select(columns).$call(inTenant(scope)).where('id', '=', cashoutId).executeTakeFirst();
}

/**
 * POST /v1/rails/wompi/payout-events/{token} (and the deprecated URL without a token): the
 * Third-Party Payments events (`transaction.updated`, `payout.updated`), configured apart in the
 * provider's dashboard and signed with their own events secret (docs/connectors.md "Payouts").
 * An event is a hint, never proof (PRODUCT.md "Live money you can trust"), exactly as the payments
 * events (events.ts):
 * 1. the tenant comes from the events URL's token (deprecated URL: from the cash-out whose provider
 *    id — the transaction or its batch — or payout reference the event names, whose company's
 *    payouts events secret must then verify it);
 * 2. the checksum (in the body, or the X-Event-Checksum header) is verified with that company's
 *    payouts events secret, and an event older than an hour or from the future is refused (its
 *    timestamp is in milliseconds): 401, recorded;
 * 3. an event type the connector does not use is acknowledged (200), recorded and ignored;
 * 4. the payout is read back from the provider by the cash-out's own payout reference (the batch
 *    and its transaction), never taken from the event; the read-back must be the batch and
 *    transaction the event names, the provider id recorded on the cash-out, and the cash-out's
 *    amount, or nothing settles (recorded). A read-back that fails is 503 (the provider sends the
 *    event again), recorded;
 * 5. the provider's word (payoutStanding: every documented batch and transaction status) is saved
 *    through the cash-out's state machine (twice, or after the reconciler: once).
 */
export async function receiveWompiPayoutEvent(
  deps: AppDeps,
  body: unknown,
  headerChecksum: string | undefined,
  token: string | null = null,
): Promise<Ack> {
  const event = body as PayoutEventBody;
  const eventName = text(event?.event);
  const data = object<PayoutEventBody['data']>(event?.data) ?? {};
  const tx = object<NonNullable<PayoutEventBody['data']['transaction']>>(data.transaction);
  const batch = object<NonNullable<PayoutEventBody['data']['payout']>>(data.payout);
  // What the event names: the transaction (transaction.updated) or the batch (payout.updated).
  const hintedTx = eventName === 'transaction.updated' ? text(tx?.id) : null;
  const hintedBatch = eventName === 'payout.updated' ? text(batch?.id) : text(tx?.payoutId);
  const hintedReference = text(eventName === 'payout.updated' ? batch?.reference : tx?.reference);
  const providerId = eventName === 'payout.updated' ? hintedBatch : hintedTx;
  const used = eventName !== null && USED_EVENTS.includes(eventName) && providerId !== null;
  const base: RecordedEvent = {
    company_id: null,
    environment: null,
    event: eventName,
    reference: hintedReference,
    provider_id: providerId ?? text(tx?.id) ?? text(batch?.id),
    provider_status: text(tx?.status ?? batch?.status, 40),
    verified: false,
    problem: null,
  };
  const db = deps.database.db;
  const named = { networkIds: [hintedTx, hintedBatch].filter((id): id is string => id !== null), cashoutId: cashoutIdOf(hintedReference) };

  let scope: Tenant;
  let settings: ConnectorSettings | null;
  if (token !== null) {
    const found = await settingsOfEventsUrl(deps, token, base);
    scope = { companyId: found.companyId, environment: found.environment };
    settings = found;
  } else {
    // The deprecated URL: the event's (unsigned) ids only propose a company; its secret decides.
    if (!used) {
      await recordConnectorEvent(deps, { ...base, problem: 'ignored event type' });
      return { received: true, settled: null };
    }
    const owner = await findCashoutByNetworkId(db, [...named.networkIds, ...(named.cashoutId ? [named.cashoutId] : [])]);
    if (!owner) {
      await recordConnectorEvent(deps, { ...base, problem: 'unknown payout' });
      return { received: true, settled: null };
    }
    scope = { companyId: owner.companyId, environment: owner.environment };
    settings = await readConnectorSettings(deps, db, scope);
  }
  const tenant: RecordedEvent = { ...base, company_id: scope.companyId, environment: scope.environment };
  if (!settings?.payouts) {
    await recordConnectorEvent(deps, { ...tenant, problem: 'no payouts connector configured' });
    throw refuse('No payouts connector of this company can verify the event.');
  }
  const signed =
    event?.signature && typeof event.signature === 'object' && !event.signature.checksum && headerChecksum
      ? { ...event, signature: { ...event.signature, checksum: headerChecksum } }
      : event;
  if (!eventChecksumValid(signed, settings.payouts.eventsSecret)) {
    await recordConnectorEvent(deps, { ...tenant, problem: 'bad checksum' });
    throw refuse('The event checksum does not match.');
  }
  const stale = staleness(event.timestamp, deps.clock.now(), 'ms');
  if (stale) {
    await recordConnectorEvent(deps, { ...tenant, problem: `refused: ${stale}` });
    throw refuse(`The event is ${stale}: it is not accepted (the payout is asked of the provider instead).`);
  }
  if (!used) {
    await recordConnectorEvent(deps, { ...tenant, verified: true, problem: 'ignored event type' });
    return { received: true, settled: null };
  }
  const cashout = await findNamedCashout(db, scope, named.networkIds, named.cashoutId);
  if (!cashout) {
    await recordConnectorEvent(deps, { ...tenant, verified: true, problem: 'unknown payout' });
    return { received: true, settled: null };
  }
  const known: RecordedEvent = { ...tenant, verified: true, reference: cashout.id };

  // The provider's word on the cash-out's own payout reference, never the event's fields.
  let read: Awaited<ReturnType<typeof readPayout>>;
  try {
    read = await readPayout(new WompiPayoutsClient(settings.payouts, { timeoutMs: deps.config.railCallTimeoutMs }), cashout.id);
  } catch (error) {
    if (error instanceof WompiPayoutRefused) {
      await recordConnectorEvent(deps, { ...known, problem: `read back refused: ${error.status} ${error.code}`.slice(0, 250) });
      return { received: true, settled: null };
    }
    await recordConnectorEvent(deps, { ...known, problem: 'read back unavailable' });
    throw new ApiError('service_unavailable', { message: 'The provider could not be asked about the payout; send the event again later.' });
  }
  if (!read) {
    await recordConnectorEvent(deps, { ...known, problem: 'the provider has no batch of the cash-out’s reference' });
    return { received: true, settled: null };
  }
  const { batch: providerBatch, transaction: providerTx } = read;
  const checked: RecordedEvent = { ...known, provider_status: String(providerTx?.status ?? providerBatch.status).slice(0, 40) };
  const providerAmount = providerTx ? providerTx.amountInCents : providerBatch.amountInCents;
  const networkId = providerTx?.id ?? providerBatch.id;
  const mismatch =
    (hintedTx !== null && providerTx?.id !== hintedTx) || (hintedBatch !== null && providerBatch.id !== hintedBatch)
      ? 'read back does not match the event'
      : cashout.network_id && cashout.network_id !== providerTx?.id && cashout.network_id !== providerBatch.id
        ? `transaction ${networkId} is not the one recorded (${cashout.network_id})`
        : typeof providerAmount !== 'number' || BigInt(providerAmount) !== BigInt(cashout.amount) || cashout.currency !== 'COP'
          ? `amount ${providerAmount ?? 'none'} is not the recorded ${cashout.amount} ${cashout.currency}`
          : null;
  if (mismatch) {
    deps.logger.error({ company_id: scope.companyId, cashout_id: cashout.id, provider_id: networkId }, `wompi payout event refused: ${mismatch}`);
    await recordConnectorEvent(deps, { ...checked, problem: mismatch.slice(0, 250) });
    return { received: true, settled: null };
  }
  await recordConnectorEvent(deps, checked);
  const standing = payoutStanding(providerBatch, providerTx);
  if (standing.status === 'on_the_way') {
    // Still on the way: a processing cash-out is already asked again by its reconciler; one whose
    // answer was lost (created) is processing from now on, with the provider's id.
    if (cashout.status !== 'created') return { received: true, settled: null };
    const settleAt = new Date(deps.clock.now().getTime() + deps.config.connectorPollAfterMs);
    return { received: true, settled: await settleCashoutFromRail(deps, scope, cashout.id, { status: 'pending', networkId, settleAt }) };
  }
  const outcome =
    standing.status === 'paid' ? { status: 'paid' as const, networkId } : { status: 'failed' as const, networkId, remarks: standing.remarks };
  return { received: true, settled: await settleCashoutFromRail(deps, scope, cashout.id, outcome) };
}
