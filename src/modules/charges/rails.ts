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
