import { ApiError } from '../platform/errors/api-error.ts';
import type { BanklinkPort } from './banklink.ts';
import type { BillerPort } from './biller.ts';
import type { DebitPort } from './debit.ts';
import type { EnrollmentPort } from './enrollment.ts';
import type { IssuerPort } from './issuer.ts';
import type { KeyDirectoryPort } from './key-directory.ts';
import type { PayoutPort } from './payouts.ts';
import type { RtkeyPort } from './rtkey.ts';
import type { Tenant } from '../platform/scope.ts';
import type { Executor } from '../platform/db/database.ts';
import type { WalletPort } from './wallets.ts';

/** Every rail that moves or promises money (PRODUCT.md "Live money"), by the name errors give. */
export const MONEY_RAILS = [
  'card',
  'account_debit',
  'banklink',
  'rtkey',
  'walleta',
  'walletb',
  'payout',
  'enrollment',
  'key_directory',
  'issuer',
  'biller',
] as const;
export type MoneyRail = (typeof MONEY_RAILS)[number];

/** The port each money rail is reached through. */
export interface MoneyPorts {
  card: DebitPort;
  account_debit: DebitPort;
  banklink: BanklinkPort;
  rtkey: RtkeyPort;
  walleta: WalletPort;
  walletb: WalletPort;
  payout: PayoutPort;
  enrollment: EnrollmentPort;
  key_directory: KeyDirectoryPort;
  /** Issuing cards (docs/issuing.md): sandbox only until a connector serves it. */
  issuer: IssuerPort;
  /** Bill payments (docs/utilities.md): sandbox only until a connector serves it. */
  biller: BillerPort;
}

/**
 * A rail is resolved for a tenant: a company in one environment. `db`: the caller's executor (its
 * transaction, in a request), which stored connector settings are read with — on the embedded
 * engine's single session a read outside the open transaction would wait for it forever.
 */
export type RailScope = Tenant & { db?: Executor };

/** Where connectors (real providers' adapters) come from, per company and environment. */
export interface ConnectorSource {
  /** The connector adapter serving `rail` for this company's environment, or null when none does. */
  find<K extends MoneyRail>(scope: RailScope, rail: K): Promise<MoneyPorts[K] | null>;
}

/**
 * Connectors installed in this process: for every company (a platform-wide provider account) or
 * for one company, in one environment. A connector configured per company (issue "a real
 * connector") installs itself here too.
 */
export class ConnectorRegistry implements ConnectorSource {
  private readonly entries = new Map<string, unknown>();

  /** `stored`: the connectors companies configured (their settings), asked when none is installed here. */
  constructor(private readonly stored: ConnectorSource | null = null) {}

  private static key(rail: MoneyRail, environment: RailScope['environment'], companyId: string | null): string {
    return `${rail}:${environment}:${companyId ?? '*'}`;
  }

  /** Installs an adapter; returns the function that removes it again. */
  install<K extends MoneyRail>(rail: K, adapter: MoneyPorts[K], where: { environment: RailScope['environment']; companyId?: string }): () => void {
    const key = ConnectorRegistry.key(rail, where.environment, where.companyId ?? null);
    this.entries.set(key, adapter);
    return () => {
      if (this.entries.get(key) === adapter) this.entries.delete(key);
    };
  }

  async find<K extends MoneyRail>(scope: RailScope, rail: K): Promise<MoneyPorts[K] | null> {
    const own = this.entries.get(ConnectorRegistry.key(rail, scope.environment, scope.companyId));
    const shared = this.entries.get(ConnectorRegistry.key(rail, scope.environment, null));
    const installed = (own ?? shared) as MoneyPorts[K] | undefined;
    if (installed) return installed;
    return this.stored ? this.stored.find(scope, rail) : null;
  }
}

/** 422 10900: the live environment has no connector for this rail; nothing was created. */
export function railNotConfigured(rail: MoneyRail): ApiError {
  return new ApiError('rail_not_configured', {
    message: `No payment connector serves the ${rail} rail for live keys of this company, so nothing was created. Test keys use the sandbox; see docs/rails.md.`,
    extra: { rail },
  });
}

/**
 * The adapter of a money rail for one company's environment: its connector when one is
 * configured; otherwise the sandbox for test keys and, for live keys, rail_not_configured —
 * a live key never gets a simulated outcome.
 */
export async function resolveMoneyRail<K extends MoneyRail>(
  connectors: ConnectorSource,
  sandbox: MoneyPorts,
  scope: RailScope,
  rail: K,
): Promise<MoneyPorts[K]> {
  const connector = await connectors.find(scope, rail);
  if (connector) return connector;
  if (scope.environment === 'test') return sandbox[rail];
  throw railNotConfigured(rail);
}
