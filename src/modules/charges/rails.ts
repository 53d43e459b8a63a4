import type { AppDeps } from '../../platform/context.ts';
import type { BanklinkPort, DebitPort, MoneyRail, RailScope, RtkeyPort, WalletPort } from '../../rails/index.ts';
import type { PaymentMethodType } from './tables.ts';

/** The rail each payment method of a charge runs on (docs/rails.md). */
export const RAIL_OF_METHOD: Readonly<Record<PaymentMethodType, MoneyRail>> = {
  card: 'card',
  account: 'account_debit',
  banklink: 'banklink',
  rtkey: 'rtkey',
  walleta: 'walleta',
  walletb: 'walletb',
};

type PortOf<M extends PaymentMethodType> = M extends 'card' | 'account'
  ? DebitPort
  : M extends 'banklink'
    ? BanklinkPort
    : M extends 'rtkey'
      ? RtkeyPort
      : WalletPort;

/**
 * The adapter a charge of `method` uses in this scope. With a live key and no connector it throws
 * rail_not_configured (422 10900): call it before recording anything, so nothing is left behind.
 */
export function chargeRail<M extends PaymentMethodType>(deps: AppDeps, scope: RailScope, method: M): Promise<PortOf<M>> {
  return deps.rails.money(scope, RAIL_OF_METHOD[method]) as unknown as Promise<PortOf<M>>;
}

/**
 * Whether a connector (a real provider, even its sandbox) handled or handles this charge: its
 * network id is the provider's (not the built-in sandbox's `sbx_…`), or, before any answer, the
 * rail of its environment is a connector. Sandbox helpers (resolve, dispute, test scenarios) refuse
 * such charges: only the provider's word settles them (PRODUCT.md "Test never touches production").
 */
export async function connectorHandled(
  deps: AppDeps,
  charge: { company_id: string; environment: 'test' | 'live'; payment_method_type: PaymentMethodType; network_id: string | null },
  db?: RailScope['db'],
): Promise<boolean> {
  if (charge.network_id) return !charge.network_id.startsWith('sbx_');
  // `db`: the caller's transaction (on the embedded engine the pool would wait for it).
  const rail = await chargeRail(deps, { companyId: charge.company_id, environment: charge.environment, db }, charge.payment_method_type);
  return rail.name !== 'sandbox';
}

/** The message of a sandbox helper refused on an object a connector handles. */
export const CONNECTOR_HANDLED =
  "a payment provider's connector handles this environment's rail: only the provider's own word settles it (its events or the reconciler); sandbox helpers and test scenarios are for the built-in sandbox";
