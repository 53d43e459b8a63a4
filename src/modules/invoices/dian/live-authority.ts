import type { Clock } from '../../../platform/clock.ts';
import type { Executor } from '../../../platform/db/database.ts';
import { clientEndpoint, dianEndpointProblem } from '../../fiscal/dian-settings.ts';
import { loadDianProfile } from '../../fiscal/profile.ts';
import type { AuthorityOutcome, FiscalEnvironment, SubmitInput, TaxAuthority } from '../ports.ts';
import { DianTaxAuthority, type DianCompanyConfig, type DianTaxAuthorityOptions } from './dian-authority.ts';

/**
 * The live tax authority: DIAN's web service configured from the company's live fiscal profile
 * (docs/dian-webservice.md "Live flow"). A profile lacking what DIAN needs (certificate, software
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

/** The company's DIAN configuration from its fiscal profile in this environment; throws DianConfigError. */
export async function dianConfigFromProfile(db: Executor, companyId: string, environment: FiscalEnvironment): Promise<DianCompanyConfig & { nit: string }> {
  const profile = await loadDianProfile(db, { companyId, environment });
  if (!profile) throw new DianConfigError(['the company has no fiscal profile in this environment']);
  const problems: string[] = [];
  if (!profile.certificate) problems.push('the fiscal profile has no signing certificate');
  if (!profile.softwareId) problems.push('the fiscal profile has no software_id');
  if (!profile.softwarePin) problems.push('the fiscal profile has no software_pin');
  const endpointProblem = dianEndpointProblem(profile.dian.endpoint);
  if (endpointProblem) problems.push(`dian.endpoint ${endpointProblem}`);
  if (profile.dian.mode === 'test_set' && !profile.dian.test_set_id) problems.push('dian.test_set_id is required in test_set mode');
  if (problems.length) throw new DianConfigError(problems);
  return {
    nit: profile.nit,
    endpoint: clientEndpoint(profile.dian.endpoint),
    certificate: profile.certificate!,
    softwareId: profile.softwareId,
    pin: profile.softwarePin,
    testSetId: profile.dian.test_set_id,
    mode: profile.dian.mode === 'test_set' ? 'test-set' : profile.dian.mode,
    timeoutMs: profile.dian.timeout_ms,
  };
}

export class LiveDianAuthority implements TaxAuthority {
  private readonly inner: DianTaxAuthority;

  constructor(db: Executor, options: Omit<DianTaxAuthorityOptions, 'resolveConfig'> & { clock: Clock }) {
    this.inner = new DianTaxAuthority({ ...options, resolveConfig: (companyId, environment) => dianConfigFromProfile(db, companyId, environment) });
  }

  async submit(input: SubmitInput): Promise<AuthorityOutcome> {
    try {
      return await this.inner.submit(input);
    } catch (err) {
      if (!(err instanceof DianConfigError)) throw err;
      return { status: 'rejected', trackId: input.built.identityCode, reason: err.message, messages: err.problems };
    }
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
