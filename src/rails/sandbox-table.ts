/**
 * THE sandbox table (PRODUCT.md "Test environment"; docs/testing.md "Sandbox triggers"): every
 * card, phone, code, account number and instant key the sandbox rails answer deterministically.
 * The API's sandbox adapters and the payer pages read only this table, so the same card or phone
 * gives the same outcome whichever side it is used from.
 */

export const DECLINE_REASONS = ['INSUFFICIENT_FUNDS', 'RISK_CONTROL', 'CARD_EXPIRED', 'TRANSACTION_REJECTED'] as const;
export type DeclineReason = (typeof DECLINE_REASONS)[number];

export function isDeclineReason(value: string | null | undefined): value is DeclineReason {
  return (DECLINE_REASONS as readonly string[]).includes(value ?? '');
}

/** Test cards: approved or the decline reason. Every other valid number approves. */
export const SANDBOX_CARDS: Readonly<Record<string, 'approved' | DeclineReason>> = {
  '4242424242424242': 'approved',
  '4000000000000002': 'TRANSACTION_REJECTED',
  '4000000000000069': 'CARD_EXPIRED',
  '4000000000009995': 'INSUFFICIENT_FUNDS',
  '4100000000000019': 'RISK_CONTROL',
};

/** The sandbox outcome class of a card number (kept on the card, never the number itself). */
export function sandboxCardOutcome(pan: string): 'approved' | DeclineReason {
  return SANDBOX_CARDS[pan] ?? 'approved';
}

/** walleta and walletb: this phone approves, this one declines (TRANSACTION_REJECTED); any other approves. */
export const WALLET_APPROVING_PHONE = '+573991111111';
export const WALLET_DECLINING_PHONE = '+573992222222';
/** walletb's right OTP (POST /charges/walletb/{id}/confirm); any other is refused (10136). */
export const WALLETB_TEST_OTP = '123456';

export function sandboxWalletOutcome(phone: string): { status: 'approved' } | { status: 'declined'; remarks: DeclineReason } {
  return phone === WALLET_DECLINING_PHONE ? { status: 'declined', remarks: 'TRANSACTION_REJECTED' } : { status: 'approved' };
}

/** rtkey: this test_scenario, or an amount whose pesos end in 13 without cents (1.013, 25.013), makes the scheme refuse the QR. */
export const QR_FAILURE_SCENARIO = 'qr_failure';
export function sandboxQrRefused(amountMinor: bigint, scenario: string | null): boolean {
  return scenario === QR_FAILURE_SCENARIO || amountMinor % 10_000n === 1_300n;
}

/** Account enrollment: an account number ending in this is rejected by the sandbox bank. */
export const ENROLLMENT_REJECT_SUFFIX = '9999';
/** The code the holder of a wallet account confirms its enrollment with (POST /accounts/{id}/validate). */
export const ENROLLMENT_HOLDER_OTP = '123456';

export type InstantKeyType = 'ALPHANUM' | 'PHONE' | 'EMAIL' | 'ID';

export interface DirectoryEntry {
  key_type: InstantKeyType;
  key_value: string;
  document_type: 'CC' | 'CE' | 'NIT' | 'PASSPORT';
  document_number: string;
  first_name: string;
  last_name: string;
  status: 'ACTIVE' | 'INACTIVE';
  /** The holder's bank (its Superfinanciera code, docs/accounts.md). */
  bank_code: string;
}

/** The sandbox instant-key directory (GET /accounts/rtkey/{key} with a test key). */
export const SANDBOX_KEY_DIRECTORY: readonly DirectoryEntry[] = [
  {
    key_type: 'ALPHANUM',
    key_value: '@ana.gomez',
    document_type: 'CC',
    document_number: '1020304050',
    first_name: 'Ana',
    last_name: 'Gómez',
    status: 'ACTIVE',
    bank_code: '1007',
  },
  {
    key_type: 'ALPHANUM',
    key_value: '@luis.perez',
    document_type: 'CC',
    document_number: '79123456',
    first_name: 'Luis',
    last_name: 'Pérez',
    status: 'ACTIVE',
    bank_code: '1051',
  },
  {
    key_type: 'ALPHANUM',
    key_value: '@tienda.andina',
    document_type: 'NIT',
    document_number: '900123456',
    first_name: 'Tienda Andina SAS',
    last_name: '',
    status: 'ACTIVE',
    bank_code: '1001',
  },
  {
    key_type: 'ALPHANUM',
    key_value: '@cuenta.cerrada',
    document_type: 'CC',
    document_number: '52111222',
    first_name: 'Marta',
    last_name: 'Rojas',
    status: 'INACTIVE',
    bank_code: '1013',
  },
  {
    key_type: 'PHONE',
    key_value: '3001234567',
    document_type: 'CC',
    document_number: '1020304050',
    first_name: 'Ana',
    last_name: 'Gómez',
    status: 'ACTIVE',
    bank_code: '1507',
  },
  {
    key_type: 'PHONE',
    key_value: '3109876543',
    document_type: 'CC',
    document_number: '80222333',
    first_name: 'Carlos',
    last_name: 'Ruiz',
    status: 'ACTIVE',
    bank_code: '1551',
  },
  {
    key_type: 'EMAIL',
    key_value: 'maria.lopez@example.com',
    document_type: 'CC',
    document_number: '43555666',
    first_name: 'María',
    last_name: 'López',
    status: 'ACTIVE',
    bank_code: '1809',
  },
  {
    key_type: 'ID',
    key_value: '1032456789',
    document_type: 'CC',
    document_number: '1032456789',
    first_name: 'Juan',
    last_name: 'Martínez',
    status: 'ACTIVE',
    bank_code: '1052',
  },
];

/**
 * A charge's or a payment's test_scenario applied to an approving answer: a decline reason
 * declines with it, `pending` waits for resolve. A declining answer always declines.
 */
export function applyTestScenario<T extends { status: string }>(
  outcome: T,
  scenario: string | null,
): T | { status: 'declined'; remarks: DeclineReason } | { status: 'pending' } {
  if (outcome.status !== 'approved' || !scenario || scenario === 'approved') return outcome;
  if (scenario === 'pending') return { status: 'pending' };
  if (isDeclineReason(scenario)) return { status: 'declined', remarks: scenario };
  return outcome;
}

// ---------------------------------------------------------------------------------------------
// Issuing cards (rail `issuer`, docs/issuing.md) and bill payments (rail `biller`, docs/utilities.md)

/** Issuing: a customer whose document number ends in this is refused by the sandbox issuer (KYC_REJECTED). */
export const ISSUER_REJECT_DOCUMENT_SUFFIX = '9999';

/** A bill reference's last four characters decide the sandbox biller's answer (docs/testing.md). */
export const BILL_NOT_FOUND_SUFFIX = '0404';
export const BILL_ALREADY_PAID_SUFFIX = '1111';
export const BILL_REJECTED_SUFFIX = '0000';
export const BILL_PENDING_SUFFIX = '2222';
/** A pending bill payment (`…2222`) is paid this long after it was first sent. */
export const BILL_PENDING_SETTLE_MS = 60_000;
/** The smallest sandbox bill (pesos × 100 = minor units). */
export const BILL_MINIMUM_MINOR = 5_000_00n;

export type SandboxBillClass = 'not_found' | 'already_paid' | 'rejected' | 'pending' | 'paid';

/** The sandbox biller's bills have references of 6 to 16 digits (contract numbers, NICs); any other has no bill. */
export const SANDBOX_BILL_REFERENCE = /^[0-9]{6,16}$/;

export function sandboxBillClass(reference: string): SandboxBillClass {
  if (!SANDBOX_BILL_REFERENCE.test(reference) || reference.endsWith(BILL_NOT_FOUND_SUFFIX)) return 'not_found';
  if (reference.endsWith(BILL_ALREADY_PAID_SUFFIX)) return 'already_paid';
  if (reference.endsWith(BILL_REJECTED_SUFFIX)) return 'rejected';
  if (reference.endsWith(BILL_PENDING_SUFFIX)) return 'pending';
  return 'paid';
}

/**
 * A sandbox bill's amount in minor units: 100 pesos × the number its last four digits make
 * (`111100005555` → COP 555,500), at least COP 5,000.
 */
export function sandboxBillAmount(reference: string): bigint {
  const digits = reference.replace(/\D/g, '').slice(-4);
  const amount = BigInt(digits || '0') * 100n * 100n;
  return amount < BILL_MINIMUM_MINOR ? BILL_MINIMUM_MINOR : amount;
}
