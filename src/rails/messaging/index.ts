export * from './port.ts';
export { SandboxMessaging, sandboxOutcome, SANDBOX_REPLY_TEXT, type SandboxMessage, type StatusReport } from './sandbox.ts';
export { HttpMessaging, type HttpMessagePayload } from './http.ts';
export { reportMove, type ReportMove, type ReportedMessage } from './report-move.ts';
export { UnconfiguredMessaging, CHANNEL_NOT_CONFIGURED } from './unconfigured.ts';
export { WhatsAppMessaging, WHATSAPP_PURPOSES, type WhatsAppPurpose, type WhatsAppSettings } from './whatsapp.ts';
