import { createHash, timingSafeEqual } from 'node:crypto';

/**
 * Wompi's public REST API v1 (docs.wompi.co), the facts this connector relies on, in one place.
 * Where the public documentation left something open, the choice made is marked ASSUMPTION and
 * listed in docs/connectors.md.
 */

/** The provider's two environments and their base URLs. */
export const WOMPI_BASE_URLS = {
  sandbox: 'https://sandbox.wompi.co/v1',
  production: 'https://production.wompi.co/v1',
} as const;
export type WompiEnvironment = keyof typeof WOMPI_BASE_URLS;

/** Key prefixes tell the provider environment a key belongs to (pub_test_/prv_test_, pub_prod_/prv_prod_). */
export function keyEnvironment(key: string): WompiEnvironment | null {
  if (/^(pub|prv)_test_/.test(key)) return 'sandbox';
  if (/^(pub|prv)_prod_/.test(key)) return 'production';
  return null;
}

/** A transaction's status: PENDING first, then one final state. */
export const WOMPI_STATUSES = ['PENDING', 'APPROVED', 'DECLINED', 'VOIDED', 'ERROR'] as const;
export type WompiStatus = (typeof WOMPI_STATUSES)[number];

export interface WompiTransaction {
  id: string;
  reference: string;
  amount_in_cents: number;
  currency: string;
  status: WompiStatus;
  status_message?: string | null;
  payment_method_type: string;
  payment_method?: { type: string; extra?: Record<string, unknown> | null; [k: string]: unknown };
  payment_source_id?: number | null;
  customer_email?: string;
  created_at: string;
  finalized_at?: string | null;
}

/**
 * PSE's document types by the customers' ones (the provider's list: CC, CE, NIT, PP, TI, DNI, RG,
 * OTHER). A person pays as user_type 0, a company as 1.
 */
export const PSE_LEGAL_ID_TYPES: Readonly<Record<string, string>> = { CC: 'CC', CE: 'CE', NIT: 'NIT', PASSPORT: 'PP' };

/** ASSUMPTION: PSE's payment_description is cut at 30 characters (what the bank shows). */
export const PSE_DESCRIPTION_MAX = 30;

/**
 * The merchant's two presigned contracts (GET /v1/merchants/info): the end-user terms
 * (`presigned_acceptance`) and the personal-data authorization (`presigned_personal_data_auth`,
 * Ley 1581 de 2012). Each token is single-use: one fresh pair per provider call that needs them.
 */
export interface WompiAcceptance {
  /** Sent as `acceptance_token`. */
  token: string;
  permalink: string;
  /** Sent as `accept_personal_auth`. */
  personalDataToken: string;
  personalDataPermalink: string;
}

/** The error envelope: `{ error: { type, reason? , messages? } }`. */
export interface WompiErrorBody {
  error: { type: string; reason?: string; messages?: Record<string, string[]> };
}

function sha256Hex(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}

/**
 * The integrity signature a transaction carries: SHA-256 of reference + amount in cents +
 * currency + integrity secret, concatenated without separators, in hexadecimal.
 */
export function integritySignature(reference: string, amountInCents: bigint | number, currency: string, integritySecret: string): string {
  return sha256Hex(`${reference}${amountInCents.toString()}${currency}${integritySecret}`);
}

/** An event as the provider posts it to the merchant's events URL. */
export interface WompiEvent {
  event: string;
  data: Record<string, unknown>;
  environment?: string;
  signature: { properties: string[]; checksum: string };
  timestamp: number;
  sent_at?: string;
}

/** The value of a dotted property (`transaction.id`) inside the event's `data`. */
function property(data: Record<string, unknown>, path: string): unknown {
  let value: unknown = data;
  for (const part of path.split('.')) {
    if (value === null || typeof value !== 'object') return undefined;
    value = (value as Record<string, unknown>)[part];
  }
  return value;
}

/**
 * The event checksum: SHA-256 of the values of `signature.properties` (in their order, read from
 * `data`) + `timestamp` + the events secret, concatenated, in hexadecimal. ASSUMPTION: compared
 * without regard to letter case (the documentation's examples show upper case).
 */
export function eventChecksum(event: Pick<WompiEvent, 'data' | 'signature' | 'timestamp'>, eventsSecret: string): string {
  const values = event.signature.properties.map((p) => {
    const v = property(event.data, p);
    return v === undefined || v === null ? '' : String(v);
  });
  return sha256Hex(`${values.join('')}${event.timestamp}${eventsSecret}`);
}

/** Whether the event's checksum is the one its properties, timestamp and the secret give. */
export function eventChecksumValid(event: WompiEvent, eventsSecret: string): boolean {
  if (!Array.isArray(event?.signature?.properties) || typeof event.signature.checksum !== 'string') return false;
  if (!event.signature.properties.every((p) => typeof p === 'string')) return false;
  if (typeof event.timestamp !== 'number' || !event.data || typeof event.data !== 'object') return false;
  const expected = Buffer.from(eventChecksum(event, eventsSecret), 'utf8');
  const given = Buffer.from(event.signature.checksum.toLowerCase(), 'utf8');
  return expected.length === given.length && timingSafeEqual(expected, given);
}

/** Pesos × 100 as the JSON integer the provider expects; refuses what a JSON number cannot hold exactly. */
export function amountInCents(minor: bigint): number {
  if (minor < 0n || minor > BigInt(Number.MAX_SAFE_INTEGER)) throw new RangeError(`amount out of range: ${minor}`);
  return Number(minor);
}
