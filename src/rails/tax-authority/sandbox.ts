import type { Clock } from '../../platform/clock.ts';
import { makeApplicationResponse } from '../../documents/dian/attached-document.ts';
import { RULES, verifyDianDocument, type DianRuleFailure } from '../../documents/dian/verify.ts';
import type { ImportedRange } from './import-ranges.ts';
import type { AuthorityOutcome, NumberingRangesAnswer, NumberingRangesQuery, SubmitInput, TaxAuthority } from './port.ts';

/**
 * The sandbox tax authority (docs/invoicing.md "Sandbox tax authority"): validates the real signed
 * document the way DIAN does (`verifyDianDocument`: structure, XAdES signature, CUFE/CUDE,
 * SoftwareSecurityCode, totals, check digits, numbering range) and answers like DIAN,
 * asynchronously: `submit` answers `pending`, `status` answers the outcome once `delayMs` has passed
 * since the submission. An accepted outcome carries a DIAN-shaped ApplicationResponse signed by the
 * sandbox authority's key. It keeps nothing: the track id carries the identity code and the
 * submission time, and the outcome is re-derived from the input each time, so it survives a restart
 * and answers the same thing every time.
 */
/**
 * DIAN's habilitación numbering (reference/dian.md): the range every test-set document uses, and
 * the one range the sandbox authority holds for any company.
 */
export const HABILITACION_RANGE: ImportedRange = {
  number: '18760000001',
  prefix: 'SETP',
  from: 990_000_000,
  to: 995_000_000,
  validFrom: '2019-01-19',
  validUntil: '2030-01-19',
  technicalKey: 'fc8eac422eba16e22ffd8c6f94b3f40a6e38162c',
};

export class SandboxTaxAuthority implements TaxAuthority {
  constructor(private readonly opts: { clock: Clock; delayMs: number }) {}

  async numberingRanges(query: NumberingRangesQuery): Promise<NumberingRangesAnswer> {
    const accountCode = query.accountCode ?? 'sandbox';
    const params = { accountCode, accountCodeT: query.accountCodeT ?? accountCode, softwareCode: query.softwareCode ?? 'sandbox' };
    return { endpoint: 'sandbox', params, ranges: [{ ...HABILITACION_RANGE }] };
  }

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
    const failures = sandboxRejections(input);
    if (failures.length) {
      const messages = failures.map((f) => f.message);
      return { status: 'rejected', trackId, reason: messages.join('; '), messages };
    }
    const applicationResponse = makeApplicationResponse({
      document: input.document,
      identityCode: input.built.identityCode,
      outcome: 'accepted',
      messages: [],
      at: this.opts.clock.now(),
    });
    return { status: 'accepted', trackId, applicationResponse, messages: ['Procesado Correctamente.'] };
  }
}

function rule(code: string, text: string): DianRuleFailure {
  return { code, message: `Regla: ${code}, Rechazo: ${text}` };
}

/**
 * Every DIAN-style rule the submission breaks (empty: valid). The document rules live in
 * `verifyDianDocument` (one place); here only what the verifier cannot know from the XML alone: the
 * identity code submitted is the document's, the issue date within the resolution's validity, and
 * the test scenario.
 */
export function sandboxRejections(input: SubmitInput): DianRuleFailure[] {
  const d = input.document;
  const credit = d.kind === 'credit_note';
  const verification = verifyDianDocument(input.built.xml, {
    key: (credit ? d.issuer.softwarePin : d.resolution.technicalKey) ?? '',
    environment: input.environment,
    resolution: { prefix: d.resolution.prefix, from: d.resolution.from, to: d.resolution.to },
    softwarePin: d.issuer.softwarePin,
  });
  const out = [...verification.failures];
  if (verification.identityCode !== null && verification.identityCode !== input.built.identityCode && !out.some((f) => f.code.endsWith('AD06'))) {
    const code = RULES.identityCode.code.replace(/^F/, credit ? 'C' : 'F');
    out.push(rule(code, `${RULES.identityCode.message} (el ${credit ? 'CUDE' : 'CUFE'} enviado no es el del documento)`));
  }
  if (!credit && (d.issueDate < d.resolution.validFrom || d.issueDate > d.resolution.validUntil)) {
    out.push(rule('FAD09e', 'La fecha de emisión está fuera de la vigencia de la resolución.'));
  }
  if (input.testScenario === 'stamp_rejected') {
    out.push(rule('FAJ43b', 'Nombre informado no corresponde al registrado en el RUT con respecto al Nit suministrado.'));
  }
  return out;
}
