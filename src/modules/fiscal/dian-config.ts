import type { FiscalEnvironment } from '../../documents/dian/model.ts';
import type { Executor } from '../../platform/db/database.ts';
import type { Keyring } from '../../platform/secrets.ts';
import type { DianCompanyConfig } from '../../rails/tax-authority/dian-authority.ts';
import { DianConfigError } from '../../rails/tax-authority/live.ts';
import { clientEndpoint, dianEndpointProblem } from './dian-settings.ts';
import { loadDianProfile } from './profile.ts';

/** The company's DIAN configuration from its fiscal profile in this environment; throws DianConfigError. */
export async function dianConfigFromProfile(
  db: Executor,
  secrets: Keyring,
  companyId: string,
  environment: FiscalEnvironment,
): Promise<DianCompanyConfig & { nit: string }> {
  const profile = await loadDianProfile(db, secrets, { companyId, environment });
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
