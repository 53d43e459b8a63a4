import type { FastifyRequest } from 'fastify';
import type { AppDeps } from '../../platform/context.ts';
import { inTransaction } from '../../platform/db/database.ts';
import { ApiError } from '../../platform/errors/api-error.ts';
import type { RecoverResource } from '../../platform/idempotency/idempotency.ts';
import { toPesos, type Currency } from '../../platform/money.ts';
import { inTenant, iso } from '../../platform/scope.ts';
import { cardExpiredAt } from '../../platform/clock.ts';
import { selectAccountViews } from '../accounts/queries.ts';
import { maskAccountNumber } from '../accounts/service.ts';
import { cardsOfCustomer, createCardFromToken, findCard, type CardRow } from '../cards/service.ts';
import { answerHeldCharge, openHeldCharge, recordHeldCharge, rejectHeldCharge } from '../charges/held.ts';
import type { ChargeRow } from '../charges/present.ts';
import { findCharge } from '../charges/queries.ts';
import { createCharge } from '../charges/service.ts';
import { maxTransactionCop } from '../payments/queries.ts';
import { guardedSession } from './guard.ts';

/**
 * What a payer does inside the session (SPEC.md "Customer session", docs/session.md): list and add
 * payment methods, create charges on a saved card and read them. Every record belongs to the
 * cards and charges modules; this module only speaks for the session's customer.
 */

/** A pending session charge waits this long for the payer's approval (SPEC.md Limits). */
export const SESSION_CHARGE_TTL_MS = 5 * 60_000;

const BRAND_LABELS: Record<string, string> = {
  visa: 'Visa',
  mastercard: 'Mastercard',
  amex: 'American Express',
  diners: 'Diners Club',
  discover: 'Discover',
  jcb: 'JCB',
  unionpay: 'UnionPay',
  unknown: 'Tarjeta',
};

export interface SessionCard {
  id: string;
  brand: string;
  last_four: string;
  label: string;
  expiration_date: string;
  card_name: string;
}

/** OnePay's card item: the expiry as the month's last day. */
export function toSessionCard(card: CardRow): SessionCard {
  const lastDay = new Date(Date.UTC(card.exp_year, card.exp_month, 0)).getUTCDate();
  return {
    id: card.id,
    brand: card.brand,
    last_four: card.last4,
    label: `${BRAND_LABELS[card.brand] ?? 'Tarjeta'} ····${card.last4}`,
    expiration_date: `${card.exp_year}-${String(card.exp_month).padStart(2, '0')}-${String(lastDay).padStart(2, '0')}`,
    card_name: card.holder_name,
  };
}

export interface SessionMethods {
  data: {
    cards: SessionCard[];
    wallets: { id: string; subtype: string; phone: string; label: string }[];
    pse: { id: string; bank_name: string; label: string }[];
  };
}

/**
 * GET /customers/session/payment-methods, grouped as OnePay does: saved cards; active wallet
 * accounts (electronic deposits: Nequi, Daviplata…); active bank accounts (savings, checking),
 * which PSE debits. Numbers are masked as everywhere else.
 */
export async function sessionPaymentMethods(req: FastifyRequest): Promise<SessionMethods> {
  const session = guardedSession(req);
  const db = req.ctx.deps.database.db;
  const [cards, accounts] = await Promise.all([
    cardsOfCustomer(db, req.ctx, session.customerId),
    selectAccountViews(db, req.ctx)
      .where('accounts.customer_id', '=', session.customerId)
      .where('accounts.status', '=', 'ACTIVE')
      .where('accounts.deleted_at', 'is', null)
      .where('accounts.subtype', 'in', ['ELECTRONIC_DEPOSIT', 'SAVINGS', 'CHECKING'])
      .orderBy('accounts.created_at', 'desc')
      .execute(),
  ]);
  const out: SessionMethods = { data: { cards: cards.map(toSessionCard), wallets: [], pse: [] } };
  for (const a of accounts) {
    const bank = a.bank_name ?? 'Billetera';
    const masked = maskAccountNumber(a.account_number);
    if (a.subtype === 'ELECTRONIC_DEPOSIT') {
      const subtype = bank
        .toLowerCase()
        .normalize('NFD')
        .replace(/[^a-z0-9]+/g, '');
      out.data.wallets.push({ id: a.id, subtype, phone: masked, label: `${bank} ${masked}` });
    } else out.data.pse.push({ id: a.id, bank_name: bank, label: `${bank} ${masked}` });
  }
  return out;
}

/** POST /customers/session/payment-methods: the card of a single-use token, saved authorized for the session's customer. */
export async function addSessionCard(req: FastifyRequest, token: string, acceptTerms?: boolean | null): Promise<SessionCard> {
  const session = guardedSession(req);
  try {
    // The payer's own session: `accept_terms` is the payer's acceptance of the provider's contracts.
    const card = await createCardFromToken(req.ctx, {
      card_token: token,
      customer_id: session.customerId,
      authorization: true,
      accept_terms: acceptTerms,
    });
    return toSessionCard((await findCard(req.ctx.db, req.ctx, card.id))!);
  } catch (error) {
    // The token is this endpoint's `token`, not the cards module's `card_token`.
    if (error instanceof ApiError && error.errors?.card_token) {
      const { card_token: problems, ...rest } = error.errors;
      throw new ApiError('validation_error', { message: error.message, errors: { ...rest, token: problems } });
    }
    throw error;
  }
}

export const recoverSessionCard: RecoverResource = async (req, id) => {
  const card = await findCard(req.ctx.deps.database.db, req.ctx, id);
  return card ? toSessionCard(card) : null;
};

export interface SessionChargeBody {
  payment_method_id: string;
  amount: number;
  currency?: Currency;
  description: string;
  approve?: boolean | null;
}

export interface SessionChargeAnswer {
  charge_id: string;
  status: ChargeRow['status'];
  message: string;
  expires_at: string | null;
}

function refuse(message: string): never {
  throw new ApiError('session_charge_refused', { message });
}

function answerOf(
  row: { id: string; status: ChargeRow['status']; remarks: string | null; expires_at: Date | string | null },
  live: boolean,
): SessionChargeAnswer {
  const message =
    row.status === 'paid'
      ? 'Cobro aprobado y pagado.'
      : row.status === 'failed'
        ? `Cobro rechazado (${row.remarks ?? 'TRANSACTION_REJECTED'}).`
        : row.status === 'processing'
          ? 'Cobro aprobado; el pago está en proceso.'
          : live
            ? 'Enviamos la solicitud de aprobación al cliente por WhatsApp; tiene 5 minutos para aprobarla.'
            : 'Cobro de prueba creado: la solicitud de aprobación fue al cliente por el sandbox de mensajería; espera su respuesta (o POST /v1/charges/{id}/resolve) por 5 minutos.';
  return { charge_id: row.id, status: row.status, message, expires_at: row.expires_at ? iso(row.expires_at) : null };
}

/**
 * POST /customers/session/charges: an ordinary charge on a saved card of the session's customer,
 * held for the payer's approval for 5 minutes (one held charge per customer). Live: the approval
 * request goes to the payer's phone by the company's messaging rail (WhatsApp; the sandbox's with a
 * test key) and the payer's reply approves or rejects it. Test: `approve: true` charges the card at
 * once and `false` rejects it, without asking the payer; nothing leaves it waiting for the reply,
 * POST /charges/{id}/resolve or its expiry.
 * The uncoded 422 of SPEC.md: the method is not the customer's card (or of the other environment),
 * the card expired, or a held charge is already waiting.
 */
export async function createSessionCharge(req: FastifyRequest, body: SessionChargeBody, idempotencyKey: string | null): Promise<SessionChargeAnswer> {
  const ctx = req.ctx;
  const session = guardedSession(req);
  if (body.approve != null && !ctx.isTest) throw new ApiError('validation_error', { errors: { approve: ['is only accepted with a test key'] } });
  const currency = body.currency ?? 'COP';
  const amount = BigInt(body.amount);
  if (currency === 'COP' && amount > (await maxTransactionCop(ctx.db, ctx.companyId)) * 100n)
    throw new ApiError('validation_error', { errors: { amount: ['exceeds the maximum per transaction'] } });
  const now = ctx.deps.clock.now();
  const methodId = body.payment_method_id.trim();
  const card = await findCard(ctx.db, ctx, methodId);
  if (!card || card.customer_id !== session.customerId) refuse('The payment method is not a saved card of this customer in this environment.');
  const title = body.description;

  if (body.approve === true) {
    // Approved at once (test): an ordinary charge through the rail, as POST /charges makes it.
    if (!card.authorization) refuseProblem('card_not_found');
    if (cardExpiredAt(card, now)) refuseProblem('card_expired');
    if (await openHeldCharge(ctx.db, ctx, session.customerId, now)) refuseProblem('pending');
    const charge = await createCharge(
      ctx,
      { amount: pesosOf(amount), title, customer_id: session.customerId, card_id: card.id, currency },
      idempotencyKey,
    );
    return answerOf(charge, false);
  }

  const outcome = await inTransaction(ctx.db, async (trx) => {
    const held = await recordHeldCharge(ctx, trx, heldInput());
    if ('problem' in held) return held;
    if (body.approve === false) {
      const scope = { companyId: ctx.companyId, environment: ctx.environment, db: trx, deps: ctx.deps, notifyWorkers: ctx.notifyWorkers };
      return { row: (await rejectHeldCharge(trx, scope, held.row.id))!, phone: null };
    }
    // The approval request goes to the customer's phone; its record is what a reply must match.
    const customer = await trx.selectFrom('customers').select('phone').where('id', '=', session.customerId).executeTakeFirst();
    const phone = customer?.phone ?? null;
    if (phone) {
      await trx
        .insertInto('session_approval_requests')
        .values({
          company_id: ctx.companyId,
          environment: ctx.environment,
          charge_id: held.row.id,
          customer_id: session.customerId,
          phone,
          provider_message_id: null,
          created_at: now,
        })
        .execute();
    }
    return { row: held.row, phone };
  });
  if ('problem' in outcome) refuseProblem(outcome.problem);
  const { row, phone } = outcome;
  if (row.status === 'created' && phone) {
    const scope = { companyId: ctx.companyId, environment: ctx.environment };
    const deps = ctx.deps;
    const text = `Aprueba el cobro de ${formatAmount(row)} (${title}) respondiendo SI, o recházalo respondiendo NO. Vence en 5 minutos.`;
    ctx.afterCommit(() => void sendApprovalRequest(deps, scope, phone, row.id, text));
  }
  return answerOf(row, !ctx.isTest);

  function heldInput() {
    return {
      customerId: session.customerId,
      cardId: card!.id,
      amount,
      currency,
      title,
      expiresAt: new Date(now.getTime() + SESSION_CHARGE_TTL_MS),
      idempotencyKey,
    };
  }
}

/** A retry of a session charge whose run recorded the charge and then died: the charge as it is now. */
export const recoverSessionCharge: RecoverResource = async (req, id) => {
  const row = await findCharge(req.ctx.deps.database.db, req.ctx, id);
  return row ? answerOf(row, !req.ctx.isTest) : null;
};

function refuseProblem(problem: 'card_not_found' | 'card_expired' | 'pending'): never {
  if (problem === 'pending') refuse('A charge of this customer is already waiting for approval.');
  if (problem === 'card_expired') refuse('The card has expired.');
  refuse('The payment method is not a saved, authorized card of this customer in this environment.');
}

/** Minor units as the pesos string POST /charges takes (exact: no float on the way). */
function pesosOf(minor: bigint): string {
  return `${minor / 100n}.${String(minor % 100n).padStart(2, '0')}`;
}

function formatAmount(row: ChargeRow): string {
  return `${row.currency} ${toPesos(row.amount).toLocaleString('es-CO', { maximumFractionDigits: 2 })}`;
}

async function sendApprovalRequest(
  deps: AppDeps,
  scope: { companyId: string; environment: 'test' | 'live' },
  phone: string,
  chargeId: string,
  text: string,
) {
  try {
    const sent = await deps.rails.contact(scope).messaging.send({ to: phone, text, reference: chargeId });
    await deps.database.db
      .updateTable('session_approval_requests')
      .set({ provider_message_id: sent.providerMessageId })
      .$call(inTenant(scope))
      .where('charge_id', '=', chargeId)
      .execute();
  } catch (error) {
    // Unsent, the charge simply expires unapproved after 5 minutes.
    deps.logger.warn({ err: (error as Error)?.message, charge: chargeId }, 'session charge approval request not sent');
  }
}

/** A payer's reply to an approval request: SI approves, NO rejects, anything else is left alone. */
export function approvalOfReply(text: string): boolean | null {
  const word = text
    .trim()
    .toLowerCase()
    .normalize('NFD')
    .replace(/[\u0300-\u036f]/g, '')
    .replace(/[^a-z0-9]/g, '');
  if (['si', 's', '1', 'aprobar', 'apruebo', 'yes'].includes(word)) return true;
  if (['no', 'n', '2', 'rechazar', 'rechazo'].includes(word)) return false;
  return null;
}

/**
 * Wires the payers' replies (every process): a reply answers a held charge only when it is a reply
 * to that charge's approval request — found by the provider's message id, or by the reference the
 * provider echoes together with the phone the request went to. A report that merely names a
 * charge id (another company's provider, a forged callback) answers nothing.
 */
export function registerSessionReplies(deps: AppDeps): void {
  deps.rails.onMessageStatus(async (providerId, status, detail, environment) => {
    if (status !== 'replied') return;
    const approve = approvalOfReply(detail.replyText ?? '');
    if (approve === null) return;
    const requests = deps.database.db.selectFrom('session_approval_requests').selectAll().where('environment', '=', environment);
    let request = await requests.where('provider_message_id', '=', providerId).executeTakeFirst();
    if (!request && detail.reference?.startsWith('ch_') && detail.to) {
      request = await requests.where('charge_id', '=', detail.reference).where('phone', '=', detail.to).executeTakeFirst();
    }
    if (!request) return;
    await answerHeldCharge(deps, { companyId: request.company_id, environment }, request.charge_id, approve);
  });
}

export interface SessionChargeView {
  charge_id: string;
  status: ChargeRow['status'];
  amount: number;
  currency: string;
  description: string;
  remarks: string | null;
  paid_at: string | null;
  created_at: string;
  expires_at: string | null;
}

/** GET /customers/session/charges/{chargeId}: a charge of the session's customer, else 404 (no code). */
export async function getSessionCharge(req: FastifyRequest, chargeId: string): Promise<SessionChargeView> {
  const session = guardedSession(req);
  const row = await findCharge(req.ctx.deps.database.db, req.ctx, chargeId);
  if (!row || row.customer_id !== session.customerId) throw new ApiError('session_charge_not_found');
  return {
    charge_id: row.id,
    status: row.status,
    amount: Number(row.amount),
    currency: row.currency,
    description: row.title,
    remarks: row.remarks,
    paid_at: row.paid_at ? iso(row.paid_at) : null,
    created_at: iso(row.created_at),
    expires_at: row.expires_at ? iso(row.expires_at) : null,
  };
}
