import type { AppDeps } from '../../src/platform/context.ts';
import { createSandboxMoneyRails, MONEY_RAILS, type MoneyRail } from '../../src/rails/index.ts';

/**
 * A stand-in connector for live keys in tests: the sandbox adapters installed as if a provider
 * served these rails for the company's live environment (or every company's). It lets a test
 * exercise the live code paths (refunds, live balances, live accounts) that a real connector
 * would take; without it a live key gets rail_not_configured. Returns the uninstaller.
 */
export function installFakeLiveConnector(deps: AppDeps, opts: { companyId?: string; rails?: readonly MoneyRail[] } = {}): () => void {
  const adapters = createSandboxMoneyRails(deps.config, deps.clock);
  const removers = (opts.rails ?? MONEY_RAILS).map((rail) =>
    deps.rails.connectors.install(rail, adapters[rail] as never, { environment: 'live', companyId: opts.companyId }),
  );
  return () => removers.forEach((remove) => remove());
}
