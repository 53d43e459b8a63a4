import type { AppDeps } from '../../platform/context.ts';
import { DianDocumentBuilder } from './dian/builder.ts';
import { LiveDianAuthority } from './dian/live-authority.ts';
import { renderFiscalPdf } from './dian/pdf.ts';
import type { DocumentBuilder, FiscalEnvironment, TaxAuthority } from './ports.ts';
import { SandboxTaxAuthority } from './sandbox-authority.ts';

/** What stamping uses in one environment. */
export interface FiscalPorts {
  builder: DocumentBuilder;
  authority: TaxAuthority;
}

/**
 * THE one place the document builder and the tax authority are chosen (docs/invoicing.md).
 * Both environments build the legal document: UBL 2.1 + DIAN extensions, XAdES-EPES signature
 * with the issuer's PKCS#12, and the Spanish PDF (dian/). The test environment always uses the
 * sandbox authority, which verifies the real document (signature, CUFE/CUDE, totals, ranges); the
 * live one is DIAN's web service configured from the company's live fiscal profile
 * (docs/dian-webservice.md).
 */
export function createFiscalPorts(deps: AppDeps): Record<FiscalEnvironment, FiscalPorts> {
  const builder = new DianDocumentBuilder({ renderPdf: renderFiscalPdf });
  const sandbox = new SandboxTaxAuthority({ clock: deps.clock, delayMs: deps.config.sandboxStampDelayMs });
  return {
    test: { builder, authority: sandbox },
    live: { builder, authority: new LiveDianAuthority(deps.database.db, { clock: deps.clock }) },
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
