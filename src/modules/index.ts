import type { AppDeps } from '../platform/context.ts';
import type { Database } from '../platform/db/database.ts';
import type { ModuleRegistrar } from '../platform/http/app.ts';
import type { SealedColumns } from '../platform/secret-columns.ts';
import { SEALED_COLUMNS as webhookSecrets } from './webhooks/tables.ts';
import { SEALED_COLUMNS as flowSecrets } from './flows/tables.ts';
import { SEALED_COLUMNS as fiscalSecrets } from './fiscal/tables.ts';
import { SEALED_COLUMNS as connectorSecrets } from './connectors/tables.ts';
import { accountRoutes } from './accounts/routes.ts';
import { registerAccountJobs } from './accounts/service.ts';
import { bankRoutes } from './banks/routes.ts';
import { cardRoutes } from './cards/routes.ts';
import { allowedOriginRoutes } from './companies/allowed-origins.ts';
import { chargeRoutes, registerChargeWorkers } from './charges/routes.ts';
import { cashoutRoutes } from './cashouts/routes.ts';
import { registerCashoutJobs } from './cashouts/service.ts';
import { seedBanks } from './banks/service.ts';
import { connectLinkRoutes } from './connect-links/routes.ts';
import { connectorRoutes } from './connectors/routes.ts';
import { whatsappContactSource } from './connectors/whatsapp.ts';
import { customerRoutes } from './customers/routes.ts';
import { eventRoutes } from './events/routes.ts';
import { fiscalRoutes, registerFiscalJobs } from './fiscal/routes.ts';
import { ledgerRoutes } from './ledger/routes.ts';
import { registerLedgerJobs } from './ledger/balance-events.ts';
import { walletRoutes } from './wallets/routes.ts';
import { registerWebhookWorkers, webhookRoutes } from './webhooks/routes.ts';
import { paymentRoutes } from './payments/routes.ts';
import { priceRoutes } from './prices/routes.ts';
import { registerPaymentJobs } from './payments/service.ts';
import { templateRoutes } from './templates/routes.ts';
import { invoiceRoutes } from './invoices/routes.ts';
import { registerInvoiceJobs } from './invoices/service.ts';
import { payerPages } from '../pages/routes.ts';
import { seedTemplates } from './templates/service.ts';
import { subscriptionRoutes } from './subscriptions/routes.ts';
import { testClockRoutes } from './test-clocks/routes.ts';
import { customerSessionRoutes } from './customer-session/routes.ts';
import { registerSessionReplies } from './customer-session/payer.ts';
import { registerTestClockJobs } from './test-clocks/service.ts';
import { registerSubscriptionJobs } from './subscriptions/billing.ts';
import { campaignRoutes, registerCampaignJobs } from './campaigns/routes.ts';
import { issuingRoutes } from './issuing/routes.ts';
import { registerIssuingJobs } from './issuing/service.ts';
import { utilityRoutes } from './utilities/routes.ts';
import { registerUtilityJobs } from './utilities/service.ts';
import { reportRoutes } from './reports/routes.ts';
import { flowRoutes, registerFlowJobs } from './flows/routes.ts';
import { onboardingRoutes } from './onboarding/routes.ts';
import { disputeRoutes } from './disputes/routes.ts';
import { apiDocsRoutes } from './api-docs/routes.ts';
import type { RetentionRule } from '../platform/retention/retention.ts';
import { registerRetention } from '../platform/retention/sweeper.ts';
import { idempotencyBodies } from '../platform/idempotency/retention.ts';
import { webhookRetention } from './webhooks/retention.ts';
import { flowRuns } from './flows/retention.ts';
import { cardTokens } from './cards/retention.ts';
import { sessionRetention } from './customer-session/retention.ts';
import { connectorEvents } from './connectors/retention.ts';

/** Every domain module's routes, in one list the app factory registers under /v1. */
export const modules: ModuleRegistrar[] = [
  customerRoutes,
  bankRoutes,
  accountRoutes,
  connectLinkRoutes,
  webhookRoutes,
  eventRoutes,
  paymentRoutes,
  templateRoutes,
  ledgerRoutes,
  cardRoutes,
  allowedOriginRoutes,
  chargeRoutes,
  cashoutRoutes,
  priceRoutes,
  subscriptionRoutes,
  testClockRoutes,
  customerSessionRoutes,
  fiscalRoutes,
  invoiceRoutes,
  connectorRoutes,
  walletRoutes,
  campaignRoutes,
  issuingRoutes,
  utilityRoutes,
  reportRoutes,
  flowRoutes,
  onboardingRoutes,
  disputeRoutes,
  // Last: the OpenAPI document's content (names, webhooks, examples), not routes.
  apiDocsRoutes,
];

/** Every module's columns of secrets sealed at rest (the seal and rotation passes, src/platform/secret-columns.ts). */
export const sealedColumns: SealedColumns[] = [...webhookSecrets, ...flowSecrets, ...fiscalSecrets, ...connectorSecrets];

/**
 * What retention sweeps (docs/operations.md "Retention"), in the order a run takes them: each
 * module declares the rules of its own tables; webhook deliveries come before the events they hold.
 */
export const retentionRules: RetentionRule[] = [idempotencyBodies, ...webhookRetention, flowRuns, cardTokens, ...sessionRetention, connectorEvents];

/** Payer-facing HTML pages (hosted payment page, payment portal), outside /v1 and without an API key. */
export const pages: ModuleRegistrar[] = [payerPages];

/** Catalogues every install needs (banks...), upserted at start. */
export async function seedCatalogues(database: Database): Promise<void> {
  await seedBanks(database.db);
  await seedTemplates(database.db);
}

/** Background job handlers of every module. */
export function registerJobHandlers(deps: AppDeps): void {
  registerAccountJobs(deps);
  registerWebhookWorkers(deps);
  registerPaymentJobs(deps);
  registerChargeWorkers(deps);
  registerCashoutJobs(deps);
  registerFiscalJobs(deps);
  registerInvoiceJobs(deps);
  registerLedgerJobs(deps);
  registerSubscriptionJobs(deps);
  registerTestClockJobs(deps);
  registerSessionReplies(deps);
  registerCampaignJobs(deps);
  registerIssuingJobs(deps);
  registerUtilityJobs(deps);
  registerFlowJobs(deps);
  registerRetention(deps, retentionRules);
  // Companies' own contact rails (their WhatsApp numbers), for every process that sends messages.
  whatsappContactSource(deps);
}
