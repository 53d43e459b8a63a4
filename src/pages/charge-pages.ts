import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AppDeps } from '../platform/context.ts';
import { findBank } from '../modules/banks/service.ts';
import { isOverdue, scopeOfCharge, settlePayerCharge, type SettleOutcome } from '../modules/charges/collect.ts';
import { FINAL } from '../modules/charges/lifecycle.ts';
import type { ChargeRow } from '../modules/charges/present.ts';
import type { FormTokens } from './csrf.ts';
import { money } from './format.ts';
import { sendPage } from './html.ts';
import { findChargeForPayer } from '../modules/charges/payer-reads.ts';
import { qrSvg } from './qr.ts';
import { bankPage, chargeFinalPage, chargeTestBanner, messagePage, notFoundPage, qrPage } from './views.ts';

/**
 * The payer's pages of banklink and rtkey charges (docs/pages.md "Charges"): `/pay/{charge id}` is
 * the `url` the API answers. A banklink charge shows the sandbox bank (Aprobar / Rechazar), then
 * sends the payer to the charge's `redirect_url` with `charge_id`; an rtkey charge shows its QR
 * (Simular pago). The same rendering pieces, form tokens and headers as the payments' pages; the
 * answer is saved by the charges module (settlePayerCharge: the transition table, its events and
 * the ledger).
 */
export function chargePages(deps: AppDeps, tokens: FormTokens) {
  const db = () => deps.database.db;
  const now = () => deps.clock.now();

  /** The merchant's page with charge_id added (the outcome is read from the API, never from the URL). */
  const backUrl = (charge: ChargeRow): string | null => {
    if (!charge.redirect_url) return null;
    try {
      const target = new URL(charge.redirect_url);
      if (target.protocol !== 'https:' && target.protocol !== 'http:') return null;
      target.searchParams.set('charge_id', charge.id);
      return target.toString();
    } catch {
      return null;
    }
  };
  const formOrigins = (charge: ChargeRow): string[] => {
    const back = backUrl(charge);
    return back ? [new URL(back).origin] : [];
  };

  async function load(id: string): Promise<{ charge: ChargeRow; companyName: string } | null> {
    const found = await findChargeForPayer(db(), id);
    if (!found || !isOverdue(found.charge, now())) return found;
    // Past its expiry and the job has not run yet: it expires now, as the job would.
    await settlePayerCharge(deps, scopeOfCharge(found.charge), found.charge.id, { status: 'expired' });
    deps.jobs.wake();
    return findChargeForPayer(db(), id);
  }

  function finalPage(reply: FastifyReply, charge: ChargeRow, companyName: string) {
    return sendPage(
      reply,
      200,
      chargeFinalPage({
        companyName,
        title: charge.title,
        amount: charge.amount,
        currency: charge.currency,
        operation: charge.id,
        status: charge.status,
        remarks: charge.remarks,
        method: charge.payment_method_type,
        paidAt: charge.paid_at ? new Date(charge.paid_at) : null,
        backUrl: backUrl(charge),
        environment: charge.environment,
      }),
    );
  }

  return {
    /** GET /pay/{charge id}: the bank or QR page while the charge waits for the payer, else its final state. */
    async show(reply: FastifyReply, id: string) {
      const found = await load(id);
      if (!found) return sendPage(reply, 404, notFoundPage());
      const { charge, companyName } = found;
      if (FINAL.includes(charge.status) || charge.environment !== 'test' || (charge.payment_method_type === 'rtkey' && !charge.qr_payload)) {
        return finalPage(reply, charge, companyName);
      }
      const waiting = {
        companyName,
        title: charge.title,
        amount: charge.amount,
        currency: charge.currency,
        operation: charge.id,
        action: `/pay/${charge.id}`,
        token: tokens.issue(charge.id, now()),
        environment: charge.environment,
      };
      if (charge.payment_method_type === 'rtkey') {
        const svg = qrSvg(charge.qr_payload!, `Código QR para pagar ${money(charge.amount, charge.currency)} a ${companyName}`);
        return sendPage(
          reply,
          200,
          qrPage({
            ...waiting,
            banner: chargeTestBanner(charge.environment),
            payload: charge.qr_payload!,
            svg,
            expiresAt: new Date(charge.expires_at!),
            checkUrl: `/pay/${charge.id}`,
            cancellable: false,
          }),
        );
      }
      const bank = charge.bank_id ? await findBank(db(), charge.bank_id) : undefined;
      return sendPage(
        reply,
        200,
        bankPage({ ...waiting, bankName: bank?.name ?? null, returnsTo: `Al terminar volverás al sitio de ${companyName}.` }),
        { formOrigins: formOrigins(charge) },
      );
    },

    /** POST /pay/{charge id}: the sandbox bank's Aprobar / Rechazar, or the QR's Simular pago. */
    async act(req: FastifyRequest, reply: FastifyReply, id: string) {
      const found = await load(id);
      if (!found) return sendPage(reply, 404, notFoundPage());
      const { charge } = found;
      const body = (req.body ?? {}) as Record<string, unknown>;
      if (!tokens.verify(charge.id, body.token, now())) {
        return sendPage(
          reply,
          403,
          messagePage({
            title: 'Formulario no válido',
            heading: 'Esta página de pago ya no es válida',
            text: 'Por seguridad, vuelve a abrir la página de pago y envía el formulario de nuevo. No se hizo ningún cobro.',
            link: { href: `/pay/${charge.id}`, label: 'Volver a la página de pago' },
          }),
        );
      }
      const back = () => reply.redirect(`/pay/${charge.id}`, 303);
      if (FINAL.includes(charge.status)) return back();
      if (charge.environment !== 'test') {
        return sendPage(
          reply,
          503,
          messagePage({
            title: 'Pago no disponible',
            heading: 'Pago en línea no disponible todavía',
            text: `El pago por este medio aún no está habilitado para cobros reales. Comunícate con ${found.companyName} para saber cómo pagar. No se hizo ningún cobro.`,
            link: { href: `/pay/${charge.id}`, label: 'Volver' },
          }),
        );
      }
      const action = body.action;
      let outcome: SettleOutcome;
      if (action === 'approve') outcome = { status: 'approved' };
      else if (action === 'reject' && charge.payment_method_type === 'banklink') outcome = { status: 'declined', remarks: 'TRANSACTION_REJECTED' };
      else return back();
      const { row } = await settlePayerCharge(deps, scopeOfCharge(charge), charge.id, outcome);
      deps.jobs.wake();
      // The bank sends the payer back to the merchant, whatever the outcome.
      const target = row.payment_method_type === 'banklink' && FINAL.includes(row.status) ? backUrl(row) : null;
      return target ? reply.redirect(target, 303) : back();
    },
  };
}
