import type { AppDeps } from '../../platform/context.ts';
import type { Environment } from '../../platform/db/schema.ts';
import { emvcoPayload } from '../../rails/emvco.ts';

/**
 * The rails a payer acts on (docs/charges.md): the bank-transfer scheme (banklink), the instant-key
 * QR scheme (rtkey) and the two wallets' request-to-pay (walleta, walletb). One port, a sandbox
 * adapter. Every call is idempotent by `reference` (the charge id); callers never hold a database
 * transaction across a call. Outcomes are deterministic (PRODUCT.md "Test environment"), so any
 * process may ask again.
 */

export interface BanklinkSession {
  reference: string;
  amount: bigint;
  currency: string;
  bankId: string;
  redirectUrl: string;
  expiresAt: Date;
}

export interface QrRegistration {
  reference: string;
  amount: bigint;
  currency: string;
  merchant: string;
  /** EMVCo tag 62 reference label (the company's reference, or the charge id). */
  label: string;
  expiresAt: Date;
  test_scenario: string | null;
}

export interface WalletRequest {
  reference: string;
  method: 'walleta' | 'walletb';
  amount: bigint;
  phone: string;
}

export type PayerOutcome = { status: 'approved' } | { status: 'declined'; remarks: string };

/** The instant-key scheme refused the QR: no charge is created (90100 qr_generation_failed). */
export class QrRegistrationFailed extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'QrRegistrationFailed';
  }
}

export interface CollectRail {
  readonly name: string;
  /** banklink: opens the payer's session at the bank; the payer approves or declines there. */
  openBanklink(session: BanklinkSession): Promise<{ networkId: string }>;
  /** rtkey: registers a dynamic QR with the instant-payment scheme and returns its payload. */
  registerQr(registration: QrRegistration): Promise<{ networkId: string; payload: string }>;
  /** walleta, walletb: sends the request to the payer's wallet app. */
  requestToPay(request: WalletRequest): Promise<{ networkId: string }>;
  /**
   * walleta (no otp) and walletb (with the payer's otp): the wallet's answer once the payer acted.
   * `otp_invalid`: the wallet refused the code (walletb).
   */
  walletOutcome(request: WalletRequest & { otp?: string }): Promise<PayerOutcome | { status: 'otp_invalid' }>;
  /** Withdraws what is still open (an expired or cancelled charge); nothing happens to a settled one. */
  cancel(reference: string): Promise<void>;
}

/** PRODUCT.md: the wallets' test phones and walletb's right OTP. */
export const WALLET_APPROVING_PHONE = '+573991111111';
export const WALLET_DECLINING_PHONE = '+573992222222';
export const WALLETB_TEST_OTP = '123456';
/** rtkey test_scenario that makes the sandbox scheme refuse the QR. */
export const QR_FAILURE_SCENARIO = 'qr_failure';

/**
 * The sandbox adapter.
 * - banklink: the session is the sandbox bank page (`/pay/{charge id}`); the payer's Aprobar or
 *   Rechazar there is the bank's answer.
 * - rtkey: the QR payload is built here (what a scheme answers); with `triggers` (test keys), an
 *   amount whose pesos end in 13 with no cents (1.013, 25.013…) or test_scenario `qr_failure`
 *   makes the registration fail.
 * - wallets: `+573992222222` declines (TRANSACTION_REJECTED), any other phone approves
 *   (`+573991111111` is the documented approving one); walletb's OTP `123456` is right, any other
 *   is refused.
 */
export class SandboxCollectRail implements CollectRail {
  readonly name = 'sandbox';
  constructor(private opts: { triggers: boolean }) {}

  async openBanklink(session: BanklinkSession): Promise<{ networkId: string }> {
    return { networkId: `sbx_banklink_${session.reference}` };
  }

  async registerQr(r: QrRegistration): Promise<{ networkId: string; payload: string }> {
    if (this.opts.triggers && (r.test_scenario === QR_FAILURE_SCENARIO || r.amount % 10_000n === 1_300n)) {
      throw new QrRegistrationFailed('The instant-payment scheme refused the QR registration (sandbox trigger).');
    }
    const networkId = `sbx_rtkey_${r.reference}`;
    return { networkId, payload: emvcoPayload({ key: networkId, merchant: r.merchant, amountMinor: r.amount, currency: r.currency, reference: r.label }) };
  }

  async requestToPay(request: WalletRequest): Promise<{ networkId: string }> {
    return { networkId: `sbx_${request.method}_${request.reference}` };
  }

  async walletOutcome(request: WalletRequest & { otp?: string }): Promise<PayerOutcome | { status: 'otp_invalid' }> {
    if (request.method === 'walletb' && request.otp !== WALLETB_TEST_OTP) return { status: 'otp_invalid' };
    if (request.phone === WALLET_DECLINING_PHONE) return { status: 'declined', remarks: 'TRANSACTION_REJECTED' };
    return { status: 'approved' };
  }

  async cancel(_reference: string): Promise<void> {}
}

const rails = new WeakMap<AppDeps, { test: CollectRail; live: CollectRail }>();

/**
 * The rail for an environment. Test keys never touch a real rail. No real banklink, instant-key or
 * wallet provider is integrated yet: live charges use a separate sandbox instance without the
 * test triggers (as card and account charges do, docs/rails.md).
 */
export function collectRail(deps: AppDeps, environment: Environment): CollectRail {
  let set = rails.get(deps);
  if (!set) {
    set = { test: new SandboxCollectRail({ triggers: true }), live: new SandboxCollectRail({ triggers: false }) };
    rails.set(deps, set);
  }
  return environment === 'live' ? set.live : set.test;
}

/** Tests replace a rail (a failing one) for one runtime. */
export function setCollectRail(deps: AppDeps, environment: Environment, rail: CollectRail): void {
  collectRail(deps, environment);
  rails.get(deps)![environment] = rail;
}
