import type { Clock } from '../../platform/clock.ts';
import { nitCheckDigit } from '../customers/validate.ts';
import { documentIdentityCode } from './dian/cufe.ts';
import type { AuthorityOutcome, FiscalDocument, SubmitInput, TaxAuthority } from './ports.ts';

/**
 * The sandbox tax authority (docs/invoicing.md "Sandbox tax authority"): runs the checks DIAN runs
 * on what it receives and answers like DIAN, asynchronously: `submit` answers `pending`, `status`
 * answers the outcome once `delayMs` has passed since the submission. It keeps nothing: the track
 * id carries the identity code and the submission time, and the outcome is re-derived from the
 * input each time, so it survives a restart and answers the same thing every time.
 */
export class SandboxTaxAuthority implements TaxAuthority {
  constructor(private readonly opts: { clock: Clock; delayMs: number }) {}

  async submit(input: SubmitInput): Promise<AuthorityOutcome> {
    const trackId = `${input.built.identityCode}.${this.opts.clock.now().getTime()}`;
    if (this.opts.delayMs <= 0) return this.outcome(input, trackId);
    return { status: 'pending', trackId };
  }

  async status(input: SubmitInput & { trackId: string }): Promise<AuthorityOutcome> {
    const at = Number(input.trackId.split('.')[1]);
    // A track id without a time (the identity code alone, after a submission whose answer was lost) is settled at once.
    if (Number.isFinite(at) && this.opts.clock.now().getTime() < at + this.opts.delayMs) return { status: 'pending', trackId: input.trackId };
    return this.outcome(input, input.trackId);
  }

  private outcome(input: SubmitInput, trackId: string): AuthorityOutcome {
    const messages = sandboxRejections(input);
    if (messages.length) return { status: 'rejected', trackId, reason: messages.join('; '), messages };
    return { status: 'accepted', trackId, applicationResponse: null, messages: ['Procesado Correctamente.'] };
  }
}

function rule(code: string, text: string): string {
  return `Regla: ${code}, Rechazo: ${text}`;
}

/** Every DIAN-style rule the document breaks (empty: valid). */
export function sandboxRejections(input: SubmitInput): string[] {
  const d: FiscalDocument = input.document;
  const out: string[] = [];
  const credit = d.kind === 'credit_note';
  if (input.built.identityCode !== documentIdentityCode(d)) {
    out.push(rule(credit ? 'CAD06' : 'FAD06', `El valor del ${credit ? 'CUDE' : 'CUFE'} no está calculado correctamente.`));
  }
  if (!input.built.xml.includes(input.built.identityCode)) out.push(rule(credit ? 'CAD05' : 'FAD05', `El documento no contiene el ${credit ? 'CUDE' : 'CUFE'}.`));
  let lines = 0n;
  let taxes = 0n;
  let lineTotalsOk = true;
  for (const line of d.lines) {
    lines += line.subtotal;
    taxes += line.taxAmount;
    if (line.subtotal + line.taxAmount !== line.total || line.subtotal < 0n || line.taxAmount < 0n) lineTotalsOk = false;
  }
  if (lines !== d.totals.subtotal || !lineTotalsOk) out.push(rule('FAU02', 'El valor bruto no corresponde a la suma de los valores de las líneas.'));
  if (taxes !== d.totals.taxAmount) out.push(rule('FAU04', 'El valor de los tributos no corresponde a la suma de los tributos de las líneas.'));
  if (d.totals.subtotal + d.totals.taxAmount !== d.totals.total) out.push(rule('FAU14', 'El valor a pagar no corresponde al valor bruto más tributos.'));
  if (!/^\d+$/.test(d.issuer.nit) || String(nitCheckDigit(d.issuer.nit)) !== d.issuer.dv) {
    out.push(rule('FAJ24', 'El DV del NIT del emisor no es correcto.'));
  }
  if (d.receiver.documentType === 'NIT' && (!/^\d+$/.test(d.receiver.documentNumber) || String(nitCheckDigit(d.receiver.documentNumber)) !== d.receiver.dv)) {
    out.push(rule('FAK24', 'El DV del NIT del adquiriente no es correcto.'));
  }
  if (d.folio < d.resolution.from || d.folio > d.resolution.to || d.number !== `${d.resolution.prefix}${d.folio}` || d.prefix !== d.resolution.prefix) {
    out.push(rule(credit ? 'CAD05e' : 'FAD05e', 'El número del documento no está contenido en el rango de numeración autorizado.'));
  }
  if (d.kind === 'invoice' && (d.issueDate < d.resolution.validFrom || d.issueDate > d.resolution.validUntil)) {
    out.push(rule('FAD09e', 'La fecha de emisión está fuera de la vigencia de la resolución.'));
  }
  if (input.testScenario === 'stamp_rejected') {
    out.push(rule('FAJ43b', 'Nombre informado no corresponde al registrado en el RUT con respecto al Nit suministrado.'));
  }
  return out;
}
