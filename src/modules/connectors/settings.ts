import { randomBytes } from 'node:crypto';
import type { Selectable } from 'kysely';
import type { Config } from '../../config.ts';
import type { Executor } from '../../platform/db/database.ts';
import { ApiError, validationError } from '../../platform/errors/api-error.ts';
import { inTenant, iso, type Tenant } from '../../platform/scope.ts';
import { openSecret, sealSecret, type Keyring } from '../../platform/secrets.ts';
import { CONNECTOR_RAILS, type ConnectorName, type ConnectorSettings, type MoneyRail } from '../../rails/index.ts';
import { keyEnvironment } from '../../rails/connectors/wompi/contract.ts';
import type { ConnectorResponse, PutConnectorBody } from './schemas.ts';
import type { ConnectorSettingsTable } from './tables.ts';
import './tables.ts';

/**
 * A company's connector settings per environment (docs/connectors.md): written by PUT
 * /v1/connectors/{name} and `recaudo connectors set`; secrets sealed at rest (deps.secrets), answered
 * only as a summary (set, last four characters), never logged.
 */

type SettingsRow = Selectable<ConnectorSettingsTable>;
type RequiredSecret = 'private_key' | 'events_secret' | 'integrity_secret';
type PayoutSecret = 'payouts_api_key' | 'payouts_user_principal_id' | 'payouts_events_secret';
type SecretField = RequiredSecret | PayoutSecret;
const REQUIRED_SECRETS: readonly RequiredSecret[] = ['private_key', 'events_secret', 'integrity_secret'];
/** The Third-Party Payments keys (the payout rail): all set together with the origin account, or none. */
const PAYOUT_SECRETS: readonly PayoutSecret[] = ['payouts_api_key', 'payouts_user_principal_id', 'payouts_events_secret'];
const SECRET_FIELDS: readonly SecretField[] = [...REQUIRED_SECRETS, ...PAYOUT_SECRETS];
const COLUMN: Record<SecretField, keyof SettingsRow & `${string}_sealed`> = {
  private_key: 'private_key_sealed',
  events_secret: 'events_secret_sealed',
  integrity_secret: 'integrity_secret_sealed',
  payouts_api_key: 'payouts_api_key_sealed',
  payouts_user_principal_id: 'payouts_principal_id_sealed',
  payouts_events_secret: 'payouts_events_secret_sealed',
};

export interface SettingsDeps {
  config: Pick<Config, 'wompiUrls' | 'wompiPayoutsUrls' | 'baseUrl'>;
  secrets: Keyring;
}

function hints(row: SettingsRow): Record<SecretField, string> {
  return JSON.parse(row.secret_hints) as Record<SecretField, string>;
}

export function toConnectorResponse(deps: SettingsDeps, row: SettingsRow): ConnectorResponse {
  const h = hints(row);
  const summary = (field: SecretField) => (row[COLUMN[field]] ? { set: true, last4: h[field] ?? null } : { set: false, last4: null });
  const base = deps.config.baseUrl.replace(/\/+$/, '');
  return {
    name: row.name as ConnectorName,
    environment: row.environment,
    provider_environment: row.provider_environment,
    public_key: row.public_key,
    private_key: summary('private_key'),
    events_secret: summary('events_secret'),
    integrity_secret: summary('integrity_secret'),
    payouts_api_key: summary('payouts_api_key'),
    payouts_user_principal_id: summary('payouts_user_principal_id'),
    payouts_events_secret: summary('payouts_events_secret'),
    payouts_account_id: row.payouts_account_id,
    rails: JSON.parse(row.rails) as string[],
    events_url: `${base}/v1/rails/${row.name}/events/${row.events_token}`,
    payouts_events_url: `${base}/v1/rails/${row.name}/payout-events/${row.events_token}`,
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
  };
}

async function findRow(db: Executor, scope: Tenant, name: ConnectorName, lock = false): Promise<SettingsRow | undefined> {
  let q = db.selectFrom('connector_settings').selectAll().$call(inTenant(scope)).where('name', '=', name);
  if (lock) q = q.forUpdate();
  return q.executeTakeFirst();
}

/** A new events URL token: `cet_` and 32 random bytes, URL-safe. */
export function newEventsToken(): string {
  return `cet_${randomBytes(24).toString('base64url')}`;
}

/** The settings whose events URL carries `token` (its tenant and secrets), or undefined. */
export async function findSettingsByEventsToken(deps: SettingsDeps, db: Executor, token: string): Promise<(ConnectorSettings & Tenant) | undefined> {
  if (!/^cet_[A-Za-z0-9_-]{16,64}$/.test(token)) return undefined;
  const row = await db.selectFrom('connector_settings').selectAll().where('events_token', '=', token).executeTakeFirst();
  return row && usable(row) ? { ...openSettings(deps, row), companyId: row.company_id, environment: row.environment } : undefined;
}

export async function getConnector(deps: SettingsDeps, db: Executor, scope: Tenant, name: ConnectorName): Promise<ConnectorResponse> {
  const row = await findRow(db, scope, name);
  if (!row) throw new ApiError('record_not_found', { message: `No ${name} connector is configured for this environment.` });
  return toConnectorResponse(deps, row);
}

/**
 * Creates or changes the settings (fields not sent keep their value; the first PUT needs every
 * key). Rules: keys of the provider environment chosen (pub_/prv_ test or prod prefixes); a live
 * environment only at the provider's production.
 */
export async function putConnector(
  deps: SettingsDeps,
  trx: Executor,
  scope: Tenant,
  name: ConnectorName,
  body: PutConnectorBody,
  now: Date,
): Promise<ConnectorResponse> {
  const existing = await findRow(trx, scope, name, true);
  const errors: Record<string, string[]> = {};
  const add = (field: string, message: string) => (errors[field] ??= []).push(message);

  const providerEnvironment =
    body.provider_environment ?? existing?.provider_environment ?? (scope.environment === 'live' ? 'production' : 'sandbox');
  if (scope.environment === 'live' && providerEnvironment !== 'production') {
    add('provider_environment', "live keys move real money: only the provider's production environment");
  }
  // Test never touches production: a test environment connects only to the provider's sandbox.
  if (scope.environment === 'test' && providerEnvironment !== 'sandbox') {
    add('provider_environment', "test keys never move real money: only the provider's sandbox environment");
  }
  const publicKey = body.public_key ?? existing?.public_key;
  if (!publicKey) add('public_key', 'is required');
  else if (!/^pub_/.test(publicKey) || keyEnvironment(publicKey) !== providerEnvironment) {
    add('public_key', `must be a ${providerEnvironment === 'production' ? 'pub_prod_' : 'pub_test_'} key of the provider environment`);
  }
  if (body.private_key !== undefined && (!/^prv_/.test(body.private_key) || keyEnvironment(body.private_key) !== providerEnvironment)) {
    add('private_key', `must be a ${providerEnvironment === 'production' ? 'prv_prod_' : 'prv_test_'} key of the provider environment`);
  }
  if (existing && body.provider_environment && body.provider_environment !== existing.provider_environment && body.private_key === undefined) {
    add('private_key', 'is required when the provider environment changes');
  }
  for (const field of REQUIRED_SECRETS) if (!existing && body[field] === undefined) add(field, 'is required');
  // Payouts: every key and the origin account, or none of them.
  const payoutsAccountId = body.payouts_account_id ?? existing?.payouts_account_id ?? null;
  const payoutParts = [
    ...PAYOUT_SECRETS.map((f) => [f, body[f] ?? existing?.[COLUMN[f]] ?? null] as const),
    ['payouts_account_id', payoutsAccountId] as const,
  ];
  const payoutsSet = payoutParts.filter(([, v]) => v !== null).length;
  if (payoutsSet > 0 && payoutsSet < payoutParts.length) {
    for (const [field, value] of payoutParts) if (value === null) add(field, 'is required with the other payouts settings');
  }
  const payoutsComplete = payoutsSet === payoutParts.length;
  const newlyPayouts = payoutsComplete && !existing?.payouts_account_id;
  const servable = CONNECTOR_RAILS[name].filter((r) => r !== 'payout' || payoutsComplete);
  let rails = (body.rails ?? (existing ? (JSON.parse(existing.rails) as MoneyRail[]) : [...servable])) as MoneyRail[];
  if (body.rails === undefined && newlyPayouts && !rails.includes('payout')) rails = [...rails, 'payout'];
  if (rails.includes('payout') && !payoutsComplete) {
    add(
      'rails',
      'payout needs the Third-Party Payments settings: payouts_api_key, payouts_user_principal_id, payouts_events_secret, payouts_account_id',
    );
  }
  if (Object.keys(errors).length) throw validationError(errors);

  const previousHints = existing ? hints(existing) : ({} as Record<SecretField, string>);
  const sealed = {} as Record<SecretField, string | null>;
  const newHints = {} as Record<SecretField, string>;
  for (const field of SECRET_FIELDS) {
    const value = body[field];
    if (value !== undefined) {
      sealed[field] = sealSecret(deps.secrets, value);
      newHints[field] = value.slice(-4);
    } else {
      sealed[field] = existing?.[COLUMN[field]] ?? null;
      if (previousHints[field] !== undefined) newHints[field] = previousHints[field];
    }
  }
  const values = {
    provider_environment: providerEnvironment,
    public_key: publicKey!,
    private_key_sealed: sealed.private_key!,
    events_secret_sealed: sealed.events_secret!,
    integrity_secret_sealed: sealed.integrity_secret!,
    payouts_api_key_sealed: sealed.payouts_api_key,
    payouts_principal_id_sealed: sealed.payouts_user_principal_id,
    payouts_events_secret_sealed: sealed.payouts_events_secret,
    payouts_account_id: payoutsAccountId,
    secret_hints: JSON.stringify(newHints),
    rails: JSON.stringify([...new Set(rails)]),
    updated_at: now,
  };
  const row = existing
    ? await trx.updateTable('connector_settings').set(values).$call(inTenant(scope)).where('name', '=', name).returningAll().executeTakeFirstOrThrow()
    : await trx
        .insertInto('connector_settings')
        .values({ company_id: scope.companyId, environment: scope.environment, name, ...values, events_token: newEventsToken(), created_at: now })
        .returningAll()
        .executeTakeFirstOrThrow();
  return toConnectorResponse(deps, row);
}

/** Removes the settings: live operations on its rails answer rail_not_configured again. */
export async function deleteConnector(db: Executor, scope: Tenant, name: ConnectorName): Promise<void> {
  const result = await db.deleteFrom('connector_settings').$call(inTenant(scope)).where('name', '=', name).executeTakeFirst();
  if (Number(result.numDeletedRows) !== 1)
    throw new ApiError('record_not_found', { message: `No ${name} connector is configured for this environment.` });
}

/** The settings with secrets opened, for the rails (null when none). */
export async function readConnectorSettings(deps: SettingsDeps, db: Executor, scope: Tenant): Promise<ConnectorSettings | null> {
  const row = await findRow(db, scope, 'wompi');
  return row && usable(row) ? openSettings(deps, row) : null;
}

/**
 * Test never touches production, also for settings saved before PUT refused it: a test
 * environment's row that points at the provider's production is never used (its rails are the
 * built-in sandbox, its events URL answers 401) until it is PUT again with sandbox keys.
 */
function usable(row: Pick<SettingsRow, 'environment' | 'provider_environment'>): boolean {
  return !(row.environment === 'test' && row.provider_environment !== 'sandbox');
}

/** Why the environment's stored settings are not used, or null (the health view says it). */
export async function unusableSettingsProblem(db: Executor, scope: Tenant): Promise<string | null> {
  const row = await findRow(db, scope, 'wompi');
  return row && !usable(row)
    ? "these settings point a test environment at the provider's production, which test keys never reach: PUT the provider's sandbox keys (provider_environment sandbox)"
    : null;
}

export function openSettings(deps: SettingsDeps, row: SettingsRow): ConnectorSettings {
  const keys = deps.secrets;
  const openRequired = (value: string) => openSecret(keys, value);
  return {
    name: row.name as ConnectorName,
    publicKey: row.public_key,
    privateKey: openRequired(row.private_key_sealed),
    eventsSecret: openRequired(row.events_secret_sealed),
    integritySecret: openRequired(row.integrity_secret_sealed),
    baseUrl: deps.config.wompiUrls[row.provider_environment],
    providerEnvironment: row.provider_environment,
    payouts:
      row.payouts_api_key_sealed && row.payouts_principal_id_sealed && row.payouts_events_secret_sealed && row.payouts_account_id
        ? {
            baseUrl: deps.config.wompiPayoutsUrls[row.provider_environment],
            apiKey: openRequired(row.payouts_api_key_sealed),
            principalId: openRequired(row.payouts_principal_id_sealed),
            eventsSecret: openRequired(row.payouts_events_secret_sealed),
            accountId: row.payouts_account_id,
          }
        : null,
    rails: JSON.parse(row.rails) as MoneyRail[],
    updatedAt: new Date(row.updated_at),
  };
}
