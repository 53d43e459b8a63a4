import { StateMachine } from '../../platform/state-machine.ts';
import type { CreditNoteStatus, FiscalStatus, InvoiceStatus, StampingStatus } from './tables.ts';

/**
 * The invoicing state machines (docs/invoicing.md), applied by the platform's engine
 * (src/platform/state-machine.ts): the invoice's commercial status follows its payment, its fiscal
 * status follows its stamping attempts, and each attempt and credit note settles once.
 */

/** `status`: the invoice follows its payment (invoices listen to the payment machine). */
export const INVOICE_MACHINE = new StateMachine<InvoiceStatus, 'create' | 'pay' | 'cancel' | 'refund'>('invoice', [
  { from: null, action: 'create', to: 'CREATED', events: ['invoice.created'] },
  { from: ['CREATED'], action: 'pay', to: 'PAID', events: ['invoice.paid'] },
  { from: ['CREATED'], action: 'cancel', to: 'CANCELED', events: ['invoice.canceled'] },
  // A stamped invoice gets a credit note for what remains (service.ts); no event of its own.
  { from: ['CREATED', 'PAID', 'CANCELED'], action: 'refund', to: 'REFUNDED', events: [] },
]);

/** `fiscal_status` (empty until a stamping is asked for). */
export const FISCAL_MACHINE = new StateMachine<FiscalStatus, 'request' | 'stamp' | 'reject'>('invoice_fiscal', [
  { from: [null, 'rejected'], action: 'request', to: 'pending', events: [] },
  { from: ['pending'], action: 'stamp', to: 'stamped', events: ['invoice.stamped'] },
  // Empty: refused before a folio was taken (no activatable resolution) on an on_issue stamping.
  { from: [null, 'pending'], action: 'reject', to: 'rejected', events: ['invoice.stamp_rejected'] },
]);

export const CREDIT_NOTE_MACHINE = new StateMachine<CreditNoteStatus, 'create' | 'issue' | 'reject'>('credit_note', [
  { from: null, action: 'create', to: 'pending', events: [] },
  { from: ['pending'], action: 'issue', to: 'issued', events: ['invoice.credit_note_issued'] },
  { from: ['pending'], action: 'reject', to: 'rejected', events: ['invoice.stamp_rejected'] },
]);

/** One stamping attempt: submitted (or about to be), then pending at the authority, then settled once. */
export const STAMPING_MACHINE = new StateMachine<StampingStatus, 'create' | 'wait' | 'accept' | 'reject'>('stamping', [
  { from: null, action: 'create', to: 'submitting', events: [] },
  { from: ['submitting', 'pending'], action: 'wait', to: 'pending', events: [] },
  { from: ['submitting', 'pending'], action: 'accept', to: 'accepted', events: [] },
  { from: ['submitting', 'pending'], action: 'reject', to: 'rejected', events: [] },
]);
