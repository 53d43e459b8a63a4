import type { DianSoapClient } from './soap-client.ts';

/**
 * `recaudo fiscal import-ranges` (wired at integration): reads the company's numbering ranges from
 * DIAN's GetNumberingRange so resolutions are loaded with their technical keys, never hand-typed.
 *   accountCode  = the issuer's NIT (digits, no check digit)
 *   accountCodeT = the NIT of whoever operates the software (the same NIT for own software)
 *   softwareCode = the software id registered with DIAN
 */

export interface ImportedRange {
  number: string;
  prefix: string;
  from: number;
  to: number;
  validFrom: string; // YYYY-MM-DD
  validUntil: string; // YYYY-MM-DD
  technicalKey: string;
}

export class NumberingRangeError extends Error {
  constructor(
    readonly operationCode: string,
    message: string,
  ) {
    super(message);
    this.name = 'NumberingRangeError';
  }
}

/** `2019-01-19`, `2019-01-19T00:00:00`, `2019-01-19T00:00:00-05:00` → `2019-01-19`. */
function day(value: string, field: string): string {
  const m = /^(\d{4}-\d{2}-\d{2})/.exec(value.trim());
  if (!m) throw new NumberingRangeError('parse', `GetNumberingRange: ${field} "${value}" is not a date`);
  return m[1];
}

function folio(value: string, field: string): number {
  const v = value.trim();
  if (!/^\d{1,15}$/.test(v)) throw new NumberingRangeError('parse', `GetNumberingRange: ${field} "${value}" is not a folio`);
  return Number(v);
}

/**
 * The ranges DIAN holds for the company and software. DIAN's OperationCode `100` means success
 * (an empty list is then a valid answer); any other code is thrown with DIAN's description.
 */
export async function fetchNumberingRanges(
  client: Pick<DianSoapClient, 'getNumberingRange'>,
  params: { accountCode: string; accountCodeT: string; softwareCode: string },
): Promise<ImportedRange[]> {
  const result = await client.getNumberingRange(params.accountCode, params.accountCodeT, params.softwareCode);
  if (result.operationCode !== '100') {
    throw new NumberingRangeError(
      result.operationCode,
      `GetNumberingRange ${result.operationCode || '(no code)'}: ${result.operationDescription || 'no description'}`,
    );
  }
  return result.ranges.map((r) => {
    const range: ImportedRange = {
      number: r.resolutionNumber.trim(),
      prefix: r.prefix.trim(),
      from: folio(r.fromNumber, 'FromNumber'),
      to: folio(r.toNumber, 'ToNumber'),
      validFrom: day(r.validDateFrom, 'ValidDateFrom'),
      validUntil: day(r.validDateTo, 'ValidDateTo'),
      technicalKey: r.technicalKey.trim(),
    };
    if (range.from > range.to)
      throw new NumberingRangeError('parse', `GetNumberingRange: range ${range.prefix}${range.from}-${range.to} is inverted`);
    if (!range.number) throw new NumberingRangeError('parse', 'GetNumberingRange: a range without resolution number');
    return range;
  });
}
