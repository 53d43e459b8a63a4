import { z } from 'zod';
import type { WebhookDoc } from '../../platform/http/openapi-document.ts';
import { accountResponse } from '../accounts/schemas.ts';
import { cashoutResponse } from '../cashouts/schemas.ts';
import { chargeResponse } from '../charges/schemas.ts';
import { connectLinkResponse } from '../connect-links/schemas.ts';
import { EVENT_CATALOGUE, EVENT_TYPES, type EventType } from '../events/catalog.ts';
import { resolutionResponse } from '../fiscal/schemas.ts';
import { creditNoteResponse, invoiceResponse } from '../invoices/schemas.ts';
import { balanceResponse } from '../ledger/routes.ts';
import { paymentResponse } from '../payments/schemas.ts';
import { MESSAGE_CHANNELS, MESSAGE_KINDS, MESSAGE_STATUSES } from '../payments/tables.ts';
import { subscriptionResponse } from '../subscriptions/schemas.ts';
import { utilityResponse } from '../utilities/schemas.ts';
import { walletTransactionResponse } from '../wallets/schemas.ts';
import * as ex from './examples.ts';
import { nameSchema } from './names.ts';

/**
 * The OpenAPI 3.1 `webhooks` (docs/openapi.md, docs/webhooks.md): one entry per type of the event
 * catalogue (src/modules/events/catalog.ts, `GET /v1/events/types`), its body the standard format
 * `{id, event, created_at, is_test, data}` where `data` is the resource as the API returns it.
 * Types whose `data` is the same object share one component (`ChargeEvent` for every `charge.*`);
 * SPEC's invoicing payloads and the types that add a field to the object have their own.
 * `WebhookEvent` is the union of all of them, for a receiver's one parse.
 */

const messageSummary = z.object({
  id: z.string().describe('msg_…'),
  channel: z.enum(MESSAGE_CHANNELS),
  kind: z.enum(MESSAGE_KINDS),
  recipient: z.string(),
  status: z.enum(MESSAGE_STATUSES),
  reply_text: z.string().optional().describe('status replied: what the payer answered'),
  error: z.string().nullable().optional().describe('status failed: why'),
});
const refundFailure = z.object({
  refund_id: z.string().describe('the refund the rail refused'),
  reason: z.string().describe("the rail's reason"),
  failed_at: z.string().describe('ISO 8601'),
});

const paymentIssue = z.object({
  id: z.string().describe('pis_…'),
  code: z.enum(['late_approval']).describe('late_approval: a rail approved an attempt already declined'),
  intent_id: z.string(),
  amount: z.number(),
  message: z.string(),
  created_at: z.string(),
});
const invoiceStampedData = z.object({
  invoice_id: z.string(),
  stamping: z.object({
    type: z.enum(['invoice']),
    status: z.enum(['accepted']),
    number: z.string().nullable(),
    cufe: z.string().nullable(),
    xml_url: z.string(),
    pdf_url: z.string(),
    total: z.number(),
  }),
});
const invoiceStampRejectedData = z.object({
  invoice_id: z.string(),
  stamping: z.object({ status: z.enum(['rejected']), number: z.string().nullable(), rejection_reason: z.string().nullable() }),
});

interface Group {
  name: string;
  description: string;
  data: z.ZodType;
  /** `data` of the example, by type (types without one have no example). */
  examples?: Partial<Record<EventType, unknown>>;
}

const chargeAs = (status: string, extra: Record<string, unknown> = {}) => ({ ...ex.chargeExample, status, ...extra });
const GROUPS: Record<string, Group> = {
  payment: {
    name: 'PaymentEvent',
    description: '`data` is the payment (GET /v1/payments/{id}).',
    data: paymentResponse,
    examples: {
      'payment.created': ex.paymentExample,
      'payment.approved': { ...ex.paymentExample, status: 'approved', amount_paid: 150000, amount_due: 0, paid_at: '2026-03-02T15:10:00.000Z' },
      'payment.deleted': { ...ex.paymentExample, status: 'cancelled', cancelled_at: '2026-03-02T15:10:00.000Z' },
    },
  },
  paymentIssue: {
    name: 'PaymentIssueEvent',
    description: '`data` is the payment with `issue`: a rail approved an attempt that was already declined (docs/payments.md).',
    data: paymentResponse.extend({ issue: paymentIssue }),
  },
  paymentMessage: {
    name: 'PaymentMessageEvent',
    description: '`data` is the payment with `message`: the message (link, resend, cancellation) whose status changed.',
    data: paymentResponse.extend({ message: messageSummary }),
    examples: {
      'payment.message.delivered': {
        ...ex.paymentExample,
        message: { id: 'msg_01jnbq3t8v0x2z4b6d8f0h2k4m', channel: 'messaging', kind: 'link', recipient: '+573001234567', status: 'delivered' },
      },
    },
  },
  chargeRefundFailed: {
    name: 'ChargeRefundFailedEvent',
    description:
      '`data` is the charge (still paid) with `refund_failure`: the rail refused the refund; its amount is back in the available balance (docs/charges.md "Refunds").',
    data: chargeResponse.extend({ refund_failure: refundFailure }),
    examples: {
      'charge.refund_failed': {
        ...ex.chargeExample,
        refund_failure: {
          refund_id: 're_01k7x9q4m2v8c3n5b6z7y8w9t0',
          reason: 'VOID_REFUSED: wompi refused (422 INPUT_VALIDATION_ERROR): transaction: La transacción ya no puede ser anulada',
          failed_at: '2026-03-03T10:00:00.000Z',
        },
      },
    },
  },
  charge: {
    name: 'ChargeEvent',
    description: '`data` is the charge (GET /v1/charges/{id}).',
    data: chargeResponse,
    examples: {
      'charge.created': chargeAs('created', { paid_at: null, network_id: null }),
      'charge.processing': chargeAs('processing', { paid_at: null }),
      'charge.paid': ex.chargeExample,
      'charge.failed': chargeAs('failed', { paid_at: null, failed_at: '2026-03-02T15:04:06.000Z', remarks: 'INSUFFICIENT_FUNDS' }),
      'charge.refunded': chargeAs('refunded', { refunded_at: '2026-03-03T10:00:00.000Z' }),
      'charge.disputed': chargeAs('paid', { disputed: true, dispute_id: ex.IDS.dispute }),
    },
  },
  cashout: {
    name: 'CashoutEvent',
    description: '`data` is the cash-out (GET /v1/cashouts/{id}).',
    data: cashoutResponse,
    examples: { 'cashout.processing': ex.cashoutExample },
  },
  subscription: {
    name: 'SubscriptionEvent',
    description: '`data` is the subscription (GET /v1/subscriptions/{id}).',
    data: subscriptionResponse,
    examples: { 'subscription.created': ex.subscriptionExample },
  },
  account: {
    name: 'AccountEvent',
    description: '`data` is the account (GET /v1/accounts/{id}).',
    data: accountResponse,
    examples: { 'account.connected': ex.accountExample, 'account.pending': { ...ex.accountExample, status: 'PENDING' } },
  },
  invoice: {
    name: 'InvoiceEvent',
    description: '`data` is the invoice (GET /v1/invoices/{id}).',
    data: invoiceResponse,
    examples: { 'invoice.created': { ...ex.invoiceExample, fiscal_status: null, stampings: [], number: null, cufe: null } },
  },
  invoiceStamped: {
    name: 'InvoiceStampedEvent',
    description:
      'SPEC.md’s stamping payload: `data` is `{invoice_id, stamping}` with the accepted document’s number, CUFE and links. Sent in this body in both webhook formats.',
    data: invoiceStampedData,
    examples: { 'invoice.stamped': ex.invoiceStampedData },
  },
  invoiceStampRejected: {
    name: 'InvoiceStampRejectedEvent',
    description:
      'SPEC.md’s stamping payload: `data` is `{invoice_id, stamping}` with DIAN’s rejection reason. Sent in this body in both webhook formats.',
    data: invoiceStampRejectedData,
    examples: { 'invoice.stamp_rejected': ex.invoiceStampRejectedData },
  },
  creditNote: {
    name: 'CreditNoteIssuedEvent',
    description: '`data` is the credit note (GET /v1/invoices/{id}/credit-notes/{credit_note_id}). Sent in this body in both webhook formats.',
    data: creditNoteResponse,
    examples: { 'invoice.credit_note_issued': ex.creditNoteExample },
  },
  rangeAlert: {
    name: 'FiscalResolutionRangeAlertEvent',
    description: '`data` is the resolution with `threshold_percent` (80 or 95): that share of its folio range is used.',
    data: resolutionResponse.extend({ threshold_percent: z.number().int() }),
    examples: { 'fiscal_resolution.range_alert': { ...ex.resolutionExample, threshold_percent: 80 } },
  },
  expiring: {
    name: 'FiscalResolutionExpiringEvent',
    description: '`data` is the resolution with `days_until_expiry` (30 days before `valid_until`).',
    data: resolutionResponse.extend({ days_until_expiry: z.number().int() }),
  },
  utility: {
    name: 'UtilityEvent',
    description: '`data` is the bill payment (GET /v1/utilities/{id}).',
    data: utilityResponse,
    examples: { 'utility.paid': ex.utilityExample },
  },
  connectLink: {
    name: 'ConnectLinkEvent',
    description: '`data` is the connect link (GET /v1/connect-links/{id}).',
    data: connectLinkResponse,
  },
  balance: {
    name: 'BalanceUpdatedEvent',
    description: '`data` is the balance of one currency (as in GET /v1/balances), at most one event per currency a minute.',
    data: balanceResponse,
    examples: { 'balance.updated': ex.balanceExample },
  },
  walletTransaction: {
    name: 'WalletTransactionEvent',
    description: '`data` is the wallet movement (GET /v1/customers/{id}/transactions).',
    data: walletTransactionResponse,
    examples: { 'wallet.transaction.created': ex.walletTransactionExample },
  },
};

/** The group of a catalogue type. */
function groupOf(type: EventType): Group {
  if (type === 'payment.issue') return GROUPS.paymentIssue;
  if (type === 'charge.refund_failed') return GROUPS.chargeRefundFailed;
  if (type.startsWith('payment.message.')) return GROUPS.paymentMessage;
  if (type === 'invoice.stamped') return GROUPS.invoiceStamped;
  if (type === 'invoice.stamp_rejected') return GROUPS.invoiceStampRejected;
  if (type === 'invoice.credit_note_issued') return GROUPS.creditNote;
  if (type === 'fiscal_resolution.range_alert') return GROUPS.rangeAlert;
  if (type === 'fiscal_resolution.expiring') return GROUPS.expiring;
  const byResource: Record<string, Group> = {
    payment: GROUPS.payment,
    charge: GROUPS.charge,
    cashout: GROUPS.cashout,
    subscription: GROUPS.subscription,
    account: GROUPS.account,
    invoice: GROUPS.invoice,
    utility: GROUPS.utility,
    connect_link: GROUPS.connectLink,
    balance: GROUPS.balance,
    wallet_transaction: GROUPS.walletTransaction,
  };
  const group = byResource[EVENT_CATALOGUE[type].resource];
  if (!group) throw new Error(`api-docs: no webhook body for event type ${type} (add it to src/modules/api-docs/webhooks.ts)`);
  return group;
}

const members = new Map<Group, EventType[]>();
for (const type of EVENT_TYPES) {
  const group = groupOf(type);
  members.set(group, [...(members.get(group) ?? []), type]);
}

/** The standard body of each group, registered as a component schema. */
const bodies = new Map<Group, z.ZodType>();
for (const [group, types] of members) {
  const body = z.object({
    id: z.string().describe('evt_…; also sent as the x-webhook-id header: deduplicate on it'),
    event: z.enum(types as [EventType, ...EventType[]]),
    created_at: z.string().describe('when it happened (ISO 8601)'),
    is_test: z.boolean().describe('true for test-mode events (test keys, test webhooks)'),
    data: group.data,
  });
  const first = types.find((t) => group.examples?.[t] !== undefined);
  nameSchema(body, group.name, first ? eventExample(first, group.examples![first]) : undefined);
  bodies.set(group, body);
}

/** The union of every event body: what a receiver parses before switching on `event`. */
export const webhookEventSchema = z.union([...bodies.values()] as [z.ZodType, z.ZodType, ...z.ZodType[]]);
nameSchema(webhookEventSchema, 'WebhookEvent');

function eventExample(type: EventType, data: unknown) {
  return { id: ex.IDS.event, event: type, created_at: '2026-03-02T15:04:06.000Z', is_test: true, data };
}

const LEGACY_NOTE =
  'A webhook created with `payload_format: legacy` receives OnePay’s older body instead: `{"<resource>": data, "event": {"type", "timestamp", "environment"}}` with the same `data` (SPEC’s invoicing payloads `invoice.stamped`, `invoice.stamp_rejected` and `invoice.credit_note_issued` keep this body in both formats).';

export const WEBHOOKS: WebhookDoc[] = EVENT_TYPES.map((type) => {
  const group = groupOf(type);
  const info = EVENT_CATALOGUE[type];
  const data = group.examples?.[type];
  const notEmitted = info.emits ? '' : ' Listed by SPEC.md; the service does not emit it yet (webhooks cannot subscribe to it).';
  return {
    type,
    summary: type,
    description: `${group.description} Legacy body key: \`${info.resource}\`.${notEmitted}\n\n${LEGACY_NOTE}`,
    payload: bodies.get(group)!,
    example: data !== undefined ? eventExample(type, data) : undefined,
  };
});

/** The headers of every delivery (docs/webhooks.md "What is delivered"). */
export const WEBHOOK_PARAMETERS = [
  {
    name: 'Signature',
    in: 'header',
    required: true,
    description: 'Hex HMAC-SHA256 of the raw body bytes with the webhook’s `secret`. Verify it over the bytes received, before parsing.',
    schema: { type: 'string', pattern: '^[0-9a-f]{64}$' },
  },
  {
    name: 'x-webhook-token',
    in: 'header',
    required: true,
    description: 'The webhook’s `header` value (a second check that the call comes from Recaudo).',
    schema: { type: 'string' },
  },
  { name: 'x-webhook-event', in: 'header', required: true, description: 'The event type.', schema: { type: 'string' } },
  {
    name: 'x-webhook-id',
    in: 'header',
    required: true,
    description: 'The event id (the body’s `id` in the standard format): deliveries are at least once, deduplicate on it.',
    schema: { type: 'string' },
  },
];
