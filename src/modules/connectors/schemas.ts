import { z } from 'zod';
import { CONNECTOR_NAMES, CONNECTOR_RAILS } from '../../rails/index.ts';

const secret = (what: string) =>
  z
    .string()
    .trim()
    .min(8, 'must be at least 8 characters')
    .max(512, 'must be at most 512 characters')
    .regex(/^[\x21-\x7e]+$/, 'must be printable ASCII without spaces')
    .describe(what);

export const connectorParams = z.object({ name: z.enum(CONNECTOR_NAMES).describe('the connector (wompi)') });

export const putConnectorBody = z
  .object({
    provider_environment: z
      .enum(['sandbox', 'production'])
      .optional()
      .describe("the provider's environment; live keys only production; test keys either (default: sandbox for test, production for live)"),
    public_key: secret('public key (pub_test_… or pub_prod_…)').optional(),
    private_key: secret('private key (prv_test_… or prv_prod_…); write-only').optional(),
    events_secret: secret('events secret, checks the checksum of the provider’s events; write-only').optional(),
    integrity_secret: secret('integrity secret, signs each transaction; write-only').optional(),
    payouts_api_key: secret('Third-Party Payments API key (x-api-key); write-only').optional(),
    payouts_user_principal_id: secret('Third-Party Payments principal user id (user-principal-id); write-only').optional(),
    payouts_events_secret: secret('Third-Party Payments events secret, checks their checksum; write-only').optional(),
    payouts_account_id: z
      .string()
      .trim()
      .min(1)
      .max(100)
      .regex(/^[\x21-\x7e]+$/, 'must be printable ASCII without spaces')
      .optional()
      .describe('the origin account payouts are sent from (GET /accounts of the payouts API)'),
    rails: z
      .array(z.enum(CONNECTOR_RAILS.wompi as unknown as [string, ...string[]]))
      .max(10)
      .optional()
      .describe('the rails this connector serves for the environment (default: every rail it can serve)'),
  })
  .strict();
export type PutConnectorBody = z.infer<typeof putConnectorBody>;

const secretSummary = z.object({ set: z.boolean(), last4: z.string().nullable() });

export const connectorResponse = z.object({
  name: z.enum(CONNECTOR_NAMES),
  environment: z.enum(['test', 'live']),
  provider_environment: z.enum(['sandbox', 'production']),
  public_key: z.string(),
  private_key: secretSummary,
  events_secret: secretSummary,
  integrity_secret: secretSummary,
  payouts_api_key: secretSummary,
  payouts_user_principal_id: secretSummary,
  payouts_events_secret: secretSummary,
  payouts_account_id: z.string().nullable(),
  rails: z.array(z.string()),
  events_url: z.string().describe('where the provider must post its events (configure it in the provider’s dashboard)'),
  payouts_events_url: z.string().describe('where the provider must post its Third-Party Payments events (configured apart in its dashboard)'),
  created_at: z.string(),
  updated_at: z.string(),
});
export type ConnectorResponse = z.infer<typeof connectorResponse>;

export const connectorHealthResponse = z.object({
  name: z.enum(CONNECTOR_NAMES),
  environment: z.enum(['test', 'live']),
  authenticated: z.boolean().describe('the provider accepted both keys just now'),
  problem: z.string().nullable().describe('why not, when it did not'),
  latency_ms: z.number().nullable(),
  last_event_at: z.string().nullable().describe('the last verified event received for this company and environment'),
  refused_events_24h: z.number().int().describe('events refused in the last 24 hours (bad checksum)'),
  open_transactions_past_deadline: z.number().int().describe('charges on the connector’s rails still open after the poll deadline'),
  payouts: z
    .object({
      authenticated: z.boolean().describe('the payouts API accepted its keys just now'),
      problem: z.string().nullable(),
      origin_balance: z.number().nullable().describe('the origin account’s balance at the provider, in pesos'),
    })
    .nullable()
    .describe('Third-Party Payments, when its settings are set'),
});
export type ConnectorHealthResponse = z.infer<typeof connectorHealthResponse>;

export const eventAck = z.object({ received: z.boolean(), settled: z.string().nullable() });
