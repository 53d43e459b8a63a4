import type { Clock } from '../../platform/clock.ts';
import type { DianCompanyConfig } from './dian-authority.ts';
import { LiveDianAuthority, noDianConfig } from './live.ts';
import type { TaxAuthority } from './port.ts';
import { SandboxTaxAuthority } from './sandbox.ts';

export type { AuthorityOutcome, NumberingRangesAnswer, NumberingRangesQuery, SubmitInput, TaxAuthority } from './port.ts';
export { HABILITACION_RANGE } from './sandbox.ts';
export { NumberingRangeError, type ImportedRange } from './import-ranges.ts';
export { DianCallError } from './soap-client.ts';
export { DianConfigError } from './live.ts';
export type { DianCompanyConfig } from './dian-authority.ts';

/** Reads a company's DIAN configuration (its fiscal profile); throws DianConfigError when unusable. */
export type DianConfigResolver = (companyId: string, environment: 'test' | 'live') => Promise<DianCompanyConfig>;

/**
 * The tax authority of each environment (docs/invoicing.md): test keys always get the sandbox
 * authority, which verifies the real signed document (signature, CUFE/CUDE, totals, ranges); live
 * keys get DIAN's web service configured from the company's live fiscal profile
 * (docs/dian-webservice.md).
 */
export function createTaxAuthorities(opts: {
  clock: Clock;
  sandboxDelayMs: number;
  dianConfig?: DianConfigResolver;
}): Record<'test' | 'live', TaxAuthority> {
  return {
    test: new SandboxTaxAuthority({ clock: opts.clock, delayMs: opts.sandboxDelayMs }),
    live: new LiveDianAuthority({ clock: opts.clock, resolveConfig: opts.dianConfig ?? noDianConfig }),
  };
}
