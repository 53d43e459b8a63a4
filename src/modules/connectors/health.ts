import type { AppDeps } from '../../platform/context.ts';
import { ApiError } from '../../platform/errors/api-error.ts';
import { inTenant, iso, type Tenant } from '../../platform/scope.ts';
import { connectorClient, type ConnectorName } from '../../rails/index.ts';
import { WompiPayoutsClient } from '../../rails/connectors/wompi/payouts-client.ts';
import { countOpenCharges } from '../charges/queries.ts';
import { RAIL_OF_METHOD } from '../charges/rails.ts';
import type { ConnectorHealthResponse } from './schemas.ts';
import { readConnectorSettings, unusableSettingsProblem } from './settings.ts';

/**
 * GET /v1/connectors/{name}/health (docs/connectors.md "Operating"): whether the provider accepts
 * both keys now (a read with each), the last verified event, refused events of the last day, and
 * charges on the connector's rails still open past the poll deadline (the reconciler is behind or
 * the provider is not answering).
 */
export async function connectorHealth(deps: AppDeps, scope: Tenant, name: ConnectorName): Promise<ConnectorHealthResponse> {
  const db = deps.database.db;
  const settings = await readConnectorSettings(deps, db, scope);
  if (!settings) {
    const unusable = await unusableSettingsProblem(db, scope);
    throw new ApiError('record_not_found', {
      message: unusable ? `The ${name} connector is not used: ${unusable}.` : `No ${name} connector is configured for this environment.`,
    });
  }
  const client = connectorClient(settings, { timeoutMs: Math.min(deps.config.railCallTimeoutMs, 10_000) });
  let problem: string | null = null;
  const started = performance.now();
  try {
    await client.acceptance();
    await client.findByReference('recaudo-health-check');
  } catch (error) {
    problem = (error as Error).message.slice(0, 300);
  }
  const latency = Math.round(performance.now() - started);
  // Third-Party Payments: its own keys, checked with a read of the origin accounts.
  let payouts: ConnectorHealthResponse['payouts'] = null;
  if (settings.payouts) {
    const origin = settings.payouts.accountId;
    try {
      const accounts = await new WompiPayoutsClient(settings.payouts, { timeoutMs: Math.min(deps.config.railCallTimeoutMs, 10_000) }).accounts();
      const own = accounts.find((a) => a.id === origin);
      payouts = own
        ? { authenticated: true, problem: null, origin_balance: typeof own.balanceInCents === 'number' ? own.balanceInCents / 100 : null }
        : { authenticated: true, problem: `the origin account ${origin} is not among the provider's accounts`, origin_balance: null };
    } catch (error) {
      payouts = { authenticated: false, problem: (error as Error).message.slice(0, 300), origin_balance: null };
    }
  }
  const now = deps.clock.now();
  const events = db.selectFrom('connector_events').$call(inTenant(scope)).where('connector', '=', name);
  const last = await events.select('received_at').where('verified', '=', true).orderBy('received_at', 'desc').limit(1).executeTakeFirst();
  const refused = await events
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .where('verified', '=', false)
    .where('received_at', '>', new Date(now.getTime() - 86_400_000))
    .executeTakeFirstOrThrow();
  const methods = Object.entries(RAIL_OF_METHOD)
    .filter(([, rail]) => settings.rails.includes(rail))
    .map(([method]) => method);
  const open = await countOpenCharges(db, scope, methods, new Date(now.getTime() - deps.config.connectorPollAfterMs));
  return {
    name,
    environment: scope.environment,
    authenticated: problem === null,
    problem,
    latency_ms: problem === null ? latency : null,
    last_event_at: last ? iso(last.received_at) : null,
    refused_events_24h: Number(refused.n),
    open_transactions_past_deadline: open,
    payouts,
  };
}
