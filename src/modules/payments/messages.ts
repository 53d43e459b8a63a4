import { sql, type Selectable, type Transaction } from 'kysely';
import type { AppDeps, RequestContext, ServiceScope } from '../../platform/context.ts';
import type { Executor } from '../../platform/db/database.ts';
import type { DB } from '../../platform/db/schema.ts';
import { prefixedId } from '../../platform/ids.ts';
import { paginate, parseListQuery } from '../../platform/lists/lists.ts';
import { WORK_CHANNEL } from '../../platform/outbox/outbox.ts';
import { iso, inTenant, type Tenant } from '../../platform/scope.ts';
import {
  CHANNEL_NOT_CONFIGURED,
  EmailError,
  formatAmount,
  formatDateTime,
  MessagingError,
  paymentCancelledMessage,
  paymentLinkMessage,
  paymentReceiptMessage,
  reportMove,
  type MessageStatus,
  type PaymentLinkMessage,
  type RailEnvironment,
  type StatusDetail,
} from '../../rails/index.ts';
import { nextContactWindow } from '../contact-policy/index.ts';
import { findTemplate, type TemplateRow } from '../templates/service.ts';
import { MESSAGE_MACHINE, RESENDABLE, type MessageAction } from './lifecycle.ts';
import { applyTransition, insertWithTransition } from '../../platform/state-machine.ts';
import { paymentLink, toPaymentResponse } from './present.ts';
import { loadPayment, type PaymentRow } from './queries.ts';
import { paymentMessagesList, type MessageResponse } from './schemas.ts';
import type { MessageKind, PaymentMessagesTable, PaymentMessageStatus } from './tables.ts';
import './tables.ts';

/**
 * Delivery of a payment by its channel (docs/payments.md "Delivery channel"): the business
 * transaction records a message row (status `pending`) and enqueues this job; the job calls the
 * rail after commit; the rail's reports move the row and emit `payment.message.*`.
 */
export const SEND_MESSAGE_JOB = 'payments.send_message';

export type MessageRow = Selectable<PaymentMessagesTable>;

/**
 * Records a message of `payment` by its channel and queues its sending, inside the transaction
 * of the change. Nothing for the `portal` and `manual` channels (nothing is sent), nor without a
 * recipient. Wakes this process's workers after commit, and the other processes' through NOTIFY
 * unless `notified` says an event of the same transaction already did (emitEvent notifies).
 */
export async function recordMessage(
  trx: Transaction<DB>,
  scope: ServiceScope,
  payment: PaymentRow,
  kind: MessageKind,
  templateId: string | null,
  opts: { notified?: boolean } = {},
): Promise<MessageRow | null> {
  const channel = payment.channel;
  if (channel !== 'messaging' && channel !== 'email') return null;
  const recipient = channel === 'messaging' ? payment.phone : payment.email;
  if (!recipient) return null;
  const now = scope.deps.clock.now();
  // A subscription's cycle link is collection contact: only within the lawful hours (Ley 2300). A
  // receipt is not collection: it goes at once.
  const sendAt = payment.source === 'subscription' && kind !== 'receipt' ? nextContactWindow(now) : now;
  const held = sendAt.getTime() > now.getTime();
  const row = await insertWithTransition<MessageRow>(trx, scope, MESSAGE_MACHINE, {
    table: 'payment_messages',
    action: 'create',
    values: {
      id: prefixedId('msg', now.getTime()),
      payment_id: payment.id,
      channel,
      kind,
      recipient,
      template_id: templateId,
      provider_message_id: null,
      error: null,
      reply_text: null,
      replied_at: null,
      held_until: held ? sendAt : null,
      created_at: now,
      updated_at: now,
    },
  });
  // A new payment already shows it (initialMessageState): no second write on the create path.
  if (payment.message_status !== row.status || payment.message_remarks !== null)
    await notePaymentMessage(trx, scope, row.payment_id, row.status, null);
  if ((await scope.deps.rails.contactFor({ ...scope, db: trx }))[channel === 'messaging' ? 'messaging' : 'email'].provider === 'none') {
    // Live without a channel: never simulated, failed at once (contact hours do not delay a failure).
    return moveMessage(trx, scope.deps, scope, row, 'fail', { error: CHANNEL_NOT_CONFIGURED });
  }
  await scope.deps.jobs.enqueue(
    trx,
    SEND_MESSAGE_JOB,
    { company_id: scope.companyId, environment: scope.environment, message_id: row.id, payment_id: payment.id },
    held || scope.clockBinding ? sendAt : undefined,
    scope.clockBinding,
  );
  // Workers of other processes LISTEN; the notification goes out only if this commits.
  if (!opts.notified) await sql`select pg_notify(${WORK_CHANNEL}, '')`.execute(trx);
  scope.notifyWorkers?.();
  return row;
}

/**
 * What a new payment's `message` says from its first answer (and its payment.created): the link
 * message recordMessage is about to record — pending, or failed at once where no channel could
 * carry it in live — or nothing for the portal and manual channels.
 */
export async function initialMessageState(
  scope: ServiceScope,
  payment: { channel: string; phone: string | null; email: string | null },
): Promise<{ message_status: string | null; message_remarks: string | null }> {
  const channel = payment.channel;
  const recipient = channel === 'messaging' ? payment.phone : channel === 'email' ? payment.email : null;
  if (!recipient) return { message_status: null, message_remarks: null };
  const rails = await scope.deps.rails.contactFor(scope);
  const unconfigured = rails[channel === 'messaging' ? 'messaging' : 'email'].provider === 'none';
  return unconfigured ? { message_status: 'failed', message_remarks: CHANNEL_NOT_CONFIGURED } : { message_status: 'pending', message_remarks: null };
}

/** How the payment was paid, in the payer's words: the method of its approved attempt. */
async function paidMethod(db: Executor, scope: Tenant, paymentId: string): Promise<string> {
  const intent = await db
    .selectFrom('payment_intents')
    .select('method')
    .$call(inTenant(scope))
    .where('payment_id', '=', paymentId)
    .where('status', '=', 'approved')
    .orderBy('created_at', 'desc')
    .executeTakeFirst();
  const names: Record<string, string> = {
    card: 'Tarjeta',
    pse: 'PSE',
    walleta: 'Billetera',
    walletb: 'Billetera',
    rtkey: 'Llave Bre-B',
    banklink: 'Transferencia',
    wallet: 'Saldo',
  };
  return intent ? (names[intent.method] ?? intent.method) : 'Pago en línea';
}

/** Minor units → the decimal text formatAmount reads exactly. */
function decimal(minor: bigint): string {
  return `${minor / 100n}.${(minor % 100n).toString().padStart(2, '0')}`;
}

function amountText(payment: PaymentRow, due: boolean): string | undefined {
  if (payment.amount === null) return undefined;
  const amount = due && payment.amount_paid > 0n && payment.amount > payment.amount_paid ? payment.amount - payment.amount_paid : payment.amount;
  return formatAmount(decimal(amount), payment.currency);
}

/**
 * Variables of a pre-approved template, for providers that send templates by name: every
 * `{{name}}` of its body, filled from the payment and the company (`''` for what Recaudo does
 * not know: the payer's name, the company's `optional_…` texts).
 */
function templateVariables(
  template: TemplateRow,
  payment: PaymentRow,
  companyName: string,
  link: string,
  amount: string | undefined,
): Record<string, string> {
  const known: Record<string, string> = {
    company_name: companyName,
    title: payment.title,
    amount: amount ?? '',
    payment_link: link,
    reference: payment.reference ?? '',
    payment_id: payment.id,
    expiration_date: payment.expires_at ? formatDateTime(new Date(payment.expires_at)) : '',
  };
  const variables: Record<string, string> = {};
  for (const [, name] of template.body.matchAll(/\{\{\s*([a-z0-9_]+)\s*\}\}/gi)) variables[name] = known[name] ?? '';
  return variables;
}

function describeError(error: unknown): string {
  if (error instanceof MessagingError || error instanceof EmailError) return `${error.code}: ${error.message}`;
  return error instanceof Error ? error.message : String(error);
}

/** What the payment.message.* events carry about the message, next to the payment. */
function messageSummary(row: MessageRow): Record<string, unknown> {
  const summary: Record<string, unknown> = { id: row.id, channel: row.channel, kind: row.kind, recipient: row.recipient, status: row.status };
  if (row.status === 'replied') summary.reply_text = row.reply_text;
  if (row.status === 'failed') {
    summary.error = row.error;
    summary.remarks = row.error;
  }
  return summary;
}

async function loadPaymentRow(db: Executor, scope: Tenant, id: string): Promise<PaymentRow> {
  return db.selectFrom('payments').selectAll().$call(inTenant(scope)).where('id', '=', id).executeTakeFirstOrThrow();
}

async function lockMessage(trx: Transaction<DB>, scope: Tenant, id: string): Promise<MessageRow | undefined> {
  return trx.selectFrom('payment_messages').selectAll().$call(inTenant(scope)).where('id', '=', id).forUpdate().executeTakeFirst();
}

type MessagePatch = Partial<Pick<MessageRow, 'error' | 'reply_text' | 'replied_at' | 'provider_message_id' | 'attempts'>>;

/**
 * Applies `action` of the message machine with `patch`, in the caller's transaction; its event
 * (`payment.message.<status>`) carries the payment as the API returns it, plus `message`.
 */
async function moveMessage(
  trx: Transaction<DB>,
  deps: AppDeps,
  scope: Tenant,
  row: MessageRow,
  action: MessageAction,
  patch: MessagePatch,
): Promise<MessageRow> {
  const to = MESSAGE_MACHINE.find(row.status, action)?.to;
  if (to) await notePaymentMessage(trx, scope, row.payment_id, to, to === 'failed' ? (patch.error ?? row.error) : null);
  const { row: updated } = await applyTransition(trx, { ...scope, db: trx, deps }, MESSAGE_MACHINE, {
    table: 'payment_messages',
    row,
    action,
    set: () => patch,
    present: async (moved) => ({
      ...toPaymentResponse(await loadPaymentRow(trx, scope, moved.payment_id), deps.config.baseUrl),
      message: messageSummary(moved),
    }),
  });
  return updated;
}

/** The payment shows its latest message's state (payments.message_status, migration 0044), in the message's transaction. */
async function notePaymentMessage(trx: Transaction<DB>, scope: Tenant, paymentId: string, status: string, remarks: string | null): Promise<void> {
  await trx
    .updateTable('payments')
    .set({ message_status: status, message_remarks: remarks })
    .$call(inTenant(scope))
    .where('id', '=', paymentId)
    .execute();
}

/** Records what the rail said without a status change (its id, the attempts so far). */
async function patchMessage(
  db: Executor,
  deps: AppDeps,
  scope: Tenant,
  id: string,
  patch: MessagePatch,
  onlyIf?: PaymentMessageStatus,
): Promise<void> {
  let q = db
    .updateTable('payment_messages')
    .set({ ...patch, updated_at: deps.clock.now() })
    .$call(inTenant(scope))
    .where('id', '=', id);
  if (onlyIf) q = q.where('status', '=', onlyIf);
  await q.execute();
}

/** Marks a pending message failed for good and emits payment.message.failed, in one transaction. */
async function failMessage(deps: AppDeps, scope: Tenant, id: string, reason: string, attempts: number): Promise<void> {
  await deps.database.db.transaction().execute(async (trx) => {
    const row = await lockMessage(trx, scope, id);
    if (!row || row.status !== 'pending') return;
    await moveMessage(trx, deps, scope, row, 'fail', { error: reason, attempts });
  });
  deps.jobs.wake();
}

/**
 * The `payments.send_message` job: builds the Spanish texts, hands the message to the rail of the
 * payment's environment (`reference` = the message id, so a retried send is one message for the
 * provider), then stores the provider's id in a short transaction. Retryable rail errors throw
 * (the queue retries with backoff); a refusal, or the last attempt, marks the message failed.
 */
export async function runSendMessage(deps: AppDeps, payload: Record<string, unknown>, job: { id: string; attempts: number }): Promise<void> {
  const scope: Tenant = { companyId: String(payload.company_id), environment: payload.environment === 'live' ? 'live' : 'test' };
  const db = deps.database.db;
  const id = String(payload.message_id);
  const message = await db.selectFrom('payment_messages').selectAll().$call(inTenant(scope)).where('id', '=', id).executeTakeFirst();
  if (!message || message.status !== 'pending') return; // already handed over (or reported)
  const payment = await loadPaymentRow(db, scope, message.payment_id);
  if (message.kind !== 'cancellation' && message.kind !== 'receipt' && !RESENDABLE.includes(payment.status)) {
    // Cancelled, paid or expired before the job ran: a link to pay would mislead the payer.
    await failMessage(deps, scope, id, `not sent: the payment is ${payment.status}`, job.attempts - 1);
    return;
  }
  const company = await db.selectFrom('companies').select('name').where('id', '=', scope.companyId).executeTakeFirstOrThrow();
  const link = paymentLink(deps.config.baseUrl, payment.id);
  let texts: PaymentLinkMessage;
  let amount: string | undefined;
  let params: string[] | undefined;
  if (message.kind === 'cancellation') {
    amount = amountText(payment, false);
    texts = paymentCancelledMessage({ companyName: company.name, title: payment.title, amountText: amount });
  } else if (message.kind === 'receipt') {
    amount = payment.amount_paid > 0n ? formatAmount(decimal(payment.amount_paid), payment.currency) : (amountText(payment, false) ?? '');
    const method = await paidMethod(db, scope, payment.id);
    const reference = payment.reference ?? payment.id;
    texts = paymentReceiptMessage({
      companyName: company.name,
      title: payment.title,
      amountText: amount,
      methodText: method,
      paidAt: payment.paid_at ? new Date(payment.paid_at) : deps.clock.now(),
      reference,
    });
    params = [company.name, payment.title, amount, reference];
  } else {
    amount = amountText(payment, true);
    texts = paymentLinkMessage({
      companyName: company.name,
      title: payment.title,
      amountText: amount,
      link,
      expiresAt: payment.expires_at ? new Date(payment.expires_at) : undefined,
    });
  }

  const rails = await deps.rails.contactFor(scope);
  let providerMessageId: string;
  try {
    if (message.channel === 'messaging') {
      const template = message.template_id ? await findTemplate(db, message.template_id) : undefined;
      const sent = await rails.messaging.send({
        to: message.recipient,
        text: texts.sms,
        ...(template ? { template: template.name, variables: templateVariables(template, payment, company.name, link, amount) } : {}),
        // A template-only provider (WhatsApp): the link's template and its values in order (docs/whatsapp.md).
        ...(message.kind === 'receipt'
          ? { purpose: 'receipt' as const, params }
          : message.kind !== 'cancellation'
            ? { purpose: 'payment_link' as const, params: [company.name, payment.title, amount ?? '', link] }
            : {}),
        reference: message.id,
      });
      providerMessageId = sent.providerMessageId;
    } else {
      const sent = await rails.email.send({
        to: message.recipient,
        subject: texts.email.subject,
        text: texts.email.text,
        html: texts.email.html,
        fromName: company.name,
        reference: message.id,
      });
      providerMessageId = sent.messageId;
    }
  } catch (error) {
    if (error instanceof MessagingError && error.outcomeUnknown && !error.retryable) {
      // The provider may have sent it and cannot be asked to deduplicate (WhatsApp): never sent again.
      // Handed over without its id; the provider's report (it echoes our reference) settles it.
      await db.transaction().execute(async (trx) => {
        const row = await lockMessage(trx, scope, id);
        if (row?.status === 'pending')
          await moveMessage(trx, deps, scope, row, 'hand_over', { attempts: job.attempts, error: `outcome unknown: ${describeError(error)}` });
      });
      return;
    }
    const known = error instanceof MessagingError || error instanceof EmailError;
    // Anything that is not a rail's answer (a bug, the rail closing at shutdown) is retried too.
    const retryable = known ? error.retryable : true;
    const reason = describeError(error);
    const maxAttempts =
      (await db.selectFrom('jobs').select('max_attempts').where('id', '=', job.id).executeTakeFirst())?.max_attempts ?? job.attempts;
    if (retryable && job.attempts < maxAttempts) {
      await patchMessage(db, deps, scope, id, { attempts: job.attempts, error: reason }, 'pending');
      throw error;
    }
    await failMessage(deps, scope, id, retryable ? `gave up after ${job.attempts} attempts: ${reason}` : reason, job.attempts);
    return;
  }

  // The sandbox may already have reported an outcome (delay 0): never move a message backwards.
  let emitted = false;
  await db.transaction().execute(async (trx) => {
    const row = await lockMessage(trx, scope, id);
    if (!row) return;
    const patch = { provider_message_id: row.provider_message_id ?? providerMessageId, attempts: job.attempts, error: null };
    if (row.status !== 'pending') {
      await patchMessage(trx, deps, scope, id, patch);
      return;
    }
    // An e-mail accepted by the SMTP server is as delivered as Recaudo can know (no reports come back).
    const delivered = row.channel === 'email';
    await moveMessage(trx, deps, scope, row, delivered ? 'deliver' : 'hand_over', patch);
    emitted = delivered;
  });
  if (emitted) deps.jobs.wake();
}

/**
 * A provider's report about a message (rails.onMessageStatus, every process): found by its
 * reference (the message id) or else by the provider's id; in one transaction the row moves and
 * `payment.message.<status>` is emitted. A repeated report emits nothing: delivered and failed
 * only move a message that is pending or sent; a reply is new unless its text and time equal the
 * last one recorded. A report for no message of ours is ignored.
 */
export async function applyMessageStatus(
  deps: AppDeps,
  providerMessageId: string,
  status: MessageStatus,
  detail: StatusDetail,
  environment: RailEnvironment,
): Promise<void> {
  const db = deps.database.db;
  let q = db.selectFrom('payment_messages').select(['company_id', 'id']).where('environment', '=', environment);
  q = detail.reference ? q.where('id', '=', detail.reference) : q.where('provider_message_id', '=', providerMessageId);
  const found = await q.executeTakeFirst();
  if (!found) {
    deps.logger.debug({ providerMessageId, reference: detail.reference, status }, 'message status for no payment message');
    return;
  }
  const scope: Tenant = { companyId: found.company_id, environment };
  let emitted = false;
  await db.transaction().execute(async (trx) => {
    const row = await lockMessage(trx, scope, found.id);
    if (!row) return;
    // A reply always moves a payment message; delivered and failed only one its machine takes them from.
    const move = reportMove(row, status, detail, providerMessageId, (action) => action === 'reply' || !!MESSAGE_MACHINE.find(row.status, action));
    if (!move) return;
    await moveMessage(trx, deps, scope, row, move.action, move.patch);
    emitted = true;
  });
  if (emitted) deps.jobs.wake(); // webhook deliveries of the new event
}

export function toMessageResponse(row: MessageRow): MessageResponse {
  return {
    id: row.id,
    payment_id: row.payment_id,
    channel: row.channel,
    kind: row.kind,
    recipient: row.recipient,
    template_id: row.template_id,
    status: row.status,
    error: row.error,
    reply_text: row.reply_text,
    attempts: row.attempts,
    held_until: row.held_until ? iso(row.held_until) : null,
    is_test: row.environment === 'test',
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
  };
}

/** GET /payments/{id}/messages: the payment's messages, newest first like every list (envelope). */
export async function listPaymentMessages(ctx: RequestContext, paymentId: string, query: Record<string, unknown>, path: string) {
  const payment = await loadPayment(ctx, paymentId);
  const list = parseListQuery(paymentMessagesList, query);
  const q = ctx.db.selectFrom('payment_messages').selectAll().$call(inTenant(ctx)).where('payment_id', '=', payment.id);
  return paginate(q, list, { path, query, table: 'payment_messages', map: toMessageResponse });
}

/** The send job and the status listener; runs in every process (API and workers). */
export function registerMessageHandlers(deps: AppDeps): void {
  deps.jobs.register(SEND_MESSAGE_JOB, (payload, job) => runSendMessage(deps, payload, job));
  deps.rails.onMessageStatus((providerMessageId, status, detail, environment) =>
    applyMessageStatus(deps, providerMessageId, status, detail, environment),
  );
}
