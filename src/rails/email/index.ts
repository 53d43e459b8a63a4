export * from './port.ts';
export { SandboxEmail, type RecordedEmail } from './sandbox.ts';
export { SmtpEmail, smtpError } from './smtp.ts';
export { UnconfiguredEmail } from './unconfigured.ts';
