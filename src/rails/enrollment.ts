import { ENROLLMENT_HOLDER_OTP, ENROLLMENT_REJECT_SUFFIX } from './sandbox-table.ts';

/**
 * Account enrollment (rail `enrollment`, docs/accounts.md): asks the account's bank to confirm a
 * customer's authorization for direct debits. Idempotent by `reference` (the account id); the
 * bank decides later, so the answer is asked again until it is final.
 */
export interface EnrollmentRequest {
  reference: string;
  accountNumber: string;
  /** The bank confirms with the holder first (wallets): the holder's code decides. */
  holderConfirms: boolean;
  submittedAt: Date;
}

export type EnrollmentOutcome =
  | { status: 'approved' }
  | { status: 'rejected' }
  /** Not decided yet: ask again at `checkAt`; null = it waits for the holder's confirmation. */
  | { status: 'pending'; checkAt: Date | null };

export interface EnrollmentPort {
  readonly name: string;
  /** How long after submitting to first ask for the outcome (a bank decides asynchronously). */
  readonly firstCheckAfterMs: number;
  /** Submits the enrollment (again: the same answer) and tells where it stands. */
  status(request: EnrollmentRequest): Promise<EnrollmentOutcome>;
  /** The holder's code for an enrollment that waits for it: accepted or not. */
  confirmHolder(request: EnrollmentRequest, otp: string | null): Promise<boolean>;
}

/**
 * The sandbox bank: answers `delayMs` after submission (the first check); an account number ending
 * in 9999 is rejected; a wallet account waits for its holder (code 123456, or none) unless it is
 * rejected; any other is approved.
 */
export class SandboxEnrollment implements EnrollmentPort {
  readonly name = 'sandbox';
  readonly firstCheckAfterMs: number;
  constructor(opts: { delayMs: number }) {
    this.firstCheckAfterMs = opts.delayMs;
  }

  async status(request: EnrollmentRequest): Promise<EnrollmentOutcome> {
    if (request.accountNumber.endsWith(ENROLLMENT_REJECT_SUFFIX)) return { status: 'rejected' };
    if (request.holderConfirms) return { status: 'pending', checkAt: null };
    return { status: 'approved' };
  }

  async confirmHolder(_request: EnrollmentRequest, otp: string | null): Promise<boolean> {
    return otp === null || otp === ENROLLMENT_HOLDER_OTP;
  }
}
