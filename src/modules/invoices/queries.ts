import type { Executor } from '../../platform/db/database.ts';
import { ApiError } from '../../platform/errors/api-error.ts';
import { inTenant, loadInScope, type Tenant } from '../../platform/scope.ts';
import type { ResolvedLine } from '../prices/lines.ts';
import type { CreditNoteRow, InvoiceRow, StampingRow, StoredLine } from './tables.ts';
import './tables.ts';

/** SQL only: loading and locking invoices, credit notes and stampings. */

export const INVOICE_ID = /^inv_[0-9a-z]{26}$/;
export const CREDIT_NOTE_ID = /^cn_[0-9a-z]{26}$/;

export function toStoredLine(l: ResolvedLine): StoredLine {
  return { ...l, unit_amount: String(l.unit_amount), subtotal: String(l.subtotal), tax_amount: String(l.tax_amount), total: String(l.total) };
}
export function fromStoredLine(l: StoredLine): ResolvedLine {
  return { ...l, unit_amount: BigInt(l.unit_amount), subtotal: BigInt(l.subtotal), tax_amount: BigInt(l.tax_amount), total: BigInt(l.total) };
}

/** An invoice of the caller's company with SPEC.md's 404 rules; `lock` takes the row lock. */
export async function loadInvoice(scope: Tenant & { db: Executor }, id: string, lock = false): Promise<InvoiceRow> {
  if (!INVOICE_ID.test(id)) throw new ApiError('record_not_found');
  return loadInScope(scope, (scoped) => {
    const q = scope.db.selectFrom('invoices').selectAll().$call(scoped).where('id', '=', id);
    return (lock ? q.forUpdate() : q).executeTakeFirst();
  });
}

export async function lockInvoice(db: Executor, scope: Tenant, id: string): Promise<InvoiceRow | undefined> {
  return db.selectFrom('invoices').selectAll().$call(inTenant(scope)).where('id', '=', id).forUpdate().executeTakeFirst();
}

export async function invoiceOfPayment(db: Executor, scope: Tenant, paymentId: string): Promise<InvoiceRow | undefined> {
  return db.selectFrom('invoices').selectAll().$call(inTenant(scope)).where('payment_id', '=', paymentId).forUpdate().executeTakeFirst();
}

export async function stampingsOf(db: Executor, scope: Tenant, invoiceIds: string[]): Promise<StampingRow[]> {
  if (invoiceIds.length === 0) return [];
  return db
    .selectFrom('stampings')
    .selectAll()
    .$call(inTenant(scope))
    .where('invoice_id', 'in', invoiceIds)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
}

export async function creditNotesOf(db: Executor, scope: Tenant, invoiceId: string): Promise<CreditNoteRow[]> {
  return db
    .selectFrom('credit_notes')
    .selectAll()
    .$call(inTenant(scope))
    .where('invoice_id', '=', invoiceId)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
}

export async function loadStamping(db: Executor, scope: Tenant, id: string, lock = false): Promise<StampingRow | undefined> {
  let q = db.selectFrom('stampings').selectAll().$call(inTenant(scope)).where('id', '=', id);
  if (lock) q = q.forUpdate();
  return q.executeTakeFirst();
}

/** The accepted stamping of an invoice (kind invoice) or of a credit note. */
export async function acceptedStamping(
  db: Executor,
  scope: Tenant,
  target: { invoiceId: string; creditNoteId: string | null },
): Promise<StampingRow | undefined> {
  let q = db.selectFrom('stampings').selectAll().$call(inTenant(scope)).where('invoice_id', '=', target.invoiceId).where('status', '=', 'accepted');
  q = target.creditNoteId ? q.where('credit_note_id', '=', target.creditNoteId) : q.where('kind', '=', 'invoice');
  return q.executeTakeFirst();
}
