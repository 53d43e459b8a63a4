import { z } from 'zod';
import { accountResponse, keyLookupResponse } from '../accounts/schemas.ts';
import { bankResponse } from '../banks/schemas.ts';
import { campaignDetailResponse, campaignMessageResponse, campaignResponse, importMessagesResponse } from '../campaigns/schemas.ts';
import { cardResponse, tokenResponse } from '../cards/schemas.ts';
import { cashoutResponse, payoutAccountResponse } from '../cashouts/schemas.ts';
import { chargeResponse } from '../charges/schemas.ts';
import { connectLinkResponse } from '../connect-links/schemas.ts';
import { connectorHealthResponse, connectorResponse } from '../connectors/schemas.ts';
import { customerResponse } from '../customers/schemas.ts';
import { disputeResponse } from '../disputes/schemas.ts';
import { eventResponse, eventTypeResponse } from '../events/routes.ts';
import { fiscalProfileResponse, resolutionResponse } from '../fiscal/schemas.ts';
import { flowResponse, flowRunResponse } from '../flows/schemas.ts';
import { creditNoteResponse, invoiceResponse, stampingResponse } from '../invoices/schemas.ts';
import { issuingAuthorizationResponse, issuingCardResponse } from '../issuing/schemas.ts';
import { balanceResponse } from '../ledger/routes.ts';
import { companyResponse, liveKeysResponse } from '../onboarding/schemas.ts';
import { intentResponse, messageResponse, paymentResponse } from '../payments/schemas.ts';
import { previewResponse } from '../prices/preview.ts';
import { priceResponse } from '../prices/schemas.ts';
import { planResponse, subscriptionResponse } from '../subscriptions/schemas.ts';
import { templateResponse } from '../templates/schemas.ts';
import { testClockResponse } from '../test-clocks/service.ts';
import { billResponse, paymentLinkResponse, providerResponse, utilityResponse } from '../utilities/schemas.ts';
import { walletBalanceResponse, walletTransactionResponse } from '../wallets/schemas.ts';
import { webhookResponse, deliveryResponse, attemptResponse } from '../webhooks/schemas.ts';
import * as ex from './examples.ts';

/**
 * The names of the OpenAPI component schemas (docs/openapi.md): each module's response schema,
 * registered under a stable name in zod's global registry, which fastify-type-provider-zod turns
 * into `#/components/schemas/<Name>` and a `$ref` wherever the same schema object is used. SDKs
 * generated from the document name their types after these (`components['schemas']['Charge']`),
 * so a name never changes once published. Only response schemas are named: request bodies stay
 * inline (the generated operation types carry them, and the schema fuzzers read them as they are).
 *
 * Registered once per process, on first import, before any document is built.
 */
const NAMED: [z.ZodType, string, unknown?][] = [
  [customerResponse, 'Customer', ex.customerExample],
  [bankResponse, 'Bank'],
  [accountResponse, 'Account', ex.accountExample],
  [keyLookupResponse, 'RtkeyLookup'],
  [connectLinkResponse, 'ConnectLink', ex.connectLinkExample],
  [webhookResponse, 'Webhook', ex.webhookExample],
  [deliveryResponse, 'WebhookDelivery'],
  [attemptResponse, 'WebhookDeliveryAttempt'],
  [eventResponse, 'Event', ex.eventExample],
  [eventTypeResponse, 'EventType'],
  [paymentResponse, 'Payment', ex.paymentExample],
  [intentResponse, 'PaymentIntent'],
  [messageResponse, 'PaymentMessage'],
  [templateResponse, 'MessageTemplate'],
  [balanceResponse, 'Balance', ex.balanceExample],
  [cardResponse, 'Card', ex.cardExample],
  [tokenResponse, 'CardToken', ex.cardTokenExample],
  [chargeResponse, 'Charge', ex.chargeExample],
  [cashoutResponse, 'Cashout', ex.cashoutExample],
  [payoutAccountResponse, 'PayoutAccount'],
  [priceResponse, 'Price', ex.priceExample],
  [previewResponse, 'InvoicePreview', ex.invoicePreviewExample],
  [planResponse, 'Plan', ex.planExample],
  [subscriptionResponse, 'Subscription', ex.subscriptionExample],
  [testClockResponse, 'TestClock', ex.testClockExample],
  [resolutionResponse, 'FiscalResolution', ex.resolutionExample],
  [fiscalProfileResponse, 'FiscalProfile'],
  [invoiceResponse, 'Invoice', ex.invoiceExample],
  [creditNoteResponse, 'CreditNote', ex.creditNoteExample],
  [stampingResponse, 'Stamping'],
  [connectorResponse, 'Connector'],
  [connectorHealthResponse, 'ConnectorHealth'],
  [walletBalanceResponse, 'WalletBalance', ex.walletBalanceExample],
  [walletTransactionResponse, 'WalletTransaction', ex.walletTransactionExample],
  [campaignResponse, 'Campaign'],
  [campaignDetailResponse, 'CampaignDetail'],
  [campaignMessageResponse, 'CampaignMessage'],
  [importMessagesResponse, 'CampaignImport'],
  [issuingCardResponse, 'IssuingCard', ex.issuingCardExample],
  [issuingAuthorizationResponse, 'IssuingAuthorization'],
  [providerResponse, 'UtilityProvider'],
  [billResponse, 'UtilityBill'],
  [utilityResponse, 'Utility', ex.utilityExample],
  [paymentLinkResponse, 'UtilityPaymentLink'],
  [flowResponse, 'Flow', ex.flowExample],
  [flowRunResponse, 'FlowRun'],
  [companyResponse, 'Company'],
  [liveKeysResponse, 'CompanyLiveKeys'],
  [disputeResponse, 'Dispute', ex.disputeExample],
];

/** Registers a schema under a component name (keeping what the registry knew of it: its description). */
export function nameSchema(schema: z.ZodType, id: string, example?: unknown): void {
  const known = z.globalRegistry.get(schema);
  if (known?.id === id) return;
  z.globalRegistry.add(schema, { ...known, id, ...(example !== undefined ? { examples: [example] } : {}) });
}

for (const [schema, id, example] of NAMED) nameSchema(schema, id, example);

/** The component names of the resources (the OpenAPI test checks they are in the document). */
export const RESOURCE_SCHEMA_NAMES: readonly string[] = NAMED.map(([, id]) => id);
