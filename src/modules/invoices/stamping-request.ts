import type { Transaction } from 'kysely';
import type { ServiceScope } from '../../platform/context.ts';
import type { DB } from '../../platform/db/schema.ts';
import { prefixedId } from '../../platform/ids.ts';
import { applyTransition, insertWithTransition } from '../../platform/state-machine.ts';
import { FISCAL_MACHINE, STAMPING_MACHINE } from './lifecycle.ts';
import type { CreditNoteRow, InvoiceRow, StampingRow } from './tables.ts';

/**
 * Asking for a document to be stamped: the attempt row and its job, recorded inside the caller's
 * transaction. The job itself (build, submit, settle) is stamping.ts.
 */

export const STAMP_JOB = 'invoices.stamp';
export const EMAIL_JOB = 'invoices.email';
/** How long the job waits before asking the authority again about a pending submission. */
export const POLL_MS = 1_000;

export type StampTarget = { kind: 'invoice'; invoice: InvoiceRow } | { kind: 'credit_note'; invoice: InvoiceRow; creditNote: CreditNoteRow };

/** Records a new stamping attempt and queues its job, inside the caller's transaction (the invoice row locked). */
export async function requestStamping(
  trx: Transaction<DB>,
  scope: ServiceScope,
  target: StampTarget,
  opts: { markPending: boolean },
): Promise<StampingRow> {
  const now = scope.deps.clock.now();
  const row = await insertWithTransition<StampingRow>(trx, scope, STAMPING_MACHINE, {
    table: 'stampings',
    action: 'create',
    values: {
      id: prefixedId('stp', now.getTime()),
      invoice_id: target.invoice.id,
      credit_note_id: target.kind === 'credit_note' ? target.creditNote.id : null,
      kind: target.kind,
      resolution_id: null,
      resolution: null,
      prefix: null,
      folio: null,
      number: null,
      issue_date: null,
      issue_time: null,
      identity_code: null,
      qr_text: null,
      xml: null,
      pdf: null,
      track_id: null,
      submitted_at: null,
      rejection_reason: null,
      messages: null,
      total: target.kind === 'credit_note' ? target.creditNote.amount : target.invoice.total,
      created_at: now,
      updated_at: now,
      settled_at: null,
    },
  });
  if (opts.markPending && target.kind === 'invoice' && target.invoice.fiscal_status !== 'pending') {
    await applyTransition(trx, scope, FISCAL_MACHINE, { table: 'invoices', column: 'fiscal_status', row: target.invoice, action: 'request', now });
  }
  await scope.deps.jobs.enqueue(trx, STAMP_JOB, { company_id: scope.companyId, environment: scope.environment, stamping_id: row.id });
  scope.notifyWorkers?.();
  return row;
}
