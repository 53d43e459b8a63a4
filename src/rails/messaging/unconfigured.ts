import {
  MessagingError,
  StatusListeners,
  type CallbackResult,
  type MessagingPort,
  type OutboundMessage,
  type SendResult,
  type StatusListener,
} from './port.ts';

/** The remark of a live message no channel can carry (PRODUCT.md "Money out and messages in live"). */
export const CHANNEL_NOT_CONFIGURED = 'channel_not_configured';

/**
 * Live messaging without a gateway or a company connector: never a simulation. Every send is
 * refused for good (`channel_not_configured`), so the company sees that its payer was not reached;
 * callers that can tell before sending (payment messages) record the failure at once.
 */
export class UnconfiguredMessaging implements MessagingPort {
  readonly provider = 'none' as const;
  private listeners = new StatusListeners();

  async send(_message: OutboundMessage): Promise<SendResult> {
    throw new MessagingError('not_configured', CHANNEL_NOT_CONFIGURED, false, false);
  }

  onStatus(listener: StatusListener): () => void {
    return this.listeners.add(listener);
  }

  async receiveStatus(): Promise<CallbackResult> {
    return { statusCode: 404, body: { error: 'no messaging provider is configured (live messages are refused; the sandbox reports by itself)' } };
  }

  async close(): Promise<void> {}
}
