/** Every event type of SPEC.md's "Event types" table; webhooks subscribe to these names. */
export const EVENT_TYPES = [
  'payment.created',
  'payment.approved',
  'payment.rejected',
  'payment.refunded',
  'payment.expired',
  'payment.partially_paid',
  'payment.partial_expired',
  'payment.issue',
  'payment.disputed',
  'payment.message.delivered',
  'payment.message.failed',
  'payment.message.replied',
  'payment.deleted',
  'charge.created',
  'charge.processing',
  'charge.paid',
  'charge.failed',
  'charge.refunded',
  'charge.refund_failed',
  'charge.disputed',
  'cashout.created',
  'cashout.processing',
  'cashout.completed',
  'cashout.rejected',
  'cashout.cancelled',
  'cashout.require_approval',
  'cashout.turbo_onboarding',
  'subscription.created',
  'subscription.active',
  'subscription.paid',
  'subscription.pass_due',
  'subscription.unpaid',
  'subscription.canceled',
  'subscription.finished',
  'subscription.frozen',
  'account.pending',
  'account.connected',
  'account.disconnected',
  'account.validated',
  'account.uncompleted',
  'invoice.created',
  'invoice.paid',
  'invoice.canceled',
  'invoice.stamped',
  'invoice.stamp_rejected',
  'invoice.credit_note_issued',
  // Fiscal resolution alerts (docs/invoicing.md): range 80 % / 95 % used, 30 days before valid_until.
  'fiscal_resolution.range_alert',
  'fiscal_resolution.expiring',
  'utility.paid',
  'utility.rejected',
  'connect_link.completed',
  'balance.updated',
  'wallet.transaction.created',
] as const;

export type EventType = (typeof EVENT_TYPES)[number];
export const EVENT_TYPE_SET: ReadonlySet<string> = new Set(EVENT_TYPES);

/**
 * What the service knows about each event type (docs/webhooks.md "Event catalogue"):
 * - `emits`: some code of the service emits it today. A webhook may only subscribe to types with
 *   `emits: true` (422 on `events` otherwise), and `GET /v1/events/types` says which ones do.
 *   WHOEVER ADDS AN EMITTER FOR A TYPE MARKED `emits: false` FLIPS IT HERE, in the same change
 *   (and adds a test that the event is emitted).
 * - `resource`: the key of the object in the `legacy` webhook body
 *   (`{"<resource>": data, "event": {type, timestamp, environment}}`).
 * The Record's type makes every entry of EVENT_TYPES need one here.
 */
export interface EventTypeInfo {
  emits: boolean;
  resource: string;
}

const on = (resource: string): EventTypeInfo => ({ emits: true, resource });

export const EVENT_CATALOGUE: Readonly<Record<EventType, EventTypeInfo>> = {
  'payment.created': on('payment'),
  'payment.approved': on('payment'),
  'payment.rejected': on('payment'),
  'payment.refunded': on('payment'),
  'payment.expired': on('payment'),
  'payment.partially_paid': on('payment'),
  'payment.partial_expired': on('payment'),
  'payment.issue': on('payment'), // a rail approves an attempt already declined (late_approval): the payment with `issue` (payments/issues.ts)
  'payment.disputed': on('payment'), // a dispute the rail opened on an approved payment (disputes module; docs/disputes.md)
  // The payment with its `message` ({id, channel, kind, recipient, status}): the object is the payment.
  'payment.message.delivered': on('payment'),
  'payment.message.failed': on('payment'),
  'payment.message.replied': on('payment'),
  'payment.deleted': on('payment'), // DELETE /v1/payments/{id} (the `cancel` transition)
  'charge.created': on('charge'),
  'charge.processing': on('charge'),
  'charge.paid': on('charge'),
  'charge.failed': on('charge'),
  'charge.refunded': on('charge'),
  'charge.refund_failed': on('charge'), // the rail refused the refund: the charge stays paid, the money is back in the balance (refund_failure)
  'charge.disputed': on('charge'), // a dispute the rail opened on a paid charge (disputes module; docs/disputes.md)
  'cashout.created': on('cashout'),
  'cashout.processing': on('cashout'),
  'cashout.completed': on('cashout'),
  'cashout.rejected': on('cashout'),
  'cashout.cancelled': on('cashout'),
  'cashout.require_approval': on('cashout'),
  'cashout.turbo_onboarding': on('cashout'),
  'subscription.created': on('subscription'),
  'subscription.active': on('subscription'),
  'subscription.paid': on('subscription'),
  'subscription.pass_due': on('subscription'),
  'subscription.unpaid': on('subscription'),
  'subscription.canceled': on('subscription'),
  'subscription.finished': on('subscription'),
  'subscription.frozen': on('subscription'),
  'account.pending': on('account'),
  'account.connected': on('account'),
  'account.disconnected': on('account'),
  'account.validated': on('account'),
  'account.uncompleted': on('account'),
  'invoice.created': on('invoice'),
  'invoice.paid': on('invoice'),
  'invoice.canceled': on('invoice'),
  // SPEC's exact payloads: these three are delivered in the standard body in both formats.
  'invoice.stamped': on('invoice'),
  'invoice.stamp_rejected': on('invoice'),
  'invoice.credit_note_issued': on('invoice'),
  'fiscal_resolution.range_alert': on('fiscal_resolution'),
  'fiscal_resolution.expiring': on('fiscal_resolution'),
  'utility.paid': on('utility'), // utilities: the biller paid a bill (docs/utilities.md)
  'utility.rejected': on('utility'), // utilities: the biller refused it, or a payment link's bill could not be paid
  'connect_link.completed': on('connect_link'),
  'balance.updated': on('balance'),
  'wallet.transaction.created': on('wallet_transaction'),
};

/** The types a webhook may subscribe to: those some code emits today. */
export function emittableEventTypes(): EventType[] {
  return EVENT_TYPES.filter((t) => EVENT_CATALOGUE[t].emits);
}

/** The invoicing events whose body is SPEC's exact payload in every webhook format. */
export const SPEC_PAYLOAD_EVENTS: ReadonlySet<string> = new Set(['invoice.stamped', 'invoice.stamp_rejected', 'invoice.credit_note_issued']);
