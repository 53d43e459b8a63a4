import type { Logger } from 'pino';
import type { Config } from '../config.ts';
import { systemClock, type Clock } from '../platform/clock.ts';
import { SandboxEmail, SmtpEmail, UnconfiguredEmail, type EmailPort } from './email/index.ts';
import {
  HttpMessaging,
  SandboxMessaging,
  UnconfiguredMessaging,
  type MessageStatus,
  type MessagingPort,
  type StatusDetail,
} from './messaging/index.ts';
import { SandboxBanklink } from './banklink.ts';
import { SandboxBiller } from './biller.ts';
import { SandboxDebit } from './debit.ts';
import { SandboxEnrollment } from './enrollment.ts';
import { SandboxIssuer } from './issuer.ts';
import { SandboxKeyDirectory } from './key-directory.ts';
import { ConnectorRegistry, resolveMoneyRail, type MoneyPorts, type MoneyRail, type RailScope } from './money.ts';
import { SandboxPayouts } from './payouts.ts';
import { SandboxRtkey } from './rtkey.ts';
import { SandboxWallet } from './wallets.ts';
import { StoredConnectors, type ConnectorSettingsReader, type ConnectorOptions } from './connectors/index.ts';
import { createTaxAuthorities, type DianConfigResolver, type TaxAuthority } from './tax-authority/index.ts';

export * from './messaging/index.ts';
export * from './email/index.ts';
export * from './money.ts';
export * from './tax-authority/index.ts';
export * from './connectors/index.ts';
export {
  CardRefused,
  RefundRefused,
  type CardData,
  type DebitOutcome,
  type DebitPort,
  type DebitRequest,
  type ProviderConsent,
  type RefundRequest,
  type SavedCard,
} from './debit.ts';
export type { BanklinkPort, BanklinkSession } from './banklink.ts';
export type { PolledOutcome, RailPayer } from './payer.ts';
export { PROVIDER_FINAL_WITHIN_MS, ProviderNeverFinal, RailRefused } from './payer.ts';
export { QrRegistrationFailed, type QrRegistration, type RtkeyPort } from './rtkey.ts';
export type { WalletOutcome, WalletPort, WalletRequest } from './wallets.ts';
export type { EnrollmentOutcome, EnrollmentPort, EnrollmentRequest } from './enrollment.ts';
export type { DirectoryEntry, InstantKeyType, KeyDirectoryPort } from './key-directory.ts';
export type { PayoutBeneficiary, PayoutMethod, PayoutOutcome, PayoutPort, PayoutRequest } from './payouts.ts';
export { SandboxIssuer, type IssueCardOutcome, type IssueCardRequest, type IssuedCardStatus, type IssuerPort } from './issuer.ts';
export {
  SANDBOX_BILLERS,
  SandboxBiller,
  type Bill,
  type BillInquiry,
  type BillPaymentOutcome,
  type BillPaymentRequest,
  type BillerCategory,
  type BillerPort,
  type BillerProvider,
} from './biller.ts';
export {
  paymentLinkMessage,
  paymentCancelledMessage,
  paymentReceiptMessage,
  formatAmount,
  formatDateTime,
  escapeHtml,
  type PaymentLinkMessage,
  type PaymentLinkMessageInput,
  type PaymentCancelledMessageInput,
} from './messages.ts';

export type RailEnvironment = 'test' | 'live';

/** The rails one environment uses. */
export interface RailSet {
  messaging: MessagingPort;
  email: EmailPort;
}

export type MessageStatusListener = (
  providerMessageId: string,
  status: MessageStatus,
  detail: StatusDetail,
  environment: RailEnvironment,
) => void | Promise<void>;

/**
 * The outbound rails of one process (docs/rails.md). Test keys never touch a real rail: `test` is
 * always the sandboxes; `live` is the configured providers (sandboxes too when none is configured,
 * but separate instances, so a status always tells its environment).
 */
export interface Rails {
  test: { messaging: SandboxMessaging; email: SandboxEmail };
  live: RailSet;
  /**
   * The contact rails (messaging, e-mail) of a company's environment: the company's own providers
   * when some are installed (its WhatsApp Business number, its SMTP relay), else the environment's
   * (`test` always the sandboxes).
   */
  contact(scope: RailScope): RailSet;
  /**
   * `contact`, after the registered source (the connectors module) has installed or removed the
   * company's own rails from its stored settings (its WhatsApp connector). Pass the caller's
   * transaction in `scope.db` when it holds one.
   */
  contactFor(scope: RailScope & { db?: unknown }): Promise<RailSet>;
  /** Registers what `contactFor` asks first (one source per process). */
  setContactSource(source: (scope: RailScope & { db?: unknown }) => Promise<void>): void;
  /** Whether this company's environment has its own messaging rail installed now. */
  hasOwnMessaging(scope: RailScope): boolean;
  /**
   * Gives one company's environment its own contact rails (only the ports given replace the
   * environment's); their status reports reach onMessageStatus too. Returns the uninstaller.
   */
  installContact(scope: RailScope, set: Partial<RailSet>): () => void;
  /** Listens to message outcomes of every contact rail; returns a function that stops listening. */
  onMessageStatus(listener: MessageStatusListener): () => void;
  /**
   * The money rails' sandbox adapters (test keys). Tests may replace one (a failing or slow rail)
   * for their runtime.
   */
  sandbox: MoneyPorts;
  /**
   * The tax authority (DIAN) of each environment: the sandbox authority for test keys, DIAN's web
   * service for live ones. Tests may replace one (a spy, an authority that loses answers).
   */
  taxAuthority: Record<RailEnvironment, TaxAuthority>;
  /** Real providers' adapters installed for live (or a test environment pointed at a provider's sandbox). */
  connectors: ConnectorRegistry;
  /** A company's connector settings changed: this process uses the new ones from the next call. */
  forgetConnectors(scope: RailScope): void;
  /**
   * The adapter of a money rail for a company's environment: its connector, else the sandbox for
   * test keys; for live keys without a connector it throws `rail_not_configured` (422 10900).
   * Call it before recording anything, so a refusal leaves nothing behind.
   */
  money<K extends MoneyRail>(scope: RailScope, rail: K): Promise<MoneyPorts[K]>;
  /** Whether `money(scope, rail)` would answer an adapter (what a live payer page may offer). */
  serves(scope: RailScope, rail: MoneyRail): Promise<boolean>;
  /** Closes every rail: waits for sends under way, drops sandbox outcomes not yet reported. */
  close(): Promise<void>;
}

function contactKey(scope: RailScope): string {
  return `${scope.companyId}\u0000${scope.environment}`;
}

export type RailsConfig = Pick<
  Config,
  | 'messagingProvider'
  | 'messagingHttpUrl'
  | 'messagingHttpToken'
  | 'messagingHttpTimeoutMs'
  | 'messagingSandboxDelayMs'
  | 'smtpUrl'
  | 'smtpFrom'
  | 'sandboxChargeDelayMs'
  | 'sandboxCashoutDelayMs'
  | 'sandboxAccountDelayMs'
  | 'sandboxStampDelayMs'
  | 'railCallTimeoutMs'
  | 'connectorPollAfterMs'
  | 'connectorSettingsTtlMs'
>;

/** The sandbox adapters of the money rails (PRODUCT.md "Test environment"; the sandbox table). */
export function createSandboxMoneyRails(
  config: Pick<RailsConfig, 'sandboxChargeDelayMs' | 'sandboxAccountDelayMs' | 'sandboxCashoutDelayMs'>,
  clock: Clock,
): MoneyPorts {
  const debit = new SandboxDebit({ delayMs: config.sandboxChargeDelayMs, clock });
  return {
    card: debit,
    account_debit: debit,
    banklink: new SandboxBanklink(),
    rtkey: new SandboxRtkey(),
    walleta: new SandboxWallet('walleta'),
    walletb: new SandboxWallet('walletb'),
    payout: new SandboxPayouts({ delayMs: config.sandboxCashoutDelayMs, clock }),
    enrollment: new SandboxEnrollment({ delayMs: config.sandboxAccountDelayMs }),
    key_directory: new SandboxKeyDirectory(),
    issuer: new SandboxIssuer({ clock }),
    biller: new SandboxBiller({ clock }),
  };
}

/** Picks each rail's adapter from the configuration. */
export function createRails(
  config: RailsConfig,
  logger: Logger,
  opts: {
    clock?: Clock;
    dianConfig?: DianConfigResolver;
    /** The companies' connector settings (the connectors module reads them). */
    connectorSettings?: ConnectorSettingsReader;
    observeConnector?: ConnectorOptions['observe'];
  } = {},
): Rails {
  const log = logger.child({ component: 'rails' });
  const sandboxMessaging = () => new SandboxMessaging({ delayMs: config.messagingSandboxDelayMs, logger: log, clock: opts.clock });
  const sandboxEmail = () => new SandboxEmail({ from: config.smtpFrom, logger: log, clock: opts.clock });
  const test = { messaging: sandboxMessaging(), email: sandboxEmail() };
  const live: RailSet = {
    messaging:
      config.messagingProvider === 'http'
        ? new HttpMessaging({
            url: requireValue(config.messagingHttpUrl, 'MESSAGING_HTTP_URL'),
            token: config.messagingHttpToken,
            timeoutMs: config.messagingHttpTimeoutMs,
            logger: log,
            clock: opts.clock,
          })
        : // Never a simulation in live: without a gateway every message is refused (channel_not_configured).
          new UnconfiguredMessaging(),
    email: config.smtpUrl ? new SmtpEmail({ url: config.smtpUrl, from: config.smtpFrom, logger: log }) : new UnconfiguredEmail(),
  };
  log.debug({ messaging: live.messaging.provider, email: live.email.provider }, 'live rails');
  const sandbox = createSandboxMoneyRails(config, opts.clock ?? systemClock);
  const stored = opts.connectorSettings
    ? new StoredConnectors(opts.connectorSettings, {
        clock: opts.clock ?? systemClock,
        timeoutMs: config.railCallTimeoutMs,
        pollAfterMs: config.connectorPollAfterMs,
        ttlMs: config.connectorSettingsTtlMs,
        observe: opts.observeConnector,
      })
    : null;
  const connectors = new ConnectorRegistry(stored);
  // Companies' own contact rails, and who listens to message outcomes (they hear those rails too).
  const companyContact = new Map<string, RailSet>();
  const hookedMessaging = new Map<MessagingPort, RailEnvironment>();
  const statusListeners: MessageStatusListener[] = [];
  let contactSource: ((scope: RailScope & { db?: unknown }) => Promise<void>) | null = null;
  const taxAuthority = createTaxAuthorities({
    clock: opts.clock ?? systemClock,
    sandboxDelayMs: config.sandboxStampDelayMs,
    dianConfig: opts.dianConfig,
  });
  return {
    test,
    live,
    sandbox,
    taxAuthority,
    connectors,
    forgetConnectors: (scope) => stored?.forget(scope),
    money: (scope, rail) => resolveMoneyRail(connectors, sandbox, scope, rail),
    async serves(scope, rail) {
      return scope.environment === 'test' || (await connectors.find(scope, rail)) !== null;
    },
    contact: (scope) => companyContact.get(contactKey(scope)) ?? (scope.environment === 'live' ? live : test),
    async contactFor(scope) {
      if (contactSource) await contactSource(scope);
      return companyContact.get(contactKey(scope)) ?? (scope.environment === 'live' ? live : test);
    },
    setContactSource(source) {
      contactSource = source;
    },
    hasOwnMessaging: (scope) => companyContact.has(contactKey(scope)),
    installContact(scope, set) {
      const key = contactKey(scope);
      const installed: RailSet = { ...(scope.environment === 'live' ? live : test), ...set };
      companyContact.set(key, installed);
      const hooked = set.messaging ? statusListeners.map((l) => set.messaging!.onStatus((id, s, d) => l(id, s, d, scope.environment))) : [];
      if (set.messaging) hookedMessaging.set(set.messaging, scope.environment);
      return () => {
        if (companyContact.get(key) === installed) companyContact.delete(key);
        if (set.messaging) hookedMessaging.delete(set.messaging);
        hooked.forEach((off) => off());
      };
    },
    onMessageStatus(listener) {
      statusListeners.push(listener);
      const sources: [MessagingPort, RailEnvironment][] = [[test.messaging, 'test'], [live.messaging, 'live'], ...hookedMessaging];
      const offs = sources.map(([port, env]) => port.onStatus((id, status, detail) => listener(id, status, detail, env)));
      return () => {
        statusListeners.splice(statusListeners.indexOf(listener), 1);
        offs.forEach((off) => off());
      };
    },
    async close() {
      const companies = [...companyContact.values()].flatMap((set) => [set.messaging.close(), set.email.close()]);
      await Promise.all([test.messaging.close(), test.email.close(), live.messaging.close(), live.email.close(), ...companies]);
    },
  };
}

function requireValue(value: string | undefined, name: string): string {
  if (!value) throw new Error(`${name} is required`);
  return value;
}
