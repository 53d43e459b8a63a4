import type { Clock } from '../../platform/clock.ts';
import type { FiscalEnvironment } from '../../documents/dian/model.ts';
import type { AuthorityOutcome, NumberingRangesAnswer, NumberingRangesQuery, SubmitInput, TaxAuthority } from './port.ts';
import { DianTaxAuthority, type DianCompanyConfig, type DianTaxAuthorityOptions } from './dian-authority.ts';

/**
 * The live tax authority: DIAN's web service configured from the company's live fiscal profile
 * (docs/dian-webservice.md "Live flow"), through the configuration resolver the runtime gives it. A profile lacking what DIAN needs (certificate, software
 * id, PIN, an acceptable endpoint, the test set id in test_set mode) never crashes the job:
 *   - submit → `rejected` with reason `dian_not_configured: ...` (nothing was sent; the folio is
 *     kept for the retry after the profile is fixed);
 *   - status (a submission already went out) → `unknown`, so the job keeps asking once the
 *     profile is usable again and never resubmits blindly.
 */

export class DianConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`dian_not_configured: ${problems.join('; ')}`);
    this.name = 'DianConfigError';
  }
}

export class LiveDianAuthority implements TaxAuthority {
  private readonly inner: DianTaxAuthority;

  /** `resolveConfig` reads the company's fiscal profile (the fiscal module's dianConfigFromProfile); it throws DianConfigError. */
  constructor(options: DianTaxAuthorityOptions & { clock: Clock }) {
    this.inner = new DianTaxAuthority(options);
  }

  async submit(input: SubmitInput): Promise<AuthorityOutcome> {
    try {
      return await this.inner.submit(input);
    } catch (err) {
      if (!(err instanceof DianConfigError)) throw err;
      return { status: 'rejected', trackId: input.built.identityCode, reason: err.message, messages: err.problems };
    }
  }

  /** Throws DianConfigError when the profile cannot call DIAN (the operator command says why). */
  numberingRanges(query: NumberingRangesQuery): Promise<NumberingRangesAnswer> {
    return this.inner.numberingRanges(query);
  }

  async status(input: SubmitInput & { trackId: string }): Promise<AuthorityOutcome> {
    try {
      return await this.inner.status(input);
    } catch (err) {
      if (!(err instanceof DianConfigError)) throw err;
      return { status: 'unknown', trackId: input.trackId, reason: err.message };
    }
  }
}

/** DianCompanyConfig resolver for a process that has no fiscal profiles to read (rails tests). */
export function noDianConfig(_companyId: string, _environment: FiscalEnvironment): Promise<DianCompanyConfig> {
  return Promise.reject(new DianConfigError(['no fiscal profile source is configured']));
}
