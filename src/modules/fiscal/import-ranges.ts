import type { AppDeps } from '../../platform/context.ts';
import { inTransaction, type Executor } from '../../platform/db/database.ts';
import type { Environment } from '../../platform/db/schema.ts';
import { OperatorInputError } from '../companies/service.ts';
import { DianCallError, DianConfigError, NumberingRangeError, type ImportedRange, type NumberingRangesAnswer } from '../../rails/index.ts';
import { bogotaDate, isCalendarDate } from './dates.ts';
import { scopeOf } from '../companies/operator.ts';
import { ensureDefaultResolutions, toResolutionResponse, type ResolutionResponse } from './resolutions.ts';
import { insertDraftResolution } from './service.ts';
import { inTenant } from '../../platform/scope.ts';

/**
 * `recaudo fiscal import-ranges` (docs/dian-webservice.md "Importing numbering ranges"): asks the
 * tax-authority rail of the environment for the company's numbering ranges (live: DIAN's
 * GetNumberingRange, signed with the fiscal profile's certificate, at the profile's endpoint; test:
 * the sandbox authority, which holds DIAN's habilitación range) and loads each as an invoice resolution in `draft`, with
 * its technical key. Idempotent: a range whose resolution number and prefix are already loaded
 * (any status) is skipped, as are expired ranges and ranges this API cannot hold (a prefix
 * longer than 4 characters, bad dates). Activation stays a deliberate step
 * (POST /resolutions/{id}/activate).
 */

export interface ImportRangesCommand {
  company: string;
  env: string;
  account_code?: string;
  account_code_t?: string;
  software_code?: string;
}

export interface SkippedRange {
  number: string;
  prefix: string;
  reason: 'already_loaded' | 'expired' | 'invalid';
  detail: string;
  resolution_id: string | null;
}

export interface ImportRangesOutput {
  company: { id: string };
  environment: Environment;
  ranges_found: number;
  created: ResolutionResponse[];
  skipped: SkippedRange[];
  /** The progress lines (also written to stderr by the CLI as they happen). */
  progress: string[];
}

const NIT = /^\d{5,15}$/;

function invalidReason(r: ImportedRange): string | null {
  if (!/^[A-Z0-9]{0,4}$/.test(r.prefix)) return `prefix "${r.prefix}" is not 0 to 4 upper-case letters or digits`;
  if (!/^[0-9A-Za-z-]{1,50}$/.test(r.number)) return `resolution number "${r.number}" is not 1 to 50 letters, digits or dashes`;
  if (!isCalendarDate(r.validFrom) || !isCalendarDate(r.validUntil) || r.validFrom > r.validUntil)
    return `validity ${r.validFrom}..${r.validUntil} is not a date range`;
  if (!/^[0-9A-Za-z]{1,200}$/.test(r.technicalKey)) return 'the technical key is missing or malformed';
  if (r.from < 1 || r.to > 999_999_999_999) return `folios ${r.from}-${r.to} are out of range`;
  return null;
}

export async function importRanges(
  db: Executor,
  input: ImportRangesCommand,
  deps: Pick<AppDeps, 'clock' | 'rails'>,
  onProgress: (line: string) => void = () => {},
): Promise<ImportRangesOutput> {
  const progress: string[] = [];
  const say = (line: string) => {
    progress.push(line);
    onProgress(line);
  };
  const scope = await scopeOf(db, input);
  for (const flag of ['account_code', 'account_code_t'] as const) {
    const v = input[flag];
    if (v !== undefined && !NIT.test(v))
      throw new OperatorInputError(`--${flag.replace(/_/g, '-')} must be a NIT (5 to 15 digits, without the check digit)`);
  }
  if (input.software_code !== undefined && !/^[0-9A-Za-z-]{1,100}$/.test(input.software_code))
    throw new OperatorInputError('--software-code must be the software id (letters, digits, dashes)');

  say(`asking the tax authority (${scope.environment}) for the numbering ranges of ${scope.companyId}...`);
  let answer: NumberingRangesAnswer;
  try {
    answer = await deps.rails.taxAuthority[scope.environment].numberingRanges({
      companyId: scope.companyId,
      environment: scope.environment,
      accountCode: input.account_code,
      accountCodeT: input.account_code_t,
      softwareCode: input.software_code,
    });
  } catch (error) {
    if (error instanceof DianConfigError)
      throw new OperatorInputError(`cannot call DIAN for ${scope.companyId} (${scope.environment}): ${error.problems.join('; ')}`);
    if (error instanceof NumberingRangeError || error instanceof DianCallError)
      throw new OperatorInputError(`DIAN GetNumberingRange failed: ${error.message}`);
    throw error;
  }
  const { params, ranges } = answer;
  say(`DIAN returned ${ranges.length} range(s) (${answer.endpoint}, NIT ${params.accountCode}, software ${params.softwareCode})`);

  const now = deps.clock.now();
  const today = bogotaDate(now);
  const { created, skipped } = await inTransaction(db, async (trx) => {
    await ensureDefaultResolutions(trx, scope, now);
    const created: ResolutionResponse[] = [];
    const skipped: SkippedRange[] = [];
    for (const r of ranges) {
      const label = `${r.number} ${r.prefix || '(no prefix)'} ${r.from}-${r.to}`;
      const invalid = invalidReason(r);
      if (invalid) {
        skipped.push({ number: r.number, prefix: r.prefix, reason: 'invalid', detail: invalid, resolution_id: null });
        say(`skipped ${label}: ${invalid}`);
        continue;
      }
      const existing = await trx
        .selectFrom('fiscal_resolutions')
        .select(['id', 'status'])
        .$call(inTenant(scope))
        .where('document_type', '=', 'invoice')
        .where('number', '=', r.number)
        .where('prefix', '=', r.prefix)
        .executeTakeFirst();
      if (existing) {
        skipped.push({
          number: r.number,
          prefix: r.prefix,
          reason: 'already_loaded',
          detail: `already loaded as ${existing.id} (${existing.status})`,
          resolution_id: existing.id,
        });
        say(`skipped ${label}: already loaded as ${existing.id}`);
        continue;
      }
      if (r.validUntil < today) {
        skipped.push({ number: r.number, prefix: r.prefix, reason: 'expired', detail: `expired on ${r.validUntil}`, resolution_id: null });
        say(`skipped ${label}: expired on ${r.validUntil}`);
        continue;
      }
      const row = await insertDraftResolution(
        trx,
        scope,
        {
          number: r.number,
          prefix: r.prefix,
          document_type: 'invoice',
          from: r.from,
          to: r.to,
          valid_from: r.validFrom,
          valid_until: r.validUntil,
          technical_key: r.technicalKey,
        },
        now,
      );
      created.push(toResolutionResponse(row));
      say(`loaded ${label} as ${row.id} (draft)`);
    }
    return { created, skipped };
  });
  say(`done: ${created.length} created, ${skipped.length} skipped`);
  return { company: { id: scope.companyId }, environment: scope.environment, ranges_found: ranges.length, created, skipped, progress };
}
