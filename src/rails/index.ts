import type { Logger } from 'pino';
import type { Config } from '../config.ts';
import type { Clock } from '../platform/clock.ts';
import { SandboxEmail, SmtpEmail, type EmailPort } from './email/index.ts';
import { HttpMessaging, SandboxMessaging, type MessageStatus, type MessagingPort, type StatusDetail } from './messaging/index.ts';

export * from './messaging/index.ts';
export * from './email/index.ts';
export { paymentLinkMessage, paymentCancelledMessage, formatAmount, formatDateTime, escapeHtml, type PaymentLinkMessage, type PaymentLinkMessageInput, type PaymentCancelledMessageInput } from './messages.ts';

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
  /** `test` or `live`, by the environment of the request's key. */
  for(environment: RailEnvironment): RailSet;
  /** Listens to message outcomes of both environments; returns a function that stops listening. */
  onMessageStatus(listener: MessageStatusListener): () => void;
  /** Closes every rail: waits for sends under way, drops sandbox outcomes not yet reported. */
  close(): Promise<void>;
}

export type RailsConfig = Pick<
  Config,
  'messagingProvider' | 'messagingHttpUrl' | 'messagingHttpToken' | 'messagingHttpTimeoutMs' | 'messagingSandboxDelayMs' | 'smtpUrl' | 'smtpFrom'
>;

/** Picks each rail's adapter from the configuration. */
export function createRails(config: RailsConfig, logger: Logger, opts: { clock?: Clock } = {}): Rails {
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
        : sandboxMessaging(),
    email: config.smtpUrl ? new SmtpEmail({ url: config.smtpUrl, from: config.smtpFrom, logger: log }) : sandboxEmail(),
  };
  log.debug({ messaging: live.messaging.provider, email: live.email.provider }, 'live rails');
  return {
    test,
    live,
    for: (environment) => (environment === 'live' ? live : test),
    onMessageStatus(listener) {
      const offs = (['test', 'live'] as const).map((env) =>
        (env === 'live' ? live : test).messaging.onStatus((id, status, detail) => listener(id, status, detail, env)),
      );
      return () => offs.forEach((off) => off());
    },
    async close() {
      await Promise.all([test.messaging.close(), test.email.close(), live.messaging.close(), live.email.close()]);
    },
  };
}

function requireValue(value: string | undefined, name: string): string {
  if (!value) throw new Error(`${name} is required`);
  return value;
}
