import type { Executor } from '../../platform/db/database.ts';
import { inTransaction } from '../../platform/db/database.ts';
import type { Environment } from '../../platform/db/schema.ts';
import { issueKey } from '../../platform/auth/api-keys.ts';
import { prefixedId } from '../../platform/ids.ts';
import { inTenant } from '../../platform/scope.ts';
import './tables.ts';

/** Operator actions on companies and keys, shared by the CLI and the running server's control socket. */
export interface CreateCompanyInput {
  name: string;
  nit?: string;
  features?: string[];
}

export interface CreatedCompany {
  company: { id: string; name: string; nit: string | null; features: string[]; created_at: string };
  keys: { test: string; live: string };
  publishable_keys: { test: string; live: string };
}

export class OperatorInputError extends Error {}

export function validateCompanyInput(input: CreateCompanyInput): void {
  if (!input.name || input.name.trim().length === 0 || input.name.length > 255) {
    throw new OperatorInputError('--name is required (1 to 255 characters)');
  }
  if (input.nit !== undefined && !/^\d{5,15}(-\d)?$/.test(input.nit)) {
    throw new OperatorInputError('--nit must be digits (optionally followed by -check digit)');
  }
  for (const f of input.features ?? []) {
    if (!/^[a-z][a-z0-9_-]{1,49}$/.test(f)) throw new OperatorInputError(`invalid feature name "${f}"`);
  }
}

export async function createCompany(db: Executor, input: CreateCompanyInput, now: Date): Promise<CreatedCompany> {
  validateCompanyInput(input);
  return inTransaction(db, async (trx) => {
    const id = prefixedId('cmp', now.getTime());
    const features = [...new Set(input.features ?? [])];
    await trx
      .insertInto('companies')
      .values({ id, name: input.name.trim(), nit: input.nit ?? null, features: JSON.stringify(features), created_at: now })
      .execute();
    const keys = { test: '', live: '' };
    const publishable = { test: '', live: '' };
    for (const env of ['test', 'live'] as const) {
      keys[env] = (await issueKey(trx, id, env, 'secret', now)).key;
      publishable[env] = (await issueKey(trx, id, env, 'publishable', now)).key;
    }
    return {
      company: { id, name: input.name.trim(), nit: input.nit ?? null, features, created_at: now.toISOString() },
      keys,
      publishable_keys: publishable,
    };
  });
}

/**
 * A company onboarded by a platform (docs/companies.md): the row, linked to its platform, with
 * test keys only (live keys are issued once it is active: issueLiveKeys). Runs in the caller's
 * transaction.
 */
export async function createSubCompany(
  db: Executor,
  input: { name: string; nit: string; parentCompanyId: string },
  now: Date,
): Promise<{ id: string; keys: { secret: string; publishable: string } }> {
  return inTransaction(db, async (trx) => {
    const id = prefixedId('cmp', now.getTime());
    await trx
      .insertInto('companies')
      .values({
        id,
        name: input.name.trim(),
        nit: input.nit,
        features: JSON.stringify([]),
        parent_company_id: input.parentCompanyId,
        created_at: now,
      })
      .execute();
    const secret = (await issueKey(trx, id, 'test', 'secret', now)).key;
    const publishable = (await issueKey(trx, id, 'test', 'publishable', now)).key;
    return { id, keys: { secret, publishable } };
  });
}

/** The live secret and publishable keys of a company, issued now (replacing any). */
export async function issueLiveKeys(db: Executor, companyId: string, now: Date): Promise<{ secret: string; publishable: string }> {
  return inTransaction(db, async (trx) => ({
    secret: (await issueKey(trx, companyId, 'live', 'secret', now)).key,
    publishable: (await issueKey(trx, companyId, 'live', 'publishable', now)).key,
  }));
}

export async function rotateKey(
  db: Executor,
  companyId: string,
  environment: Environment,
  now: Date,
  kind: 'secret' | 'publishable' = 'secret',
): Promise<{ company: { id: string }; environment: Environment; kind: string; key: string }> {
  if (environment !== 'test' && environment !== 'live') throw new OperatorInputError('--env must be test or live');
  return inTransaction(db, async (trx) => {
    // Locked: concurrent rotations of this company's keys run one after the other (issueKey).
    const company = await trx.selectFrom('companies').select('id').where('id', '=', companyId).forUpdate().executeTakeFirst();
    if (!company) throw new OperatorInputError(`company ${companyId} does not exist`);
    const { key } = await issueKey(trx, companyId, environment, kind, now);
    return { company: { id: companyId }, environment, kind, key };
  });
}

/**
 * `recaudo keys create --company ID --env test|live [--name N]`: one more secret key, its own
 * principal (maker-checker, audit), beside the main key and any other; the main key's rotation
 * leaves it alone. Shown once, stored hashed.
 */
export async function createNamedKey(
  db: Executor,
  input: { company?: string; env?: string; name?: string },
  now: Date,
): Promise<{ key: string; id: string; name: string; environment: Environment; company: { id: string } }> {
  if (!input.company) throw new OperatorInputError('--company is required');
  if (input.env !== 'test' && input.env !== 'live') throw new OperatorInputError('--env must be test or live');
  const environment = input.env;
  const name = (input.name ?? '').trim();
  if (name.length > 80) throw new OperatorInputError('--name is at most 80 characters');
  return inTransaction(db, async (trx) => {
    const company = await trx.selectFrom('companies').select('id').where('id', '=', input.company!).forUpdate().executeTakeFirst();
    if (!company) throw new OperatorInputError(`company ${input.company} does not exist`);
    const named = await trx
      .selectFrom('api_keys')
      .select('id')
      .$call(inTenant({ companyId: company.id, environment }))
      .where('name', 'is not', null)
      .execute();
    const finalName = name || `Clave ${named.length + 2}`;
    const { id, key } = await issueKey(trx, company.id, environment, 'secret', now, finalName);
    return { key, id, name: finalName, environment, company: { id: company.id } };
  });
}

/** `recaudo keys revoke --company ID --key KEY_ID`: that key stops working (within the resolver's few seconds). */
export async function revokeKeyById(db: Executor, input: { company?: string; key?: string }, now: Date): Promise<{ id: string; revoked_at: string }> {
  if (!input.company) throw new OperatorInputError('--company is required');
  if (!input.key) throw new OperatorInputError('--key is required (the key id, key_…, as `recaudo keys list` shows it)');
  const row = await db
    .updateTable('api_keys')
    .set({ revoked_at: now })
    .where('company_id', '=', input.company)
    .where('id', '=', input.key)
    .where('revoked_at', 'is', null)
    .returning(['id'])
    .executeTakeFirst();
  if (!row) throw new OperatorInputError(`no active key ${input.key} in company ${input.company}`);
  return { id: row.id, revoked_at: now.toISOString() };
}

/**
 * `recaudo companies set`: operator settings of a company. `approvalThreshold`: pesos above which a
 * cash-out waits for approval (docs/cashouts.md); 'none' removes it.
 */
export async function setCompany(
  db: Executor,
  input: { company?: string; approvalThreshold?: string; platform?: string },
): Promise<{ company: { id: string; name: string; cashout_approval_threshold: number | null; platform: boolean } }> {
  if (!input.company) throw new OperatorInputError('--company is required');
  const values: { cashout_approval_threshold?: bigint | null; platform?: boolean } = {};
  if (input.platform !== undefined) {
    // A platform's keys may onboard companies of their own (POST /v1/companies, docs/companies.md).
    if (input.platform !== 'true' && input.platform !== 'false') throw new OperatorInputError('--platform must be true or false');
    values.platform = input.platform === 'true';
  }
  if (input.approvalThreshold !== undefined) {
    if (input.approvalThreshold === 'none') values.cashout_approval_threshold = null;
    else {
      // Exact: pesos and centavos as digits, never through a float.
      const m = /^(\d{1,13})(?:\.(\d{1,2}))?$/.exec(input.approvalThreshold);
      const minor = m ? BigInt(m[1]) * 100n + BigInt((m[2] ?? '').padEnd(2, '0')) : 0n;
      if (minor <= 0n) throw new OperatorInputError('--approval-threshold must be an amount in pesos (more than 0) or none');
      values.cashout_approval_threshold = minor;
    }
  }
  if (Object.keys(values).length === 0) throw new OperatorInputError('nothing to set: pass --approval-threshold or --platform');
  const row = await db
    .updateTable('companies')
    .set(values)
    .where('id', '=', input.company)
    .returning(['id', 'name', 'cashout_approval_threshold', 'platform'])
    .executeTakeFirst();
  if (!row) throw new OperatorInputError(`no company ${input.company}`);
  const threshold = row.cashout_approval_threshold;
  return {
    company: { id: row.id, name: row.name, cashout_approval_threshold: threshold === null ? null : Number(threshold) / 100, platform: row.platform },
  };
}

/** Whether the operator enabled `feature` for the company (`recaudo companies create --feature`). */
export async function companyHasFeature(db: Executor, companyId: string, feature: string): Promise<boolean> {
  const row = await db.selectFrom('companies').select('features').where('id', '=', companyId).executeTakeFirst();
  const features: unknown = row?.features;
  return Array.isArray(features) && features.includes(feature);
}
