import { toPesos } from '../../platform/money.ts';
import { iso } from '../../platform/scope.ts';
import { presentLine } from '../prices/lines.ts';
import { fromStoredLine } from './queries.ts';
import type { CreditNoteResponse, InvoiceResponse, StampingResponse } from './schemas.ts';
import type { CreditNoteRow, InvoiceRow, StampingRow } from './tables.ts';

/** Rows → API objects (docs/invoicing.md "Invoices"). Lines, totals and credit notes in cents; the invoice `amount` in pesos. */

export function documentUrls(baseUrl: string, s: Pick<StampingRow, 'invoice_id' | 'credit_note_id'>): { xml_url: string; pdf_url: string } {
  const base = s.credit_note_id
    ? `${baseUrl}/v1/invoices/${s.invoice_id}/credit-notes/${s.credit_note_id}`
    : `${baseUrl}/v1/invoices/${s.invoice_id}`;
  return { xml_url: `${base}/xml`, pdf_url: `${base}/pdf` };
}

/** A settled stamping as SPEC.md's "Stamping record". Attempts in flight are not records yet. */
export function presentStamping(s: StampingRow, baseUrl: string): StampingResponse {
  const out: StampingResponse = {
    type: s.kind,
    status: s.status === 'accepted' ? 'accepted' : 'rejected',
    number: s.number,
    total: Number(s.total),
    created_at: iso(s.settled_at ?? s.created_at),
  };
  if (s.status === 'accepted') Object.assign(out, { cufe: s.identity_code ?? '' }, documentUrls(baseUrl, s));
  else out.rejection_reason = s.rejection_reason ?? '';
  if (s.credit_note_id) out.credit_note_id = s.credit_note_id;
  return out;
}

const settled = (s: StampingRow) => s.status === 'accepted' || s.status === 'rejected';

export function presentCreditNote(row: CreditNoteRow, stampings: StampingRow[], baseUrl: string, currency: string): CreditNoteResponse {
  const own = stampings.filter((s) => s.credit_note_id === row.id && settled(s));
  const urls = row.status === 'issued' ? documentUrls(baseUrl, { invoice_id: row.invoice_id, credit_note_id: row.id }) : null;
  return {
    id: row.id,
    invoice_id: row.invoice_id,
    status: row.status,
    amount: Number(row.amount),
    reason: row.reason,
    discrepancy_code: row.discrepancy_code,
    origin: row.origin,
    currency,
    items: row.items.map((l) => presentLine(fromStoredLine(l))),
    totals: { subtotal: Number(row.subtotal), tax_amount: Number(row.tax_amount), total: Number(row.amount) },
    number: row.number,
    cude: row.cude,
    xml_url: urls?.xml_url ?? null,
    pdf_url: urls?.pdf_url ?? null,
    stampings: own.map((s) => presentStamping(s, baseUrl)),
    is_test: row.environment === 'test',
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
  };
}

/**
 * The Invoice object. `stampings`: the settled stampings of the invoice and of its credit notes,
 * oldest first. `creditNotes` given → the detail shape (GET /invoices/{id}).
 */
export function presentInvoice(row: InvoiceRow, stampings: StampingRow[], baseUrl: string, creditNotes?: CreditNoteRow[]): InvoiceResponse {
  const out: InvoiceResponse = {
    id: row.id,
    status: row.status,
    fiscal_status: row.fiscal_status,
    stamp_policy: row.stamp_policy,
    currency: row.currency,
    customer: row.customer ?? null,
    items: row.items.map((l) => presentLine(fromStoredLine(l))),
    totals: { subtotal: Number(row.subtotal), tax_amount: Number(row.tax_amount), total: Number(row.total) },
    amount: toPesos(row.total),
    payment_id: row.payment_id,
    stampings: stampings.filter(settled).map((s) => presentStamping(s, baseUrl)),
    name: row.name,
    reference: row.reference,
    due_date: row.due_date,
    metadata: row.metadata ?? {},
    provider: row.provider,
    provider_id: row.provider_id,
    number: row.number,
    cufe: row.cufe,
    credited_amount: Number(row.credited),
    test_scenario: row.test_scenario,
    is_test: row.environment === 'test',
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
  };
  if (creditNotes) out.credit_notes = creditNotes.map((cn) => presentCreditNote(cn, stampings, baseUrl, row.currency));
  return out;
}
