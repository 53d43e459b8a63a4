import { randomBytes } from 'node:crypto';
import type { Transaction } from 'kysely';
import type { AppDeps, ServiceScope } from '../../platform/context.ts';
import { inTransaction, type Executor } from '../../platform/db/database.ts';
import type { DB, Environment } from '../../platform/db/schema.ts';
import { EmailError } from '../../rails/index.ts';
import { ensureTestCertificate, loadFiscalIssuer } from '../fiscal/profile.ts';
import { makeAttachedDocument } from '../../documents/dian/attached-document.ts';
import { CertificateError, generateTestCertificate } from '../../documents/dian/certificate.ts';
import { DocumentBuildError } from '../../documents/dian/ubl.ts';
import { SignatureError } from '../../documents/dian/xades.ts';
import { dianAmount } from '../../documents/dian/cufe.ts';
import { allocateFolio } from '../fiscal/resolutions.ts';
import { issueCreditNoteIn } from './credit-notes.ts';
import { EMAIL_JOB, POLL_MS, STAMP_JOB } from './stamping-request.ts';
import type { BuiltDocument, FiscalDocument, FiscalIssuer, FiscalReceiver } from '../../documents/dian/model.ts';
import type { AuthorityOutcome, SubmitInput } from '../../rails/tax-authority/port.ts';
import { documentUrls, presentCreditNote } from './present.ts';
import { fromStoredLine, loadStamping, lockInvoice, stampingsOf } from './queries.ts';
import type { CreditNoteRow, InvoiceRow, StampingRow } from './tables.ts';
import { inTenant } from '../../platform/scope.ts';
import { applyTransition, TransitionNotAllowed } from '../../platform/state-machine.ts';
import { jobOrigin, runOutsideCall } from '../../platform/outside-call.ts';

/** DIAN answers within its own timeouts and polls (up to 120 s per profile); the protocol's deadline never cuts it sooner. */
const DIAN_CALL_BUDGET_MS = 300_000;
import { CREDIT_NOTE_MACHINE, FISCAL_MACHINE, STAMPING_MACHINE } from './lifecycle.ts';

/**
 * The stamping lifecycle (docs/invoicing.md "Stamping"), as durable jobs. One `stampings` row per
 * attempt; the job continues it from wherever it stopped:
 *   1. allocate the folio, in the transaction that records it on the attempt (a retry finds the
 *      folio there and never takes a second one; a new attempt after a rejection reuses it);
 *   2. build the document and the PDF, outside any transaction, and store them once;
 *   3. submit to the tax authority (outside any transaction); `submitted_at` is recorded first, so
 *      a job that dies after submitting asks `status` instead of submitting again;
 *   4. while the authority answers pending, poll again later (a new job);
 *   5. settle in one transaction: the attempt, the invoice or credit note, the event, the e-mail.
 * A unique index allows one attempt in flight or accepted per document: never two accepted ones.
 */

/** Bogotá local date and time, as DIAN writes them (Colombia has no daylight saving time). */
export function bogota(at: Date): { date: string; time: string } {
  const t = new Date(at.getTime() - 5 * 3_600_000).toISOString();
  return { date: t.slice(0, 10), time: `${t.slice(11, 19)}-05:00` };
}

async function creditNoteOf(db: Executor, scope: ServiceScope, id: string): Promise<CreditNoteRow> {
  return db.selectFrom('credit_notes').selectAll().$call(inTenant(scope)).where('id', '=', id).executeTakeFirstOrThrow();
}

async function receiverOf(db: Executor, scope: ServiceScope, customerId: string | null): Promise<FiscalReceiver> {
  const c = customerId
    ? await db.selectFrom('customers').selectAll().$call(inTenant(scope)).where('id', '=', customerId).executeTakeFirst()
    : undefined;
  if (!c) throw new Error(`stamping: customer ${customerId} not found`);
  return {
    kind: c.type === 'company' ? 'company' : 'natural',
    documentType: c.document_type ?? 'CC',
    documentNumber: c.document_number ?? '',
    dv: c.document_verification,
    name: [c.first_name, c.last_name].filter(Boolean).join(' '),
    email: c.email,
    phone: c.phone,
    address: c.address ? { line: c.address.line ?? '', cityCode: c.address.city_code ?? '', country: 'CO' } : null,
    responsibilities: c.fiscal_responsibilities ?? [],
    taxRegime: c.tax_regime,
  };
}

/** The resolved fiscal document of an attempt whose folio is allocated (rebuilt identically on every run). */
export async function fiscalDocumentOf(
  db: Executor,
  scope: ServiceScope,
  s: StampingRow,
  issuer: FiscalIssuer,
): Promise<{ document: FiscalDocument; invoice: InvoiceRow; creditNote: CreditNoteRow | null }> {
  const invoice = await db.selectFrom('invoices').selectAll().$call(inTenant(scope)).where('id', '=', s.invoice_id).executeTakeFirstOrThrow();
  const creditNote = s.credit_note_id ? await creditNoteOf(db, scope, s.credit_note_id) : null;
  const source = creditNote ?? invoice;
  const lines = source.items.map(fromStoredLine);
  const paid = invoice.status === 'PAID' || invoice.status === 'REFUNDED';
  const document: FiscalDocument = {
    kind: s.kind,
    environment: scope.environment,
    number: s.number!,
    prefix: s.prefix!,
    folio: Number(s.folio),
    issueDate: s.issue_date!,
    issueTime: s.issue_time!,
    dueDate: creditNote ? null : invoice.due_date,
    currency: invoice.currency,
    note: creditNote ? creditNote.reason : invoice.name,
    issuer,
    receiver: await receiverOf(db, scope, invoice.customer_id),
    resolution: s.resolution!,
    lines: lines.map((l) => ({
      description: l.description,
      quantity: l.quantity,
      unitAmount: l.unit_amount,
      subtotal: l.subtotal,
      taxCode: l.tax_code,
      taxRateBp: l.tax_rate_bp,
      taxAmount: l.tax_amount,
      total: l.total,
      taxBehavior: l.tax_behavior,
    })),
    totals: creditNote
      ? { subtotal: creditNote.subtotal, taxAmount: creditNote.tax_amount, total: creditNote.amount }
      : { subtotal: invoice.subtotal, taxAmount: invoice.tax_amount, total: invoice.total },
    paymentMeansCode: paid ? '10' : 'ZZZ',
    paymentMethod: paid || !invoice.due_date ? '1' : '2',
    reference: creditNote
      ? {
          number: invoice.number!,
          cufe: invoice.cufe!,
          issueDate: invoice.issue_date!,
          discrepancyCode: creditNote.discrepancy_code,
          reason: creditNote.reason,
        }
      : null,
  };
  return { document, invoice, creditNote };
}

function jobScope(deps: AppDeps, payload: Record<string, unknown>): ServiceScope {
  return { companyId: String(payload.company_id), environment: payload.environment === 'live' ? 'live' : 'test', db: deps.database.db, deps };
}

/** Steps 1 to 4 of one attempt (see the top of this file). */
export async function runStamping(deps: AppDeps, payload: Record<string, unknown>): Promise<void> {
  const scope = jobScope(deps, payload);
  const db = deps.database.db;
  const id = String(payload.stamping_id);
  const issuer = await stampingIssuer(deps, scope);

  // 1. The folio, recorded on the attempt in the allocation's transaction.
  let s = await inTransaction(db, async (trx) => {
    const first = await loadStamping(trx, scope, id);
    if (!first) return null;
    await lockInvoice(trx, scope, first.invoice_id);
    const row = (await loadStamping(trx, scope, id, true))!;
    if (row.status === 'accepted' || row.status === 'rejected') return null;
    if (!issuer) {
      // Before any folio is taken (or, if the profile went away meanwhile, keeping the folio for the retry).
      await settleIn(trx, scope, row, {
        status: 'rejected',
        trackId: '',
        reason: 'fiscal_profile_missing: the company has no fiscal profile in this environment',
        messages: [],
      });
      return null;
    }
    if (!issuer.certificate) {
      // Live never generates a certificate: the company uploads its own (PUT /fiscal-profile).
      await settleIn(trx, scope, row, {
        status: 'rejected',
        trackId: '',
        reason: 'certificate_missing: the fiscal profile of this environment has no signing certificate (PUT /fiscal-profile with certificate)',
        messages: [],
      });
      return null;
    }
    if (row.folio !== null) return row;
    const now = deps.clock.now();
    // A new attempt of a document that was rejected keeps that attempt's number (no gap in the range).
    let previous = trx
      .selectFrom('stampings')
      .selectAll()
      .$call(inTenant(scope))
      .where('invoice_id', '=', row.invoice_id)
      .where('status', '=', 'rejected')
      .where('folio', 'is not', null)
      .where('id', '!=', row.id);
    previous = row.credit_note_id ? previous.where('credit_note_id', '=', row.credit_note_id) : previous.where('kind', '=', 'invoice');
    const reused = await previous.orderBy('created_at', 'desc').executeTakeFirst();
    const folio = reused
      ? { resolutionId: reused.resolution_id!, folio: Number(reused.folio), number: reused.number!, resolution: reused.resolution! }
      : await allocateFolio(trx, scope, row.kind, now);
    if (!folio) {
      await settleIn(trx, scope, row, {
        status: 'rejected',
        trackId: '',
        reason: 'resolution_not_activatable',
        messages: ['No active resolution with folios left for this document type.'],
      });
      return null;
    }
    const { date, time } = bogota(now);
    const updated = await trx
      .updateTable('stampings')
      .set({
        resolution_id: folio.resolutionId,
        resolution: JSON.stringify(folio.resolution),
        prefix: folio.resolution.prefix,
        folio: folio.folio,
        number: folio.number,
        issue_date: date,
        issue_time: time,
        updated_at: now,
      })
      .$call(inTenant(scope))
      .where('id', '=', row.id)
      .returningAll()
      .executeTakeFirstOrThrow();
    if (row.kind === 'invoice') {
      const invoice = (await lockInvoice(trx, scope, row.invoice_id))!;
      if (invoice.fiscal_status !== 'pending') {
        await applyTransition(trx, { ...scope, db: trx }, FISCAL_MACHINE, {
          table: 'invoices',
          column: 'fiscal_status',
          row: invoice,
          action: 'request',
          now,
        });
      }
    }
    return updated;
  });
  if (!s || !issuer) return;

  // 2. The document, built once and stored.
  const ports = { builder: deps.documents, authority: deps.rails.taxAuthority[scope.environment] };
  const { document, invoice } = await fiscalDocumentOf(db, scope, s, issuer);
  if (s.xml === null) {
    let built: BuiltDocument;
    let pdf: Buffer;
    try {
      built = await ports.builder.build(document);
      pdf = await ports.builder.renderPdf(document, built);
    } catch (error) {
      // A document that cannot be built or signed will not build on a retry either: settle it rejected (the folio is kept for a new attempt).
      if (!(error instanceof DocumentBuildError || error instanceof SignatureError || error instanceof CertificateError)) throw error;
      const reason = `document_build_failed: ${error.message}`;
      await inTransaction(db, async (trx) => {
        await lockInvoice(trx, scope, s!.invoice_id);
        const row = (await loadStamping(trx, scope, id, true))!;
        await settleIn(trx, { ...scope, db: trx }, row, { status: 'rejected', trackId: '', reason, messages: [reason] });
      });
      return;
    }
    const stored = await db
      .updateTable('stampings')
      .set({ xml: built.xml, identity_code: built.identityCode, qr_text: built.qrText, pdf: pdf.toString('base64'), updated_at: deps.clock.now() })
      .$call(inTenant(scope))
      .where('id', '=', s.id)
      .where('xml', 'is', null)
      .returningAll()
      .executeTakeFirst();
    s = stored ?? (await loadStamping(db, scope, s.id))!;
  }
  const built: BuiltDocument = { xml: s.xml!, identityCode: s.identity_code!, qrText: s.qr_text! };
  const input: SubmitInput = { companyId: scope.companyId, environment: scope.environment, document, built, testScenario: invoice.test_scenario };

  // 3-5. Submit once, afterwards only ask; settle. The platform's outside-call protocol, from a job:
  // `submitted_at` is the record (a job that dies after submitting asks `status`, never submits
  // again), the job itself is the reconciler (the queue runs it again after a failure).
  const stamping = s;
  await runOutsideCall(jobOrigin(deps), {
    rail: 'tax_authority',
    record: async (trx) => {
      const marked = await trx
        .updateTable('stampings')
        .set({ submitted_at: deps.clock.now() })
        .$call(inTenant(scope))
        .where('id', '=', stamping.id)
        .where('submitted_at', 'is', null)
        .returningAll()
        .executeTakeFirst();
      return { recorded: { submitted: !marked }, resourceId: stamping.id, safetyJobId: null };
    },
    call: async ({ submitted }) => {
      const outcome: AuthorityOutcome = stamping.track_id
        ? await ports.authority.status({ ...input, trackId: stamping.track_id })
        : submitted
          ? await ports.authority.status({ ...input, trackId: stamping.identity_code! })
          : await ports.authority.submit(input);
      // The AttachedDocument of an accepted document is made here, outside the settle transaction.
      const attached = outcome.status === 'accepted' ? attachedDocumentOf(deps, document, built, outcome.applicationResponse, stamping.id) : null;
      return { outcome, attached };
    },
    settle: async (trx, _recorded, { outcome, attached }) => {
      const now = deps.clock.now();
      if (outcome.status === 'pending' || outcome.status === 'unknown') {
        // Not known yet: ask again later.
        const current = (await loadStamping(trx, scope, id, true))!;
        if (STAMPING_MACHINE.find(current.status, 'wait')) {
          const trackId = outcome.trackId;
          await applyTransition(trx, { ...scope, db: trx }, STAMPING_MACHINE, {
            table: 'stampings',
            row: current,
            action: 'wait',
            now,
            set: () => ({ track_id: trackId }),
          });
        }
        await deps.jobs.enqueue(trx, STAMP_JOB, payload, new Date(now.getTime() + POLL_MS));
        return;
      }
      await lockInvoice(trx, scope, stamping.invoice_id);
      const row = (await loadStamping(trx, scope, id, true))!;
      await settleIn(trx, { ...scope, db: trx }, row, outcome, attached);
    },
    // No answer: the job fails and the queue runs it again, which asks `status`.
    unknown: (_recorded, error) => {
      throw error;
    },
    lost: (_recorded, error) => error as Error,
    deadlineMs: Math.max(deps.config.railCallTimeoutMs, DIAN_CALL_BUDGET_MS),
  });
}

/**
 * The issuer the stamping signs as: the fiscal profile, with the test environment's certificate
 * generated and stored at first use (docs/dian.md "Stamping with the legal document"). Live never
 * generates one.
 */
export async function stampingIssuer(deps: AppDeps, scope: { companyId: string; environment: Environment }): Promise<FiscalIssuer | null> {
  // Concurrent first uses in one process share one generation (RSA + PKCS#12 cost about a second
  // under load); across processes the conditional write in ensureTestCertificate keeps one.
  const key = `${scope.companyId}:${scope.environment}`;
  let generating = generatingBy.get(deps);
  if (!generating) generatingBy.set(deps, (generating = new Map()));
  const running = generating.get(key);
  if (running) return running;
  const issuer = await loadFiscalIssuer(deps.database.db, deps.secrets, scope);
  if (!issuer || issuer.certificate || scope.environment !== 'test') return issuer;
  const again = generating.get(key);
  if (again) return again;
  const promise = generateAndStore(deps, scope).finally(() => generating.delete(key));
  generating.set(key, promise);
  return promise;
}

const generatingBy = new WeakMap<AppDeps, Map<string, Promise<FiscalIssuer | null>>>();

function generateAndStore(deps: AppDeps, scope: { companyId: string; environment: Environment }): Promise<FiscalIssuer | null> {
  const now = deps.clock.now();
  return ensureTestCertificate(deps.database.db, deps.secrets, scope, now, (issuer) =>
    generateTestCertificate({
      nit: issuer.nit,
      legalName: issuer.legalName,
      password: randomBytes(24).toString('base64url'),
      // Valid from a year back for ten years: covers documents issued around now on any clock.
      validFrom: new Date(now.getTime() - 366 * 86_400_000),
      years: 10,
    }),
  );
}

/** The signed AttachedDocument for the customer; null without an ApplicationResponse or when it cannot be made (logged). */
function attachedDocumentOf(
  deps: AppDeps,
  document: FiscalDocument,
  built: BuiltDocument,
  applicationResponse: string | null,
  stampingId: string,
): { applicationResponse: string; attachedDocument: string | null } | null {
  if (!applicationResponse) return null;
  try {
    return { applicationResponse, attachedDocument: makeAttachedDocument({ document, built, applicationResponse, at: deps.clock.now() }) };
  } catch (error) {
    deps.logger.warn({ stamping: stampingId, err: (error as Error).message }, 'AttachedDocument not made');
    return { applicationResponse, attachedDocument: null };
  }
}

/**
 * Settles an attempt in the caller's transaction (the invoice row locked): the attempt, the invoice
 * or credit note, the SPEC.md event and, on acceptance, the e-mail to the customer. Once only.
 */
async function settleIn(
  trx: Transaction<DB>,
  scope: ServiceScope,
  row: StampingRow,
  outcome: Exclude<AuthorityOutcome, { status: 'pending' } | { status: 'unknown' }>,
  attached: { applicationResponse: string; attachedDocument: string | null } | null = null,
): Promise<void> {
  const now = scope.deps.clock.now();
  const accepted = outcome.status === 'accepted';
  let s: StampingRow;
  try {
    ({ row: s } = await applyTransition(trx, scope, STAMPING_MACHINE, {
      table: 'stampings',
      row,
      action: accepted ? 'accept' : 'reject',
      now,
      set: () => ({
        rejection_reason: outcome.status === 'rejected' ? outcome.reason : null,
        messages: JSON.stringify(outcome.messages),
        ...(outcome.trackId ? { track_id: outcome.trackId } : {}),
        ...(attached ? { application_response: attached.applicationResponse, attached_document: attached.attachedDocument } : {}),
        settled_at: now,
      }),
    }));
  } catch (error) {
    if (error instanceof TransitionNotAllowed) return; // settled already: once only
    throw error;
  }
  const es = { ...scope, db: trx };
  const baseUrl = scope.deps.config.baseUrl;
  const invoice = (await lockInvoice(trx, scope, s.invoice_id))!;
  const rejection = { invoice_id: invoice.id, stamping: { status: 'rejected', number: s.number, rejection_reason: s.rejection_reason } };
  if (s.kind === 'invoice') {
    if (accepted) {
      await applyTransition(trx, es, FISCAL_MACHINE, {
        table: 'invoices',
        column: 'fiscal_status',
        row: invoice,
        action: 'stamp',
        now,
        set: () => ({ number: s.number, cufe: s.identity_code, issue_date: s.issue_date }),
        present: () => ({
          invoice_id: invoice.id,
          stamping: {
            type: 'invoice',
            status: 'accepted',
            number: s.number,
            cufe: s.identity_code,
            ...documentUrls(baseUrl, s),
            total: Number(s.total),
          },
        }),
      });
      await scope.deps.jobs.enqueue(trx, EMAIL_JOB, { company_id: scope.companyId, environment: scope.environment, stamping_id: s.id });
      // The payment was refunded while the invoice was being stamped: correct it now.
      if (invoice.status === 'REFUNDED' && invoice.credited < invoice.total) {
        const fresh = (await lockInvoice(trx, scope, invoice.id))!;
        await issueCreditNoteIn(trx, es, fresh, { amount: fresh.total - fresh.credited, reason: 'Devolución del pago', origin: 'refund' });
      }
    } else {
      await applyTransition(trx, es, FISCAL_MACHINE, {
        table: 'invoices',
        column: 'fiscal_status',
        row: invoice,
        action: 'reject',
        now,
        present: () => rejection,
      });
    }
    return;
  }
  const current = (await trx
    .selectFrom('credit_notes')
    .selectAll()
    .$call(inTenant(scope))
    .where('id', '=', s.credit_note_id!)
    .forUpdate()
    .executeTakeFirst())!;
  if (accepted) {
    await applyTransition(trx, es, CREDIT_NOTE_MACHINE, {
      table: 'credit_notes',
      row: current,
      action: 'issue',
      now,
      set: () => ({ number: s.number, cude: s.identity_code }),
      present: async (note) => presentCreditNote(note, await stampingsOf(trx, scope, [invoice.id]), baseUrl, invoice.currency),
    });
    await scope.deps.jobs.enqueue(trx, EMAIL_JOB, { company_id: scope.companyId, environment: scope.environment, stamping_id: s.id });
  } else {
    // A rejected note corrects nothing: its amount may be credited again.
    await trx
      .updateTable('invoices')
      .set({ credited: invoice.credited - current.amount, updated_at: now })
      .$call(inTenant(scope))
      .where('id', '=', invoice.id)
      .execute();
    await applyTransition(trx, es, CREDIT_NOTE_MACHINE, { table: 'credit_notes', row: current, action: 'reject', now, present: () => rejection });
  }
}

/**
 * The e-mail of an accepted document to the customer: the AttachedDocument (the signed document and
 * the authority's ApplicationResponse, signed by the issuer) and the PDF. Without an
 * ApplicationResponse (an authority that answered without one) the signed document goes instead.
 */
export async function sendStampedEmail(deps: AppDeps, payload: Record<string, unknown>): Promise<void> {
  const scope = jobScope(deps, payload);
  const db = deps.database.db;
  const s = await loadStamping(db, scope, String(payload.stamping_id));
  if (!s || s.status !== 'accepted' || !s.xml) return;
  const invoice = await db.selectFrom('invoices').selectAll().$call(inTenant(scope)).where('id', '=', s.invoice_id).executeTakeFirstOrThrow();
  const customer = invoice.customer_id
    ? await db
        .selectFrom('customers')
        .select(['email', 'first_name', 'last_name'])
        .$call(inTenant(scope))
        .where('id', '=', invoice.customer_id)
        .executeTakeFirst()
    : undefined;
  if (!customer?.email) return;
  const issuer = await loadFiscalIssuer(db, deps.secrets, scope);
  const what = s.kind === 'invoice' ? 'Factura electrónica' : 'Nota crédito electrónica';
  try {
    await deps.rails.contact(scope).email.send({
      to: customer.email,
      subject: `${what} ${s.number}${issuer ? ` de ${issuer.legalName}` : ''}`,
      text: `${what} ${s.number}.\n${s.kind === 'invoice' ? 'CUFE' : 'CUDE'}: ${s.identity_code}\nTotal: ${invoice.currency} ${dianAmount(s.total)}\n\nAdjuntamos ${s.attached_document ? 'el documento electrónico con su validación de la DIAN (AttachedDocument, XML)' : 'el documento electrónico (XML)'} y su representación gráfica (PDF).`,
      fromName: issuer?.legalName,
      reference: s.id,
      attachments: [
        s.attached_document
          ? { filename: `ad-${s.number}.xml`, content: s.attached_document, contentType: 'application/xml' }
          : { filename: `${s.number}.xml`, content: s.xml, contentType: 'application/xml' },
        { filename: `${s.number}.pdf`, content: Buffer.from(s.pdf ?? '', 'base64'), contentType: 'application/pdf' },
      ],
    });
  } catch (error) {
    // A message the server will never accept is dropped (logged); anything else is retried by the queue.
    if (error instanceof EmailError && !error.retryable && !error.outcomeUnknown) {
      deps.logger.warn({ stamping: s.id, err: error.message }, 'stamped document e-mail refused');
      return;
    }
    throw error;
  }
}

export function registerStampingJobs(deps: AppDeps): void {
  deps.jobs.register(STAMP_JOB, (payload) => runStamping(deps, payload));
  deps.jobs.register(EMAIL_JOB, (payload) => sendStampedEmail(deps, payload));
}
