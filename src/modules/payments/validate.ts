import type { Executor } from '../../platform/db/database.ts';
import type { Environment } from '../../platform/db/schema.ts';
import type { FieldErrors } from '../../platform/errors/api-error.ts';
import { isUuid } from '../../platform/ids.ts';
import { normalizeMetadata, type MetadataInput } from '../../platform/validation.ts';
import { findTemplate } from '../templates/service.ts';
import { MINIMUM_MINOR, formatPesos, inclusiveTax, parseBasisPoints, parseMinor, percentageOf } from '../../platform/money.ts';
import { PAYMENT_TEST_SCENARIOS, type CreatePaymentBody } from './schemas.ts';
import { PAYMENT_METHODS, type Channel, type Currency, type PaymentMethod, type StoredSplit } from './tables.ts';
import { inTenant } from '../../platform/scope.ts';

/** The request fields of a payment (create, or the merged state an update would leave). */
export type PaymentInput = Omit<CreatePaymentBody, 'title'> & { title?: string | null };

/** A payment's fields after every rule: money in minor units, references resolved. */
export interface ResolvedPayment {
  title: string;
  description: string | null;
  currency: Currency;
  amount: bigint | null;
  partial_enabled: boolean;
  partial_minimum: bigint | null;
  reference: string | null;
  external_id: string | null;
  phone: string | null;
  email: string | null;
  channel: Channel;
  template_id: string | null;
  target_wallet_id: string | null;
  target_wallet_company_id: string | null;
  splits: StoredSplit[];
  document_url: string | null;
  tax_rate_bp: number | null;
  tax_amount: bigint | null;
  allows: PaymentMethod[];
  rtkey_expires_in: number | null;
  expires_at: Date | null;
  redirect_url: string | null;
  metadata: Record<string, string> | null;
  test_scenario: string | null;
}

export interface RuleContext {
  db: Executor;
  companyId: string;
  environment: Environment;
  now: Date;
  /** companies.max_transaction_cop, in pesos. */
  maxTransactionCop: bigint;
  /** Fields whose references and dates are checked (create: all; update: the ones sent). */
  checks: (field: keyof PaymentInput) => boolean;
  /** An update keeps the stored destinations of the fields it does not send. */
  stored?: { splits: StoredSplit[]; target_wallet_id: string | null; target_wallet_company_id: string | null };
}

/** SPEC.md: phone → messaging, email → e-mail, reference → the payment portal, otherwise shared by hand. */
export function deliveryChannel(p: { phone: string | null; email: string | null; reference: string | null }): Channel {
  if (p.phone) return 'messaging';
  if (p.email) return 'email';
  if (p.reference) return 'portal';
  return 'manual';
}

const BOGOTA_OFFSET = '-05:00'; // Colombia has no daylight saving time.
const TIMESTAMP = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?(Z|[+-]\d{2}:?\d{2})?$/i;
const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;

function validDay(y: string, m: string, d: string): boolean {
  const date = new Date(Date.UTC(Number(y), Number(m) - 1, Number(d)));
  return date.getUTCFullYear() === Number(y) && date.getUTCMonth() === Number(m) - 1 && date.getUTCDate() === Number(d);
}

/** ISO 8601 timestamp; without an offset it is Bogotá time. Null when malformed. */
export function parseTimestamp(value: string): Date | null {
  const m = TIMESTAMP.exec(value.trim());
  if (!m || !validDay(m[1], m[2], m[3]) || Number(m[4]) > 23 || Number(m[5]) > 59 || Number(m[6] ?? 0) > 59) return null;
  const withZone = m[8] ? value.trim() : `${value.trim()}${BOGOTA_OFFSET}`;
  const date = new Date(withZone);
  return Number.isNaN(date.getTime()) ? null : date;
}

/** A date YYYY-MM-DD: the end of that day in Bogotá. Null when malformed. */
export function parseExpirationDate(value: string): Date | null {
  const m = DATE.exec(value.trim());
  if (!m || !validDay(m[1], m[2], m[3])) return null;
  return new Date(`${value.trim()}T23:59:59.999${BOGOTA_OFFSET}`);
}

function isHttpUrl(value: string, httpsOnly: boolean): boolean {
  try {
    const url = new URL(value);
    return url.protocol === 'https:' || (!httpsOnly && url.protocol === 'http:');
  } catch {
    return false;
  }
}

/**
 * A wallet destination: a WALLET account of the company (UUID, ACTIVE, this environment) or
 * another company's balance id (cmp_…). Returns the balance's company id, or an error message.
 */
async function resolveWallet(
  rc: RuleContext,
  value: string,
  kind: 'account' | 'any',
): Promise<{ accountId: string | null; companyId: string } | string> {
  if (isUuid(value)) {
    const account = await rc.db
      .selectFrom('accounts')
      .select(['id', 'subtype', 'status', 'wallet_company_id'])
      .$call(inTenant(rc))
      .where('id', '=', value.toLowerCase())
      .where('deleted_at', 'is', null)
      .executeTakeFirst();
    if (!account) return 'no such account in this environment';
    if (account.subtype !== 'WALLET' || !account.wallet_company_id) return 'must be a WALLET account';
    if (account.status !== 'ACTIVE') return `the WALLET account is ${account.status}; it must be ACTIVE`;
    return { accountId: account.id, companyId: account.wallet_company_id };
  }
  if (kind === 'account') return 'must be the id (UUID) of a WALLET account';
  if (!/^cmp_[0-9a-z]{1,64}$/.test(value)) return 'must be a WALLET account id (UUID) or a balance id (cmp_…)';
  if (value === rc.companyId) return "cannot be your own company's balance";
  const company = await rc.db.selectFrom('companies').select('id').where('id', '=', value).executeTakeFirst();
  if (!company) return 'no such balance';
  return { accountId: null, companyId: company.id };
}

const present = <T>(v: T | null | undefined): v is T => v !== null && v !== undefined;

/**
 * Every rule of a payment's fields (SPEC.md Payment and Limits, docs/payments.md). Collects all
 * problems, each under its field's dotted path, and returns them with the resolved fields.
 */
export async function resolvePaymentFields(rc: RuleContext, input: PaymentInput): Promise<{ errors: FieldErrors; value: ResolvedPayment }> {
  const errors: FieldErrors = {};
  const add = (field: string, message: string) => (errors[field] ??= []).push(message);
  const live = rc.environment === 'live';

  if (!present(input.title)) add('title', 'is required');

  // Metadata: template_id belongs at the top level only (SPEC.md).
  let metadata: Record<string, string> | null = null;
  try {
    metadata = normalizeMetadata(input.metadata as MetadataInput | null | undefined) ?? null;
  } catch {
    add('metadata', 'at most 50 keys');
  }
  if (metadata && Object.prototype.hasOwnProperty.call(metadata, 'template_id')) {
    add('metadata.template_id', 'template_id is a top-level field; it is not accepted inside metadata');
  }

  // Sandbox triggers: test keys only (PRODUCT.md).
  const scenario = input.test_scenario ?? null;
  if (scenario !== null) {
    if (live) add('test_scenario', 'is only accepted with a test key');
    else if (!(PAYMENT_TEST_SCENARIOS as readonly string[]).includes(scenario))
      add('test_scenario', `must be one of ${PAYMENT_TEST_SCENARIOS.join(', ')}`);
  }

  // Amount: fixed, or an open-amount link.
  const currency: Currency = input.currency ?? 'COP';
  const minimum = MINIMUM_MINOR[currency];
  const open = input.open_amount === true;
  let amount: bigint | null = null;
  if (open) {
    if (present(input.amount)) add('amount', 'must be omitted for an open-amount link (open_amount: true)');
  } else if (!present(input.amount)) {
    add('amount', 'is required (or send open_amount: true for an open-amount link)');
  } else {
    const parsed = parseMinor(input.amount);
    const maximum = rc.maxTransactionCop * 100n;
    if (parsed === null || parsed === 0n) add('amount', 'must be a positive amount in pesos with at most 2 decimals');
    else if (parsed < minimum) add('amount', `must be at least ${formatPesos(minimum, currency)}`);
    else if (currency === 'COP' && parsed > maximum) add('amount', `exceeds the maximum per transaction of ${formatPesos(maximum, 'COP')}`);
    else amount = parsed;
  }

  // Partial payments: a fixed amount paid in several parts.
  let partialEnabled = false;
  let partialMinimum: bigint | null = null;
  const partial = input.partial_payment_config;
  if (partial?.enabled) {
    partialEnabled = true;
    if (open) add('partial_payment_config', 'an open-amount link cannot take partial payments');
    partialMinimum = minimum;
    if (present(partial.minimum_amount)) {
      const parsed = parseMinor(partial.minimum_amount);
      if (parsed === null) add('partial_payment_config.minimum_amount', 'must be an amount in pesos with at most 2 decimals');
      else if (parsed < minimum) add('partial_payment_config.minimum_amount', `must be at least ${formatPesos(minimum, currency)}`);
      else if (amount !== null && parsed >= amount) add('partial_payment_config.minimum_amount', 'must be less than amount');
      else partialMinimum = parsed;
    }
  }

  // Tax contained in the amount.
  let taxRate: number | null = null;
  let taxAmount: bigint | null = null;
  if (input.tax && (present(input.tax.rate) || present(input.tax.amount))) {
    if (present(input.tax.rate)) {
      taxRate = parseBasisPoints(input.tax.rate, { allowZero: true });
      if (taxRate === null) add('tax.rate', 'must be a percentage from 0 to 100 with at most 2 decimals');
    }
    if (present(input.tax.amount)) {
      taxAmount = parseMinor(input.tax.amount);
      if (taxAmount === null) add('tax.amount', 'must be an amount in pesos with at most 2 decimals');
      else if (open) add('tax.amount', 'an open-amount link takes tax.rate only');
      else if (amount !== null && taxAmount >= amount) add('tax.amount', 'must be less than amount (the amount includes the tax)');
    } else if (taxRate !== null && amount !== null) {
      taxAmount = inclusiveTax(amount, taxRate);
    }
  }

  // Methods offered and their options.
  const allows = input.allows ? PAYMENT_METHODS.filter((m) => input.allows!.includes(m)) : [...PAYMENT_METHODS];
  let rtkeyExpiresIn: number | null = null;
  if (input.options?.rtkey) {
    if (!allows.includes('rtkey')) add('options.rtkey', 'rtkey is not among the methods in allows');
    rtkeyExpiresIn = input.options.rtkey.expires_in ?? 30;
  }

  // Redirect after paying: https (http is accepted with test keys for local development).
  const redirect = input.redirect_url ?? null;
  if (redirect !== null && !isHttpUrl(redirect, live)) add('redirect_url', live ? 'must be an https URL' : 'must be an http or https URL');

  // Expiration.
  let expiresAt: Date | null = null;
  if (present(input.expires_at) && present(input.expiration_date)) {
    add('expiration_date', 'send either expires_at or expiration_date, not both');
  } else if (present(input.expires_at)) {
    expiresAt = parseTimestamp(input.expires_at);
    if (!expiresAt) add('expires_at', 'must be an ISO 8601 timestamp such as 2026-12-31T23:59:00-05:00');
    else if (rc.checks('expires_at') && expiresAt.getTime() <= rc.now.getTime()) add('expires_at', 'must be in the future');
  } else if (present(input.expiration_date)) {
    expiresAt = parseExpirationDate(input.expiration_date);
    if (!expiresAt) add('expiration_date', 'must be a date YYYY-MM-DD');
    else if (rc.checks('expiration_date') && expiresAt.getTime() <= rc.now.getTime()) add('expiration_date', 'must be in the future');
  }

  // Template: selectable, and fit for the channel that sends it.
  const phone = input.phone ?? null;
  const email = input.email?.toLowerCase() ?? null;
  const reference = input.reference ?? null;
  const channel = deliveryChannel({ phone, email, reference });
  const templateId = input.template_id ?? null;
  if (templateId !== null && rc.checks('template_id')) {
    const template = await findTemplate(rc.db, templateId);
    if (!template) add('template_id', 'no such template (see GET /v1/templates)');
    else if (!template.selectable) add('template_id', 'the template is not selectable');
    else if (channel === 'messaging' && template.provider === 'email')
      add('template_id', 'an e-mail template cannot be sent by the messaging channel (phone)');
    else if (channel === 'email' && template.provider !== 'email') add('template_id', `a ${template.provider} template cannot be sent by e-mail`);
  }

  // Target wallet.
  let targetWalletId: string | null = input.target_wallet_id ?? null;
  let targetWalletCompany: string | null = null;
  if (rc.stored && !rc.checks('target_wallet_id')) {
    targetWalletId = rc.stored.target_wallet_id;
    targetWalletCompany = rc.stored.target_wallet_company_id;
  } else if (targetWalletId !== null) {
    const wallet = await resolveWallet(rc, targetWalletId, 'any');
    if (typeof wallet === 'string') add('target_wallet_id', wallet);
    else {
      targetWalletCompany = wallet.companyId;
      if (wallet.accountId) targetWalletId = wallet.accountId;
    }
  }

  // Splits toward other balances.
  const splits: StoredSplit[] = rc.stored && !rc.checks('splits') ? rc.stored.splits : await resolveSplits(rc, input, open, targetWalletCompany, add);
  if (splits.length) {
    const percent = splits.reduce((sum, s) => sum + (s.percentage_bp ?? 0), 0);
    const fixed = splits.reduce((sum, s) => sum + (s.amount !== null ? BigInt(s.amount) : 0n), 0n);
    if (percent > 10_000) add('splits', 'the percentages add up to more than 100');
    else if (open && fixed > 0n) add('splits', 'an open-amount link takes percentage splits only');
    else if (amount !== null) {
      const shares = splits.reduce((sum, s) => sum + (s.percentage_bp !== null ? percentageOf(amount!, s.percentage_bp) : 0n), fixed);
      if (shares > amount) add('splits', 'the splits add up to more than the amount');
    }
  }

  return {
    errors,
    value: {
      title: input.title ?? '',
      description: input.description ?? null,
      currency,
      amount,
      partial_enabled: partialEnabled,
      partial_minimum: partialEnabled ? partialMinimum : null,
      reference,
      external_id: input.external_id ?? null,
      phone,
      email,
      channel,
      template_id: templateId,
      target_wallet_id: targetWalletId,
      target_wallet_company_id: targetWalletCompany,
      splits,
      document_url: input.document_url ?? null,
      tax_rate_bp: taxRate,
      tax_amount: taxAmount,
      allows,
      rtkey_expires_in: rtkeyExpiresIn,
      expires_at: expiresAt,
      redirect_url: redirect,
      metadata,
      test_scenario: scenario,
    },
  };
}

/**
 * Each split's destination and share, checked and resolved; problems named by `splits.N.field`.
 * Shared with charges (their splits have the same shape and rules).
 */
export async function resolveSplits(
  rc: RuleContext,
  input: PaymentInput,
  open: boolean,
  targetWalletCompany: string | null,
  add: (field: string, message: string) => void,
): Promise<StoredSplit[]> {
  const splits: StoredSplit[] = [];
  const seen = new Set<string>();
  for (const [i, s] of (input.splits ?? []).entries()) {
    const at = `splits.${i}`;
    const hasAccount = present(s.account_id);
    const hasWallet = present(s.wallet_id);
    let accountId: string | null = null;
    let walletId = '';
    if (hasAccount === hasWallet) add(at, 'send exactly one of account_id or wallet_id');
    else {
      const field = hasAccount ? `${at}.account_id` : `${at}.wallet_id`;
      const resolved = await resolveWallet(rc, (hasAccount ? s.account_id : s.wallet_id)!, hasAccount ? 'account' : 'any');
      if (typeof resolved === 'string') add(field, resolved);
      else {
        accountId = resolved.accountId;
        walletId = resolved.companyId;
        if (walletId === targetWalletCompany) add(field, 'is the target wallet itself');
        else if (seen.has(walletId)) add(field, 'the same balance appears in two splits');
        seen.add(walletId);
      }
    }
    const hasAmount = present(s.amount);
    const hasPercentage = present(s.percentage);
    let share: bigint | null = null;
    let bp: number | null = null;
    if (hasAmount === hasPercentage) add(at, 'send exactly one of amount or percentage');
    else if (hasAmount) {
      share = parseMinor(s.amount);
      if (share === null || share === 0n) add(`${at}.amount`, 'must be a positive amount in pesos with at most 2 decimals');
      else if (open) add(`${at}.amount`, 'an open-amount link takes percentage splits only');
    } else {
      bp = parseBasisPoints(s.percentage);
      if (bp === null) add(`${at}.percentage`, 'must be more than 0 and at most 100, with at most 2 decimals');
    }
    splits.push({ account_id: accountId, wallet_id: walletId, amount: share === null ? null : share.toString(), percentage_bp: bp });
  }
  return splits;
}
