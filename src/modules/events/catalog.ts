/** Every event type of SPEC.md's "Event types" table; webhooks subscribe to these names. */
export const EVENT_TYPES = [
  'payment.created', 'payment.approved', 'payment.rejected', 'payment.refunded', 'payment.expired', 'payment.partially_paid',
  'payment.partial_expired', 'payment.issue', 'payment.disputed', 'payment.message.delivered', 'payment.message.failed',
  'payment.message.replied', 'payment.deleted',
  'charge.created', 'charge.processing', 'charge.paid', 'charge.failed', 'charge.refunded', 'charge.disputed',
  'cashout.created', 'cashout.processing', 'cashout.completed', 'cashout.rejected', 'cashout.cancelled', 'cashout.require_approval',
  'cashout.turbo_onboarding',
  'subscription.created', 'subscription.active', 'subscription.paid', 'subscription.pass_due', 'subscription.unpaid',
  'subscription.canceled', 'subscription.finished', 'subscription.frozen',
  'account.pending', 'account.connected', 'account.disconnected', 'account.validated', 'account.uncompleted',
  'invoice.created', 'invoice.paid', 'invoice.canceled',
  'invoice.stamped', 'invoice.stamp_rejected', 'invoice.credit_note_issued',
  // Fiscal resolution alerts (docs/invoicing.md): range 80 % / 95 % used, 30 days before valid_until.
  'fiscal_resolution.range_alert', 'fiscal_resolution.expiring',
  'utility.paid', 'utility.rejected', 'connect_link.completed', 'balance.updated', 'wallet.transaction.created',
] as const;

export type EventType = (typeof EVENT_TYPES)[number];
export const EVENT_TYPE_SET: ReadonlySet<string> = new Set(EVENT_TYPES);
