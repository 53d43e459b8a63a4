import { sql, type Transaction } from 'kysely';
import type { AppDeps, RequestContext, ServiceScope } from '../../platform/context.ts';
import { inTransaction, type Executor } from '../../platform/db/database.ts';
import type { DB } from '../../platform/db/schema.ts';
import { ApiError, validationError, type FieldErrors } from '../../platform/errors/api-error.ts';
import { isUuid, prefixedId } from '../../platform/ids.ts';
import { paginate, parseListQuery } from '../../platform/lists/lists.ts';
import { parseMinor, toPesos } from '../../platform/money.ts';
import { normalizeMetadata } from '../../platform/validation.ts';
import { createPaymentIn } from '../payments/service.ts';
import { PAYMENT_MACHINE } from '../payments/lifecycle.ts';
import { applyTransition, insertWithTransition } from '../../platform/state-machine.ts';
import { INVOICE_MACHINE } from './lifecycle.ts';
import { resolveInvoiceLines, type ResolvedInvoice } from '../prices/lines.ts';
import { issueCreditNoteIn, loadCreditNote } from './credit-notes.ts';
import { presentInvoice } from './present.ts';
import { acceptedStamping, creditNotesOf, INVOICE_ID, invoiceOfPayment, loadInvoice, lockInvoice, stampingsOf, toStoredLine } from './queries.ts';
import { invoiceList, INVOICE_TEST_SCENARIOS, type CreateInvoiceBody, type InvoiceResponse } from './schemas.ts';
import { registerStampingJobs } from './stamping.ts';
import { requestStamping } from './stamping-request.ts';
import { hasFolioLeft } from '../fiscal/resolutions.ts';
import { FISCAL_STATUSES, INVOICE_STATUSES, type InvoiceRow, type InvoiceStatus, type StampPolicy } from './tables.ts';
import { inTenant, type Tenant } from '../../platform/scope.ts';
import { registerStampingMetrics } from './metrics.ts';

type CustomerRow = NonNullable<Awaited<ReturnType<typeof findCustomer>>>;

async function findCustomer(db: Executor, scope: Tenant, id: string) {
  if (!isUuid(id)) return undefined;
  return db
    .selectFrom('customers')
    .selectAll()
    .$call(inTenant(scope))
    .where('id', '=', id.toLowerCase())
    .where('deleted_at', 'is', null)
    .executeTakeFirst();
}

function customerName(c: CustomerRow): string {
  return [c.first_name, c.last_name].filter((p) => p && p.trim()).join(' ');
}

/**
 * SPEC.md "Receiver data required to invoice": every missing field at once, keyed by dotted path.
 * Always e-mail, name, document type and number, address (line and city); for NIT also the
 * verification digit and the fiscal responsibilities.
 */
export function missingReceiverData(c: CustomerRow): FieldErrors {
  const errors: FieldErrors = {};
  const need = (path: string) => (errors[`customer.${path}`] = ['required']);
  if (!c.email) need('email');
  if (!customerName(c)) need('name');
  if (!c.document_type) need('document_type');
  if (!c.document_number) need('document_number');
  if (!c.address || !c.address.line || !c.address.city_code) need('address');
  if (c.document_type === 'NIT') {
    if (!c.document_verification) need('document_verification');
    if (!c.fiscal_responsibilities || c.fiscal_responsibilities.length === 0) need('fiscal_responsibilities');
  }
  return errors;
}

async function eventData(db: Executor, scope: ServiceScope, row: InvoiceRow): Promise<Record<string, unknown>> {
  return presentInvoice(row, await stampingsOf(db, scope, [row.id]), scope.deps.config.baseUrl, await creditNotesOf(db, scope, row.id));
}

/**
 * POST /invoices (docs/invoicing.md "Invoices"). With `items`: issued by Recaudo (lines resolved
 * by the prices module, receiver data checked when a stamping policy needs it); without: imported
 * (provider, provider_id, reference, amount in pesos), collected, never stamped. Either way the
 * payment is created in the same transaction through the payments service, and invoice.created
 * is emitted; `on_issue` queues the stamping at once.
 */
export async function createInvoice(ctx: RequestContext, body: CreateInvoiceBody): Promise<InvoiceResponse> {
  const errors: FieldErrors = {};
  const add = (field: string, message: string) => (errors[field] ??= []).push(message);
  const issued = body.items != null;
  const policy: StampPolicy = body.stamp_policy ?? 'none';
  if (body.test_scenario != null) {
    if (!ctx.isTest) add('test_scenario', 'is only accepted with a test key');
    else if (!(INVOICE_TEST_SCENARIOS as readonly string[]).includes(body.test_scenario))
      add('test_scenario', `must be one of ${INVOICE_TEST_SCENARIOS.join(', ')}`);
  }
  if (body.currency != null && body.currency !== 'COP') add('currency', 'must be COP');
  const metadata = normalizeMetadata(body.metadata);
  let importedAmount: bigint | null = null;
  let customer: CustomerRow | undefined;
  if (issued) {
    if (!body.customer_id) add('customer_id', 'is required with items');
    else if (!(customer = await findCustomer(ctx.db, ctx, body.customer_id))) add('customer_id', 'no such customer in this environment');
    if (body.items!.length === 0) add('items', 'must have at least one line');
    for (const f of ['provider', 'provider_id', 'amount'] as const) if (body[f] != null) add(f, 'is only for invoices without items (imported)');
  } else {
    if (!body.provider) add('provider', 'is required without items');
    if (!body.provider_id) add('provider_id', 'is required without items');
    if (body.amount == null) add('amount', 'is required without items');
    else if ((importedAmount = parseMinor(body.amount)) === null || importedAmount <= 0n || importedAmount % 100n !== 0n)
      add('amount', 'must be a positive integer number of pesos (no decimals)');
    if (body.customer_id != null && !(customer = await findCustomer(ctx.db, ctx, body.customer_id)))
      add('customer_id', 'no such customer in this environment');
    if (policy !== 'none') add('stamp_policy', 'an imported invoice (without items) is never stamped: only none');
    if (body.test_scenario != null && !errors.test_scenario) add('test_scenario', 'only applies to invoices with items');
  }
  if (Object.keys(errors).length) throw validationError(errors);
  if (issued && policy !== 'none') {
    const missing = missingReceiverData(customer!);
    if (Object.keys(missing).length)
      throw new ApiError('customer_not_invoiceable', {
        errors: missing,
        message: `The customer lacks data required to invoice: ${Object.keys(missing).join(', ')}.`,
      });
  }
  const resolved: ResolvedInvoice = issued
    ? await resolveInvoiceLines(ctx.db, ctx, body.items!, { currency: 'COP' })
    : { currency: 'COP', lines: [], subtotal: importedAmount!, tax_amount: 0n, total: importedAmount! };

  return inTransaction(ctx.db, async (trx) => {
    const scope: ServiceScope = { ...ctx, db: trx };
    const now = ctx.deps.clock.now();
    const id = prefixedId('inv', now.getTime());
    const reference = body.reference ?? null;
    const payment = await createPaymentIn(trx, scope, {
      title: body.name && body.name.length >= 4 ? body.name : `Factura ${body.provider_id ?? id}`.slice(0, 255),
      amount: toPesos(resolved.total),
      currency: 'COP',
      // The payment's reference must be 6 to 30 characters; a longer or shorter one stays on the invoice only.
      reference: reference && reference.length >= 6 && reference.length <= 30 ? reference : null,
      external_id: id,
      metadata: metadata ?? null,
    });
    const row = await insertWithTransition<InvoiceRow>(trx, scope, INVOICE_MACHINE, {
      table: 'invoices',
      action: 'create',
      values: {
        id,
        mode: issued ? 'issued' : 'imported',
        fiscal_status: null,
        stamp_policy: policy,
        currency: resolved.currency,
        customer_id: customer?.id ?? null,
        customer: customer ? JSON.stringify({ id: customer.id, name: customerName(customer), document_number: customer.document_number }) : null,
        items: JSON.stringify(resolved.lines.map(toStoredLine)),
        subtotal: resolved.subtotal,
        tax_amount: resolved.tax_amount,
        total: resolved.total,
        name: body.name ?? null,
        reference,
        due_date: body.due_date ?? null,
        metadata: metadata ? JSON.stringify(metadata) : null,
        provider: body.provider ?? null,
        provider_id: body.provider_id ?? null,
        payment_id: payment.id,
        test_scenario: body.test_scenario ?? null,
        number: null,
        cufe: null,
        issue_date: null,
        created_at: now,
        updated_at: now,
      },
      present: (created) => ({ ...presentInvoice(created, [], ctx.deps.config.baseUrl), credit_notes: [] }),
    });
    const response = presentInvoice(row, [], ctx.deps.config.baseUrl);
    // on_issue: submitted at creation; the response still shows fiscal_status null (SPEC.md).
    if (issued && policy === 'on_issue') await requestStamping(trx, scope, { kind: 'invoice', invoice: row }, { markPending: false });
    return response;
  });
}

export async function getInvoice(ctx: RequestContext, id: string): Promise<InvoiceResponse> {
  const row = await loadInvoice(ctx, id);
  return eventData(ctx.db, ctx, row) as Promise<InvoiceResponse>;
}

/** GET /invoices: filters id, status, reference, provider_id, fiscal_status (`null` for none); sort created_at. */
export async function listInvoices(ctx: RequestContext, query: Record<string, unknown>, path: string) {
  const list = parseListQuery(invoiceList, query);
  let q = ctx.db.selectFrom('invoices').selectAll().$call(inTenant(ctx));
  const f = list.filters;
  const nothing = sql<boolean>`false`;
  if (f.id !== undefined) q = INVOICE_ID.test(f.id) ? q.where('id', '=', f.id) : q.where(nothing);
  if (f.status !== undefined) {
    const status = f.status.toUpperCase();
    q = (INVOICE_STATUSES as readonly string[]).includes(status) ? q.where('status', '=', status as InvoiceStatus) : q.where(nothing);
  }
  if (f.reference !== undefined) q = q.where('reference', '=', f.reference);
  if (f.provider_id !== undefined) q = q.where('provider_id', '=', f.provider_id);
  if (f.fiscal_status !== undefined) {
    if (f.fiscal_status === 'null' || f.fiscal_status === '') q = q.where('fiscal_status', 'is', null);
    else
      q = (FISCAL_STATUSES as readonly string[]).includes(f.fiscal_status)
        ? q.where('fiscal_status', '=', f.fiscal_status as 'pending')
        : q.where(nothing);
  }
  const page = await paginate(q, list, { path, query, table: 'invoices', map: (row) => row });
  const stampings = await stampingsOf(
    ctx.db,
    ctx,
    page.data.map((r) => r.id),
  );
  const baseUrl = ctx.deps.config.baseUrl;
  return {
    ...page,
    data: page.data.map((row) =>
      presentInvoice(
        row,
        stampings.filter((s) => s.invoice_id === row.id),
        baseUrl,
      ),
    ),
  };
}

/**
 * POST /invoices/{id}/stamp: a manual invoice (or one whose last stamping was rejected) is queued
 * for stamping. invoice_not_stampable when imported, without lines, policy none, policy on_issue
 * or on_payment before any rejection, already stamped, or a stamping in progress.
 */
export async function stampInvoice(ctx: RequestContext, id: string): Promise<InvoiceResponse> {
  return inTransaction(ctx.db, async (trx) => {
    const scope: ServiceScope = { ...ctx, db: trx };
    const row = await loadInvoice(scope, id, true);
    const refuse = (why: string) => new ApiError('invoice_not_stampable', { message: `The invoice cannot be stamped: ${why}.` });
    if (row.mode === 'imported') throw refuse('it was imported (created without items); its legal document is the one of the company system');
    if (row.items.length === 0) throw refuse('it has no lines');
    if (row.fiscal_status === 'stamped') throw refuse('it is already stamped');
    if (row.fiscal_status === 'pending') throw refuse('a stamping is in progress');
    const open = await trx
      .selectFrom('stampings')
      .select('id')
      .$call(inTenant(ctx))
      .where('invoice_id', '=', row.id)
      .where('kind', '=', 'invoice')
      .where('status', 'in', ['submitting', 'pending', 'accepted'])
      .executeTakeFirst();
    if (open) throw refuse('a stamping is in progress');
    if (row.stamp_policy === 'none') throw refuse('its stamp_policy is none');
    if (row.stamp_policy !== 'manual' && row.fiscal_status !== 'rejected') throw refuse(`its stamp_policy is ${row.stamp_policy}, not manual`);
    if (row.stamp_policy === 'manual') {
      const c = await findCustomer(trx, ctx, row.customer_id ?? '');
      const missing = c ? missingReceiverData(c) : { customer: ['required'] };
      if (Object.keys(missing).length) throw new ApiError('customer_not_invoiceable', { errors: missing });
    }
    // SPEC.md: no active resolution with folios left is resolution_not_activatable at once (nothing
    // is queued). A new attempt of a rejected stamping that already took a folio keeps that folio.
    const numbered = await trx
      .selectFrom('stampings')
      .select('id')
      .$call(inTenant(ctx))
      .where('invoice_id', '=', row.id)
      .where('kind', '=', 'invoice')
      .where('folio', 'is not', null)
      .executeTakeFirst();
    if (!numbered && !(await hasFolioLeft(trx, ctx, 'invoice', ctx.deps.clock.now()))) {
      throw new ApiError('resolution_not_activatable', {
        message:
          'No active invoice resolution with folios left (valid today): activate one (POST /v1/fiscal-resolutions/{id}/activate), then stamp again. Nothing was queued.',
      });
    }
    await requestStamping(trx, scope, { kind: 'invoice', invoice: row }, { markPending: true });
    return eventData(trx, scope, (await lockInvoice(trx, scope, row.id))!) as Promise<InvoiceResponse>;
  });
}

/** GET /invoices/{id}/xml|pdf and the same under /credit-notes/{id}: the accepted document, byte for byte. */
export async function getDocument(
  ctx: RequestContext,
  invoiceId: string,
  creditNoteId: string | null,
  kind: 'xml' | 'pdf',
): Promise<string | Buffer> {
  let target: { invoiceId: string; creditNoteId: string | null };
  if (creditNoteId) {
    const { invoice, note } = await loadCreditNote(ctx, invoiceId, creditNoteId);
    target = { invoiceId: invoice.id, creditNoteId: note.id };
  } else {
    target = { invoiceId: (await loadInvoice(ctx, invoiceId)).id, creditNoteId: null };
  }
  const s = await acceptedStamping(ctx.db, ctx, target);
  if (!s || !s.xml) throw new ApiError('record_not_found', { message: 'No accepted document exists yet for this record.' });
  return kind === 'xml' ? s.xml : Buffer.from(s.pdf ?? '', 'base64');
}

/**
 * The invoice follows its payment (hook in the payment transition, same transaction):
 * approved or paid externally → PAID (invoice.paid; on_payment queues the stamping);
 * cancelled or expired → CANCELED (invoice.canceled); refunded → REFUNDED, and a stamped invoice
 * gets a credit note for what remains.
 */
async function followPayment(trx: Transaction<DB>, scope: ServiceScope, payment: { id: string }, to: string): Promise<void> {
  const row = await invoiceOfPayment(trx, scope, payment.id);
  if (!row) return;
  const s: ServiceScope = { ...scope, db: trx };
  const now = scope.deps.clock.now();
  const move = async (action: 'pay' | 'cancel' | 'refund') =>
    (await applyTransition(trx, s, INVOICE_MACHINE, { table: 'invoices', row, action, now, present: (r) => eventData(trx, s, r) })).row;
  if ((to === 'approved' || to === 'paid_externally') && row.status === 'CREATED') {
    const updated = await move('pay');
    if (updated.mode === 'issued' && updated.stamp_policy === 'on_payment' && updated.fiscal_status === null) {
      await requestStamping(trx, s, { kind: 'invoice', invoice: updated }, { markPending: true });
    }
  } else if ((to === 'cancelled' || to === 'expired') && row.status === 'CREATED') {
    await move('cancel');
  } else if (to === 'refunded' && row.status !== 'REFUNDED') {
    const updated = await move('refund');
    if (updated.fiscal_status === 'stamped' && updated.credited < updated.total) {
      await issueCreditNoteIn(trx, s, updated, { amount: updated.total - updated.credited, reason: 'Devolución del pago', origin: 'refund' });
    }
  }
}

export function registerInvoiceJobs(deps: AppDeps): void {
  registerStampingJobs(deps);
  registerStampingMetrics(deps);
  // Invoices follow their payment in the payment's own transaction (paid, cancelled, refunded).
  deps.transitions.on(PAYMENT_MACHINE, (trx, scope, payment, t) => followPayment(trx, scope, payment, t.to));
}
