import type { AppDeps } from '../../platform/context.ts';
import { ApiError } from '../../platform/errors/api-error.ts';
import { eventChecksumValid, type WompiEvent } from '../../rails/connectors/wompi/contract.ts';
import { payoutRemarks, payoutTransactionFinal } from '../../rails/connectors/wompi/payouts-contract.ts';
import { findCashoutByNetworkId, runCashoutReconcile, settleCashoutFromRail } from '../cashouts/service.ts';
import { recordConnectorEvent, type RecordedEvent } from './events.ts';
import { readConnectorSettings } from './settings.ts';

/**
 * POST /v1/rails/wompi/payout-events: the Third-Party Payments events (`transaction.updated`,
 * `payout.updated`), configured apart in the provider's dashboard and signed with its own events
 * secret (docs/connectors.md "Payouts"). They name the provider's transaction or batch, not the
 * cash-out: the cash-out whose network_id it is names the company, whose payouts secret verifies
 * the checksum (from the body, or the X-Event-Checksum header) before anything is used. A final
 * transaction status settles the cash-out through its state machine (twice, or after the
 * reconciler: once); a batch update has the reconciler ask the provider where the payout stands.
 */

interface PayoutEventBody extends WompiEvent {
  data: {
    transaction?: { id?: unknown; payoutId?: unknown; status?: unknown; failureReason?: unknown };
    payout?: { id?: unknown; reference?: unknown; status?: unknown };
  };
}

const text = (v: unknown, max = 100) => (typeof v === 'string' && v ? v.slice(0, max) : null);

export async function receiveWompiPayoutEvent(
  deps: AppDeps,
  body: unknown,
  headerChecksum: string | undefined,
  _token: string | null = null,
): Promise<{ received: boolean; settled: string | null }> {
  const event = body as PayoutEventBody;
  const tx = event?.data?.transaction;
  const batch = event?.data?.payout;
  const providerId = text(tx?.id) ?? text(batch?.id);
  const status = text(tx?.status ?? batch?.status, 40);
  const base: RecordedEvent = {
    company_id: null,
    environment: null,
    event: text(event?.event),
    reference: null,
    provider_id: providerId,
    provider_status: status,
    verified: false,
    problem: null,
  };
  if (!providerId || !status) {
    await recordConnectorEvent(deps, { ...base, problem: 'not a payout event' });
    throw new ApiError('unauthenticated', { message: 'The event names no payout transaction and cannot be verified.' });
  }
  const cashout = await findCashoutByNetworkId(
    deps.database.db,
    [providerId, text(tx?.payoutId) ?? '', text(batch?.reference) ?? ''].filter(Boolean),
  );
  if (!cashout) {
    await recordConnectorEvent(deps, { ...base, problem: 'unknown payout' });
    return { received: true, settled: null };
  }
  const tenant = { companyId: cashout.companyId, environment: cashout.environment };
  const known: RecordedEvent = { ...base, company_id: tenant.companyId, environment: tenant.environment, reference: cashout.id };
  const settings = await readConnectorSettings(deps, deps.database.db, tenant);
  if (!settings?.payouts) {
    await recordConnectorEvent(deps, { ...known, problem: 'no payouts connector configured' });
    throw new ApiError('unauthenticated', { message: 'No payouts connector of this company can verify the event.' });
  }
  const signed =
    event.signature && typeof event.signature === 'object' && !event.signature.checksum && headerChecksum
      ? { ...event, signature: { ...event.signature, checksum: headerChecksum } }
      : event;
  if (!eventChecksumValid(signed, settings.payouts.eventsSecret)) {
    await recordConnectorEvent(deps, { ...known, problem: 'bad checksum' });
    throw new ApiError('unauthenticated', { message: 'The event checksum does not match.' });
  }
  await recordConnectorEvent(deps, { ...known, verified: true });
  if (tx) {
    const final = payoutTransactionFinal(status);
    if (final === null) return { received: true, settled: null };
    const outcome =
      final === 'paid'
        ? { status: 'paid' as const, networkId: providerId }
        : { status: 'failed' as const, networkId: providerId, remarks: payoutRemarks(status, tx.failureReason as never) };
    return { received: true, settled: await settleCashoutFromRail(deps, tenant, cashout.id, outcome) };
  }
  // A batch changed: where its transaction stands is asked of the provider (never guessed from the batch).
  await runCashoutReconcile(deps, { company_id: tenant.companyId, environment: tenant.environment, cashout_id: cashout.id });
  return { received: true, settled: null };
}
