import type { Transaction } from 'kysely';
import type { RequestContext, ServiceScope } from '../../platform/context.ts';
import { inTransaction } from '../../platform/db/database.ts';
import type { DB } from '../../platform/db/schema.ts';
import { ApiError } from '../../platform/errors/api-error.ts';
import { prefixedId } from '../../platform/ids.ts';
import { divRoundHalfUp } from '../../platform/money.ts';
import type { ResolvedLine } from '../prices/lines.ts';
import { presentCreditNote } from './present.ts';
import { CREDIT_NOTE_ID, fromStoredLine, loadInvoice, stampingsOf, toStoredLine } from './queries.ts';
import type { CreditNoteResponse } from './schemas.ts';
import { requestStamping } from './stamping-request.ts';
import { insertWithTransition } from '../../platform/state-machine.ts';
import { CREDIT_NOTE_MACHINE } from './lifecycle.ts';
import type { CreditNoteRow, InvoiceRow } from './tables.ts';
import { inTenant } from '../../platform/scope.ts';

/**
 * Credit notes (docs/invoicing.md "Credit notes"). A note takes part of what remains of a stamped
 * invoice (total minus the notes not rejected), under the invoice's row lock, so their sum never
 * exceeds the total even under concurrency (a CHECK on invoices.credited backs it). Discrepancy
 * code 2 (cancellation) when the note takes everything that remains, 1 (partial return) otherwise.
 */

/**
 * Splits `amount` (tax included) over the invoice lines in proportion to their totals: exact
 * integers by largest remainder (ties to the earlier line), so the shares add up to `amount`;
 * each share is split into base and tax at the line's rate, so base + tax = share on every line.
 */
export function splitOverLines(lines: ResolvedLine[], amount: bigint): ResolvedLine[] {
  const total = lines.reduce((sum, l) => sum + l.total, 0n);
  if (amount === total) return lines.map((l) => ({ ...l }));
  const shares = lines.map((l) => (amount * l.total) / total);
  const remainders = lines.map((l, i) => ({ i, r: (amount * l.total) % total }));
  let left = amount - shares.reduce((a, b) => a + b, 0n);
  remainders.sort((a, b) => (a.r === b.r ? a.i - b.i : a.r > b.r ? -1 : 1));
  for (const { i } of remainders) {
    if (left === 0n) break;
    shares[i] += 1n;
    left -= 1n;
  }
  return lines
    .map((l, i) => {
      const share = shares[i];
      const subtotal = divRoundHalfUp(share * 10_000n, 10_000n + BigInt(l.tax_rate_bp));
      return {
        price_id: l.price_id,
        description: l.description,
        quantity: 1,
        unit_amount: subtotal,
        subtotal,
        tax_code: l.tax_code,
        tax_rate_bp: l.tax_rate_bp,
        tax_behavior: 'exclusive' as const,
        tax_amount: share - subtotal,
        total: share,
      };
    })
    .filter((l) => l.total > 0n);
}

/** Inserts a credit note of `amount` on the locked, stamped invoice and queues its stamping. */
export async function issueCreditNoteIn(
  trx: Transaction<DB>,
  scope: ServiceScope,
  invoice: InvoiceRow,
  input: { amount: bigint; reason: string; origin: 'api' | 'refund' },
): Promise<CreditNoteRow> {
  const remaining = invoice.total - invoice.credited;
  const now = scope.deps.clock.now();
  const lines = splitOverLines(invoice.items.map(fromStoredLine), input.amount);
  const note = await insertWithTransition<CreditNoteRow>(trx, scope, CREDIT_NOTE_MACHINE, {
    table: 'credit_notes',
    action: 'create',
    values: {
      id: prefixedId('cn', now.getTime()),
      invoice_id: invoice.id,
      amount: input.amount,
      subtotal: lines.reduce((s, l) => s + l.subtotal, 0n),
      tax_amount: lines.reduce((s, l) => s + l.tax_amount, 0n),
      reason: input.reason,
      discrepancy_code: input.amount === remaining ? '2' : '1',
      items: JSON.stringify(lines.map(toStoredLine)),
      origin: input.origin,
      number: null,
      cude: null,
      created_at: now,
      updated_at: now,
    },
  });
  const updated = await trx
    .updateTable('invoices')
    .set({ credited: invoice.credited + input.amount, updated_at: now })
    .$call(inTenant(scope))
    .where('id', '=', invoice.id)
    .returningAll()
    .executeTakeFirstOrThrow();
  await requestStamping(trx, scope, { kind: 'credit_note', invoice: updated, creditNote: note }, { markPending: false });
  return note;
}

/**
 * POST /invoices/{id}/credit-notes. `amount` (integer cents) omitted is the whole invoice (SPEC.md),
 * so it is refused with credit_note_not_issuable once a note (not rejected) took part of it.
 */
export async function createCreditNote(
  ctx: RequestContext,
  invoiceId: string,
  body: { amount?: number | null; reason?: string | null },
): Promise<CreditNoteResponse> {
  return inTransaction(ctx.db, async (trx) => {
    const scope = { ...ctx, db: trx };
    const invoice = await loadInvoice(scope, invoiceId, true);
    if (invoice.fiscal_status !== 'stamped') {
      throw new ApiError('credit_note_not_issuable', {
        message: 'Only a stamped invoice can be corrected by a credit note.',
        errors: { invoice: ['not stamped'] },
      });
    }
    const remaining = invoice.total - invoice.credited;
    // SPEC.md: an omitted amount means the whole invoice; after a partial note that is more than remains.
    if (body.amount == null && invoice.credited > 0n) {
      throw new ApiError('credit_note_not_issuable', {
        message: `A credit note without amount is the whole invoice (${invoice.total} cents), but earlier notes took ${invoice.credited} cents: send amount (at most ${remaining} cents).`,
        errors: { amount: [`is required after a partial credit note: at most ${remaining} (cents remaining)`] },
      });
    }
    const amount = body.amount != null ? BigInt(body.amount) : invoice.total;
    if (remaining <= 0n || amount > remaining) {
      throw new ApiError('credit_note_not_issuable', {
        message: `The credit note exceeds what remains of the invoice (${remaining} cents).`,
        errors: { amount: [`must be at most ${remaining} (cents remaining)`] },
      });
    }
    const note = await issueCreditNoteIn(trx, scope, invoice, { amount, reason: body.reason ?? 'Anulación de factura electrónica', origin: 'api' });
    return presentCreditNote(note, [], ctx.deps.config.baseUrl, invoice.currency);
  });
}

export async function loadCreditNote(ctx: RequestContext, invoiceId: string, id: string): Promise<{ invoice: InvoiceRow; note: CreditNoteRow }> {
  const invoice = await loadInvoice(ctx, invoiceId);
  if (!CREDIT_NOTE_ID.test(id)) throw new ApiError('record_not_found');
  const note = await ctx.db
    .selectFrom('credit_notes')
    .selectAll()
    .$call(inTenant(ctx))
    .where('invoice_id', '=', invoice.id)
    .where('id', '=', id)
    .executeTakeFirst();
  if (!note) throw new ApiError('record_not_found');
  return { invoice, note };
}

export async function getCreditNote(ctx: RequestContext, invoiceId: string, id: string): Promise<CreditNoteResponse> {
  const { invoice, note } = await loadCreditNote(ctx, invoiceId, id);
  return presentCreditNote(note, await stampingsOf(ctx.db, ctx, [invoice.id]), ctx.deps.config.baseUrl, invoice.currency);
}
