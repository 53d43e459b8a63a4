import { EmailError, type EmailPort, type EmailSendResult } from './port.ts';

/** Live e-mail without SMTP_URL: every send is refused for good, never simulated. */
export class UnconfiguredEmail implements EmailPort {
  readonly provider = 'none' as const;

  async send(): Promise<EmailSendResult> {
    throw new EmailError('configuration', 'channel_not_configured', false, false);
  }

  async close(): Promise<void> {}
}
