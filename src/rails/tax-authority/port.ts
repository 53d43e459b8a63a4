import type { BuiltDocument, FiscalDocument, FiscalEnvironment } from '../../documents/dian/model.ts';
import type { ImportedRange } from './import-ranges.ts';

/**
 * The tax authority rail (DIAN): it submits a built document and reports the outcome. Asynchronous
 * like DIAN: submit may answer `pending` with a track id, settled later by `status(trackId)`. A
 * call whose outcome is unknown (timeout) is settled by `status`, never by submitting again blindly.
 */
export type AuthorityOutcome =
  | { status: 'accepted'; trackId: string; applicationResponse: string | null; messages: string[] }
  | { status: 'rejected'; trackId: string; reason: string; messages: string[] }
  | { status: 'pending'; trackId: string }
  /** The call's outcome is not known (timeout, connection lost): settle with status(trackId). */
  | { status: 'unknown'; trackId: string; reason: string };

export interface SubmitInput {
  companyId: string;
  environment: FiscalEnvironment;
  document: FiscalDocument;
  built: BuiltDocument;
  /** test_scenario of the invoice (test environment only): `stamp_rejected` makes the sandbox reject. */
  testScenario: string | null;
}

export interface TaxAuthority {
  /** Submits once; the track id (the CUFE/CUDE for DIAN) identifies the submission for status(). */
  submit(input: SubmitInput): Promise<AuthorityOutcome>;
  /**
   * Asks for the outcome of an earlier submission. The stamping job passes the same input again
   * (it keeps the built document), so a stateless sandbox can re-derive its answer after a restart;
   * the real client uses only the track id.
   */
  status(input: SubmitInput & { trackId: string }): Promise<AuthorityOutcome>;
  /**
   * The numbering ranges the authority holds for the company and its software (DIAN's
   * GetNumberingRange). Codes left out default to the company's configuration (its NIT, its
   * software id). Throws when the configuration is unusable or the authority refuses.
   */
  numberingRanges(query: NumberingRangesQuery): Promise<NumberingRangesAnswer>;
}

export interface NumberingRangesQuery {
  companyId: string;
  environment: FiscalEnvironment;
  /** The issuer's NIT (digits, no check digit). */
  accountCode?: string;
  /** The NIT of whoever operates the software (the issuer's for own software). */
  accountCodeT?: string;
  softwareCode?: string;
}

export interface NumberingRangesAnswer {
  /** Where the ranges were read (progress lines). */
  endpoint: string;
  params: { accountCode: string; accountCodeT: string; softwareCode: string };
  ranges: ImportedRange[];
}
