import type { FastifyInstance } from 'fastify';
import type { ApiDocs } from '../../platform/http/openapi-document.ts';
import { REQUEST_EXAMPLES } from './examples.ts';
import { INTRODUCTION } from './introduction.ts';
import { RESOURCE_SCHEMA_NAMES } from './names.ts';
import { OPERATION_ID_OVERRIDES } from './operations.ts';
import { WEBHOOK_PARAMETERS, WEBHOOKS } from './webhooks.ts';

/**
 * The domain content of the OpenAPI document (docs/openapi.md): the introduction, the component
 * names (registered by names.ts on import), the webhooks, operationId overrides and request
 * examples. The platform's builder (src/platform/http/openapi-document.ts) assembles the document.
 */
export const API_DOCS: ApiDocs = {
  introduction: INTRODUCTION,
  operationIds: OPERATION_ID_OVERRIDES,
  requestExamples: REQUEST_EXAMPLES,
  webhooks: WEBHOOKS,
  webhookParameters: WEBHOOK_PARAMETERS,
  tags: [
    { name: 'Customers', description: 'The people and companies you collect from.' },
    { name: 'Cards', description: 'Saved cards and card tokens (the publishable key makes tokens in the browser).' },
    { name: 'Accounts', description: 'Bank accounts, instant keys and wallets registered for debits and pay-outs.' },
    { name: 'Charges', description: 'Charging a saved card or account, bank transfers (banklink) and instant-key QR codes.' },
    { name: 'Wallet request-to-pay', description: 'Payment requests the payer approves in a wallet app.' },
    { name: 'Payments', description: 'Payment links: a payer pays by the method they choose on a hosted page.' },
    { name: 'Subscriptions', description: 'Plans and recurring collection.' },
    { name: 'Invoicing', description: 'DIAN numbering resolutions and the company fiscal profile.' },
    { name: 'Invoices', description: 'Invoices, their DIAN stamping, credit notes, XML and PDF.' },
    { name: 'Cash-outs', description: 'Sending money to a customer’s account, approvals.' },
    { name: 'Balances', description: 'The company’s balances from the ledger.' },
    { name: 'Webhooks', description: 'Where events are delivered, and every delivery attempt.' },
    { name: 'Events', description: 'The event catalogue and the events that happened.' },
    { name: 'Customer session', description: 'A payer’s own session (phone login code, saved methods, charges).' },
  ],
  keepSchemas: ['WebhookEvent', ...RESOURCE_SCHEMA_NAMES],
};

/** Hands the document its content; registers no route. */
export function apiDocsRoutes(app: FastifyInstance): void {
  app.openapiDocs.use(API_DOCS);
}
