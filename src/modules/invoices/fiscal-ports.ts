import type { AppDeps } from '../../platform/context.ts';
import { DianDocumentBuilder } from './dian/builder.ts';
import { renderFiscalPdf } from './dian/pdf.ts';
import type { AuthorityOutcome, DocumentBuilder, FiscalEnvironment, SubmitInput, TaxAuthority } from './ports.ts';
import { SandboxTaxAuthority } from './sandbox-authority.ts';

/** What stamping uses in one environment. */
export interface FiscalPorts {
  builder: DocumentBuilder;
  authority: TaxAuthority;
}

/**
 * The live authority until the DIAN client exists (issue 7): a live document is never "accepted"
 * by a simulation; every submission is rejected with a clear reason (the folio is kept for the retry).
 */
export class UnconfiguredTaxAuthority implements TaxAuthority {
  private outcome(input: SubmitInput): AuthorityOutcome {
    const reason = 'tax_authority_not_configured: the DIAN web service client is not configured for the live environment';
    return { status: 'rejected', trackId: input.built.identityCode, reason, messages: [reason] };
  }
  async submit(input: SubmitInput): Promise<AuthorityOutcome> {
    return this.outcome(input);
  }
  async status(input: SubmitInput & { trackId: string }): Promise<AuthorityOutcome> {
    return this.outcome(input);
  }
}

/**
 * THE one place the document builder and the tax authority are chosen (docs/invoicing.md).
 * Both environments build the legal document: UBL 2.1 + DIAN extensions, XAdES-EPES signature
 * with the issuer's PKCS#12, and the Spanish PDF (dian/). The test environment always uses the
 * sandbox authority, which verifies the real document (schema shape, signature, CUFE/CUDE, totals).
 */
export function createFiscalPorts(deps: AppDeps): Record<FiscalEnvironment, FiscalPorts> {
  const builder = new DianDocumentBuilder({ renderPdf: renderFiscalPdf });
  const sandbox = new SandboxTaxAuthority({ clock: deps.clock, delayMs: deps.config.sandboxStampDelayMs });
  return {
    test: { builder, authority: sandbox },
    live: { builder, authority: new UnconfiguredTaxAuthority() },
  };
}

const byDeps = new WeakMap<AppDeps, Record<FiscalEnvironment, FiscalPorts>>();

export function fiscalPorts(deps: AppDeps, environment: FiscalEnvironment): FiscalPorts {
  let ports = byDeps.get(deps);
  if (!ports) byDeps.set(deps, (ports = createFiscalPorts(deps)));
  return ports[environment];
}

/** Tests: replace the ports of one process (a spy authority, a failing builder). */
export function setFiscalPorts(deps: AppDeps, ports: Record<FiscalEnvironment, FiscalPorts>): void {
  byDeps.set(deps, ports);
}
