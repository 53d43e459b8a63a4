import type { Clock } from '../../platform/clock.ts';
import type { MoneyPorts, MoneyRail, RailScope } from '../money.ts';
import { WompiCard } from './wompi/card.ts';
import { WompiNequi } from './wompi/nequi.ts';
import { WompiPse } from './wompi/pse.ts';
import { WompiClient, type CallObserver } from './wompi/client.ts';
import { WompiPayouts } from './wompi/payouts.ts';
import { WompiPayoutsClient } from './wompi/payouts-client.ts';

/** The connectors Recaudo has, by the name of their settings (`/v1/connectors/{name}`). */
export const CONNECTOR_NAMES = ['wompi'] as const;
export type ConnectorName = (typeof CONNECTOR_NAMES)[number];

/** The rails each connector can serve (what the provider offers; docs/connectors.md). */
export const CONNECTOR_RAILS: Record<ConnectorName, readonly MoneyRail[]> = {
  // Daviplata (walletb) is listed by the provider but its OTP step is not in the public API reference.
  // payout: Third-Party Payments, served when its own keys are set.
  wompi: ['card', 'banklink', 'walleta', 'payout'],
};

/** A company's settings of a connector in one environment, secrets decrypted (never logged). */
export interface ConnectorSettings {
  name: ConnectorName;
  publicKey: string;
  privateKey: string;
  eventsSecret: string;
  integritySecret: string;
  baseUrl: string;
  /** The provider's environment the settings point at (a test environment: only `sandbox`). */
  providerEnvironment: 'sandbox' | 'production';
  /** Third-Party Payments (the payout rail), when its keys and origin account are set. */
  payouts: { baseUrl: string; apiKey: string; principalId: string; eventsSecret: string; accountId: string } | null;
  rails: MoneyRail[];
  updatedAt: Date;
}

/** Reads a company's connector settings (the connectors module owns them). */
export type ConnectorSettingsReader = (scope: RailScope) => Promise<ConnectorSettings | null>;

export interface ConnectorOptions {
  clock: Clock;
  /** Each provider call's bound. */
  timeoutMs: number;
  /** When a PENDING transaction is polled if no event settled it first. */
  pollAfterMs: number;
  observe?: (connector: ConnectorName, call: Parameters<CallObserver>[0]) => void;
}

/** The adapters a connector's settings give, for the rails they serve. */
export function connectorPorts(settings: ConnectorSettings, opts: ConnectorOptions): Partial<MoneyPorts> {
  const client = new WompiClient(settings, { timeoutMs: opts.timeoutMs, observe: (call) => opts.observe?.(settings.name, call) });
  const ports: Partial<MoneyPorts> = {};
  for (const rail of settings.rails) {
    if (rail === 'card') ports.card = new WompiCard(client, opts);
    if (rail === 'banklink')
      ports.banklink = new WompiPse(client, {
        accountKey: `${settings.baseUrl}|${settings.publicKey}`,
        providerSandbox: settings.providerEnvironment === 'sandbox',
      });
    if (rail === 'walleta') ports.walleta = new WompiNequi(client);
    if (rail === 'payout' && settings.payouts) {
      const payouts = new WompiPayoutsClient(settings.payouts, {
        timeoutMs: opts.timeoutMs,
        observe: (call) => opts.observe?.(settings.name, call),
      });
      ports.payout = new WompiPayouts(payouts, {
        originAccountId: settings.payouts.accountId,
        accountKey: `${settings.payouts.baseUrl}|${settings.payouts.accountId}`,
        clock: opts.clock,
        pollAfterMs: opts.pollAfterMs,
      });
    }
  }
  return ports;
}

/** The client of a connector's settings (health checks). */
export function connectorClient(settings: ConnectorSettings, opts: Pick<ConnectorOptions, 'timeoutMs'>): WompiClient {
  return new WompiClient(settings, { timeoutMs: opts.timeoutMs });
}

/**
 * Connector adapters from the companies' stored settings, kept `ttlMs` per company and
 * environment (every process sees a change within that time; this process at once, through
 * `forget`). A test environment without settings is the sandbox; only settings make it a provider.
 */
export class StoredConnectors {
  private readonly cache = new Map<string, { at: number; ports: Partial<MoneyPorts> }>();

  constructor(
    private readonly read: ConnectorSettingsReader,
    private readonly opts: ConnectorOptions & { ttlMs: number },
  ) {}

  private static key(scope: RailScope): string {
    return `${scope.companyId}:${scope.environment}`;
  }

  async find<K extends MoneyRail>(scope: RailScope, rail: K): Promise<MoneyPorts[K] | null> {
    const key = StoredConnectors.key(scope);
    const now = Date.now();
    let entry = this.cache.get(key);
    if (!entry || now - entry.at >= this.opts.ttlMs) {
      const settings = await this.read(scope);
      entry = { at: now, ports: settings ? connectorPorts(settings, this.opts) : {} };
      this.cache.set(key, entry);
      if (this.cache.size > 10_000) this.cache.delete(this.cache.keys().next().value!);
    }
    return (entry.ports[rail] as MoneyPorts[K] | undefined) ?? null;
  }

  /** Drops what is kept for the scope (its settings changed). */
  forget(scope: RailScope): void {
    this.cache.delete(StoredConnectors.key(scope));
  }
}
