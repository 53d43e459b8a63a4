import type { Selectable } from 'kysely';
import type { Executor } from '../../platform/db/database.ts';
import type { Environment } from '../../platform/db/schema.ts';
import { validationError, type FieldErrors } from '../../platform/errors/api-error.ts';
import { iso, inTenant, type Tenant } from '../../platform/scope.ts';
import { openNullable, openSecret, sealNullable, sealSecret, type Keyring } from '../../platform/secrets.ts';
import { customerRuleErrors } from '../customers/validate.ts';
import type { FiscalIssuer } from '../../documents/dian/model.ts';
import { openPkcs12Isolated, summarizePkcs12, type OpenedPkcs12 } from './certificate.ts';
import type { FiscalProfileBody, FiscalProfileResponse } from './schemas.ts';
import { DEFAULT_DIAN_SETTINGS, DEFAULT_TEST_DIAN_SETTINGS, dianSettingsProblems } from './dian-settings.ts';
import type { CertificateSummary, DianSettings, FiscalProfilesTable } from './tables.ts';
import './tables.ts';

/**
 * The company fiscal profile per environment (docs/invoicing.md, "Fiscal profile"): the issuer data
 * every invoice needs. The test environment has a built-in sandbox profile until a PUT overrides
 * it; the live environment has none until set.
 */

type ProfileRow = Selectable<FiscalProfilesTable>;

/** The profile fields after merging (what is stored). */
interface ProfileValues {
  nit: string;
  dv: string;
  legal_name: string;
  trade_name: string | null;
  address_line: string;
  city_code: string;
  email: string | null;
  phone: string | null;
  responsibilities: string[];
  tax_regime: string;
  software_id: string;
  software_pin: string;
  certificate_p12: string | null;
  certificate_password: string | null;
  certificate_summary: CertificateSummary | null;
  dian: DianSettings;
}

/** The test environment's sandbox issuer (NIT 900999999, check digit 4; Bogotá). */
export const DEFAULT_TEST_PROFILE: ProfileValues = {
  nit: '900999999',
  dv: '4',
  legal_name: 'Emisor de Pruebas Recaudo SAS',
  trade_name: 'Recaudo Sandbox',
  address_line: 'Carrera 7 # 71-21',
  city_code: '11001',
  email: 'facturacion@sandbox.recaudo.co',
  phone: '+576015550100',
  responsibilities: ['O-13'],
  tax_regime: '48',
  software_id: '56f2ae4e-9812-4fad-9255-08fcfcd5ccb0',
  software_pin: '12345',
  certificate_p12: null,
  certificate_password: null,
  certificate_summary: null,
  dian: DEFAULT_TEST_DIAN_SETTINGS,
};

/** Whether stored values still carry the built-in test issuer data (the certificate aside). */
function hasDefaultData(v: ProfileValues): boolean {
  const d = DEFAULT_TEST_PROFILE;
  return (
    v.nit === d.nit &&
    v.dv === d.dv &&
    v.legal_name === d.legal_name &&
    v.trade_name === d.trade_name &&
    v.address_line === d.address_line &&
    v.city_code === d.city_code &&
    v.email === d.email &&
    v.phone === d.phone &&
    v.tax_regime === d.tax_regime &&
    v.software_id === d.software_id &&
    v.software_pin === d.software_pin &&
    v.responsibilities.join(',') === d.responsibilities.join(',')
  );
}

async function findProfile(db: Executor, scope: Tenant): Promise<ProfileRow | undefined> {
  return db.selectFrom('fiscal_profiles').selectAll().$call(inTenant(scope)).executeTakeFirst();
}

/** The stored values with the software PIN, the certificate and its password opened (sealed at rest). */
function valuesOf(secrets: Keyring, row: ProfileRow): ProfileValues {
  return {
    nit: row.nit,
    dv: row.dv,
    legal_name: row.legal_name,
    trade_name: row.trade_name,
    address_line: row.address_line,
    city_code: row.city_code,
    email: row.email,
    phone: row.phone,
    responsibilities: row.responsibilities ?? [],
    tax_regime: row.tax_regime,
    software_id: row.software_id,
    software_pin: openSecret(secrets, row.software_pin),
    certificate_p12: openNullable(secrets, row.certificate_p12),
    certificate_password: openNullable(secrets, row.certificate_password),
    certificate_summary: row.certificate_summary ?? null,
    dian: { ...(row.environment === 'test' ? DEFAULT_TEST_DIAN_SETTINGS : DEFAULT_DIAN_SETTINGS), ...(row.dian ?? {}) },
  };
}

/** The issuer of the scope's documents; null when not configured (live without a profile). */
export async function loadFiscalIssuer(
  db: Executor,
  secrets: Keyring,
  scope: { companyId: string; environment: Environment },
): Promise<FiscalIssuer | null> {
  const row = await findProfile(db, scope);
  const v = row ? valuesOf(secrets, row) : scope.environment === 'test' ? DEFAULT_TEST_PROFILE : null;
  if (!v) return null;
  return {
    nit: v.nit,
    dv: v.dv,
    legalName: v.legal_name,
    tradeName: v.trade_name,
    address: { line: v.address_line, cityCode: v.city_code, country: 'CO' },
    email: v.email,
    phone: v.phone,
    responsibilities: [...v.responsibilities],
    taxRegime: v.tax_regime,
    softwareId: v.software_id,
    softwarePin: v.software_pin,
    certificate: v.certificate_p12 ? { p12: Buffer.from(v.certificate_p12, 'base64'), password: v.certificate_password ?? '' } : null,
  };
}

function present(scope: Tenant, v: ProfileValues | null, meta: { isDefault: boolean; updatedAt: Date | null }): FiscalProfileResponse {
  return {
    configured: v !== null,
    is_default: meta.isDefault,
    is_test: scope.environment === 'test',
    nit: v?.nit ?? null,
    dv: v?.dv ?? null,
    legal_name: v?.legal_name ?? null,
    trade_name: v?.trade_name ?? null,
    address: v ? { line: v.address_line, city_code: v.city_code } : null,
    email: v?.email ?? null,
    phone: v?.phone ?? null,
    fiscal_responsibilities: v ? [...v.responsibilities] : [],
    tax_regime: v?.tax_regime ?? null,
    software_id: v?.software_id ?? null,
    software_pin_set: !!v?.software_pin,
    certificate: v?.certificate_summary ?? null,
    dian: v ? { ...v.dian } : null,
    updated_at: meta.updatedAt ? iso(meta.updatedAt) : null,
  };
}

/** GET /fiscal-profile: the stored profile; in test without one, the default; in live without one, `configured: false`. */
export async function getFiscalProfile(db: Executor, secrets: Keyring, scope: Tenant): Promise<FiscalProfileResponse> {
  const row = await findProfile(db, scope);
  if (row) {
    const values = valuesOf(secrets, row);
    return present(scope, values, { isDefault: scope.environment === 'test' && hasDefaultData(values), updatedAt: row.updated_at });
  }
  if (scope.environment === 'test') return present(scope, DEFAULT_TEST_PROFILE, { isDefault: true, updatedAt: null });
  return present(scope, null, { isDefault: false, updatedAt: null });
}

/**
 * PUT /fiscal-profile (and `recaudo fiscal-profile set`): merges the sent fields onto the current
 * profile (test: the default when none is stored), checks the whole result, stores it. 422
 * validation_error lists every problem at once (missing required fields included).
 */
export async function putFiscalProfile(
  db: Executor,
  secrets: Keyring,
  scope: Tenant,
  body: FiscalProfileBody,
  now: Date,
  /** The body's certificate, opened before a caller's transaction (openBodyCertificate); opened here otherwise. */
  opened?: OpenedPkcs12 | null,
): Promise<FiscalProfileResponse> {
  opened ??= await openBodyCertificate(body);
  const row = await findProfile(db, scope);
  const current: Partial<ProfileValues> = row ? valuesOf(secrets, row) : scope.environment === 'test' ? DEFAULT_TEST_PROFILE : {};
  const merged: Partial<ProfileValues> = { ...current };
  if (body.nit !== undefined) merged.nit = body.nit;
  if (body.dv !== undefined) merged.dv = String(body.dv);
  if (body.legal_name !== undefined) merged.legal_name = body.legal_name;
  if (body.trade_name !== undefined) merged.trade_name = body.trade_name;
  if (body.address !== undefined) Object.assign(merged, { address_line: body.address.line, city_code: body.address.city_code });
  if (body.email !== undefined) merged.email = body.email?.toLowerCase() ?? null;
  if (body.phone !== undefined) merged.phone = body.phone;
  if (body.fiscal_responsibilities !== undefined) merged.responsibilities = [...new Set(body.fiscal_responsibilities)];
  if (body.tax_regime !== undefined) merged.tax_regime = body.tax_regime;
  if (body.software_id !== undefined) merged.software_id = body.software_id;
  if (body.software_pin !== undefined) merged.software_pin = body.software_pin;
  const dian: DianSettings = { ...(current.dian ?? (scope.environment === 'test' ? DEFAULT_TEST_DIAN_SETTINGS : DEFAULT_DIAN_SETTINGS)) };
  if (body.dian?.endpoint !== undefined) dian.endpoint = body.dian.endpoint;
  if (body.dian?.mode !== undefined) dian.mode = body.dian.mode;
  if (body.dian?.test_set_id !== undefined) dian.test_set_id = body.dian.test_set_id ?? null;
  if (body.dian?.timeout_ms !== undefined) dian.timeout_ms = body.dian.timeout_ms;
  merged.dian = dian;

  const errors: FieldErrors = {};
  const add = (field: string, message: string) => (errors[field] ??= []).push(message);
  if (body.certificate === null) Object.assign(merged, { certificate_p12: null, certificate_password: null, certificate_summary: null });
  else if (body.certificate !== undefined) {
    const bytes = certificateBytes(body.certificate);
    if (body.certificate_password === undefined) add('certificate_password', 'is required with certificate');
    else if (!bytes) add('certificate', 'must be a base64 PKCS#12 file');
    else {
      if (!opened) throw new Error('certificate not opened (openBodyCertificate)');
      if ('refused' in opened) add('certificate', opened.refused);
      else
        Object.assign(merged, {
          certificate_p12: bytes.toString('base64'),
          certificate_password: body.certificate_password,
          certificate_summary: opened.summary,
        });
    }
  } else if (body.certificate_password !== undefined) add('certificate_password', 'is only accepted with certificate');

  const required: [keyof ProfileValues, string][] = [
    ['nit', 'nit'],
    ['dv', 'dv'],
    ['legal_name', 'legal_name'],
    ['address_line', 'address'],
    ['tax_regime', 'tax_regime'],
    ['software_id', 'software_id'],
    ['software_pin', 'software_pin'],
  ];
  for (const [key, field] of required) if (!merged[key]) add(field, 'is required');
  if (!merged.responsibilities?.length) add('fiscal_responsibilities', 'is required (at least one DIAN responsibility code)');
  // The same rules as customers: NIT check digit, DIVIPOLA city code, DIAN responsibility and regime codes.
  const rules = customerRuleErrors({
    type: 'company',
    document_type: 'NIT',
    document_number: merged.nit ?? null,
    document_verification: merged.dv ?? null,
    address: merged.city_code ? { city_code: merged.city_code } : null,
    fiscal_responsibilities: merged.responsibilities ?? null,
    tax_regime: merged.tax_regime ?? null,
  });
  const rename: Record<string, string> = { document_number: 'nit', document_verification: 'dv' };
  for (const [field, messages] of Object.entries(rules)) for (const m of messages) add(rename[field] ?? field, m);
  for (const [field, message] of Object.entries(dianSettingsProblems(dian))) add(field, message);
  if (Object.keys(errors).length) throw validationError(errors);

  const values = rowValues(secrets, merged as ProfileValues, now);
  const saved = await db
    .insertInto('fiscal_profiles')
    .values({ company_id: scope.companyId, environment: scope.environment, ...values, created_at: now })
    .onConflict((oc) => oc.columns(['company_id', 'environment']).doUpdateSet(values))
    .returningAll()
    .executeTakeFirstOrThrow();
  const stored = valuesOf(secrets, saved);
  return present(scope, stored, { isDefault: scope.environment === 'test' && hasDefaultData(stored), updatedAt: saved.updated_at });
}

/**
 * The certificate a profile body sends, opened in a worker thread (openPkcs12Isolated): null when
 * the body sends none, or one the merge refuses anyway (no password, not base64). Callers that hold
 * a transaction call it before opening it.
 */
export async function openBodyCertificate(body: FiscalProfileBody): Promise<OpenedPkcs12 | null> {
  if (typeof body.certificate !== 'string' || body.certificate_password === undefined || body.certificate_password === null) return null;
  const bytes = certificateBytes(body.certificate);
  return bytes ? openPkcs12Isolated(bytes, body.certificate_password) : null;
}

function certificateBytes(text: string): Buffer | null {
  const bytes = /^[A-Za-z0-9+/=\s]+$/.test(text) ? Buffer.from(text, 'base64') : null;
  return bytes && bytes.length > 0 ? bytes : null;
}

/** The stored columns of profile values (everything but the keys and created_at); the secrets sealed. */
function rowValues(secrets: Keyring, v: ProfileValues, now: Date) {
  return {
    nit: v.nit,
    dv: v.dv,
    legal_name: v.legal_name,
    trade_name: v.trade_name ?? null,
    address_line: v.address_line,
    city_code: v.city_code,
    email: v.email ?? null,
    phone: v.phone ?? null,
    responsibilities: JSON.stringify(v.responsibilities),
    tax_regime: v.tax_regime,
    software_id: v.software_id,
    software_pin: sealSecret(secrets, v.software_pin),
    certificate_p12: sealNullable(secrets, v.certificate_p12 ?? null),
    certificate_password: sealNullable(secrets, v.certificate_password ?? null),
    certificate_summary: JSON.stringify(v.certificate_summary ?? null),
    dian: JSON.stringify(v.dian),
    updated_at: now,
  };
}

/**
 * The test environment's signing certificate, generated at first use (docs/dian.md "Test
 * certificate"): when the test issuer has no certificate, `generate` makes one and it is stored in
 * the company's test profile (the built-in default is stored first if there is no row), so every
 * later document and every restart reuses it. Race-safe: the default row is inserted only if absent
 * and the certificate written only where it is still null, then the profile is read again, so two
 * concurrent first uses end with one stored certificate that both sign with. Live never generates.
 */
export async function ensureTestCertificate(
  db: Executor,
  secrets: Keyring,
  scope: Tenant,
  now: Date,
  generate: (issuer: FiscalIssuer) => { p12: Buffer; password: string },
): Promise<FiscalIssuer | null> {
  const issuer = await loadFiscalIssuer(db, secrets, scope);
  if (!issuer || issuer.certificate || scope.environment !== 'test') return issuer;
  const cert = generate(issuer);
  const summary = summarizePkcs12(cert.p12, cert.password);
  if (!summary) throw new Error('the generated test certificate does not open');
  const certificate = {
    certificate_p12: sealSecret(secrets, cert.p12.toString('base64')),
    certificate_password: sealSecret(secrets, cert.password),
    certificate_summary: JSON.stringify(summary),
  };
  await db
    .insertInto('fiscal_profiles')
    .values({
      company_id: scope.companyId,
      environment: scope.environment,
      ...rowValues(secrets, DEFAULT_TEST_PROFILE, now),
      ...certificate,
      created_at: now,
    })
    .onConflict((oc) => oc.columns(['company_id', 'environment']).doNothing())
    .execute();
  await db.updateTable('fiscal_profiles').set(certificate).$call(inTenant(scope)).where('certificate_p12', 'is', null).execute();
  return loadFiscalIssuer(db, secrets, scope);
}

/** What the DIAN web service needs from a stored profile (docs/dian-webservice.md "Configuration"). */
export interface DianProfile {
  nit: string;
  softwareId: string;
  softwarePin: string;
  certificate: { p12: Buffer; password: string } | null;
  dian: DianSettings;
}

/** The stored profile's DIAN data; null without a stored profile (the test default never talks to DIAN). */
export async function loadDianProfile(db: Executor, secrets: Keyring, scope: Tenant): Promise<DianProfile | null> {
  const row = await findProfile(db, scope);
  if (!row) return null;
  const v = valuesOf(secrets, row);
  return {
    nit: v.nit,
    softwareId: v.software_id,
    softwarePin: v.software_pin,
    certificate: v.certificate_p12 ? { p12: Buffer.from(v.certificate_p12, 'base64'), password: v.certificate_password ?? '' } : null,
    dian: v.dian,
  };
}
