/**
 * The Asobancaria 2001 collection file ("formato de recaudo Asobancaria 2001"), as Colombian banks
 * deliver it to billers and accountants import it: fixed-width records of 162 characters, CRLF
 * line ends, ASCII. Pure: no database, no clock. Every field position is documented in
 * docs/reports.md "Asobancaria 2001 layout" and asserted by reports.test.ts.
 *
 *   01 file header · 05 lot header · 06 detail (one per collection) · 08 lot control · 09 file control
 *
 * Numbers are right-aligned and zero-filled; text is left-aligned and space-filled; amounts are
 * minor units with two implied decimals (COP 1.500,00 → 000000150000).
 */
export const RECORD_LENGTH = 162;

export interface AsobancariaHeader {
  /** The biller's NIT with its check digit appended (10 digits, zero-filled on the left). */
  billerNit: string;
  /** The collection day, YYYYMMDD. */
  collectionDate: string;
  /** When the file was made (Bogotá), YYYYMMDD and HHMM. */
  fileDate: string;
  fileTime: string;
  /** The collecting entity's code (3 digits) and account (17): zeros, Recaudo is not a bank. */
  entityCode?: string;
  accountNumber?: string;
  /** 01 savings, 02 checking; 00 when there is no account. */
  accountType?: string;
  /** Distinguishes files of one day (A, B, …). */
  modifier?: string;
}

export interface AsobancariaDetail {
  /** The payer's reference (48 characters max; longer is cut). */
  reference: string;
  /** Minor units (2 implied decimals). */
  amount: bigint;
  /** Where the payment came from (2 digits) and how it was paid (2 digits): docs/reports.md. */
  origin: string;
  means: string;
  /** The debited bank's code (3 digits), when known. */
  bankCode?: string;
}

export interface AsobancariaFile {
  billerNit: string;
  /** The service code of the lot (13 digits): the biller's NIT, zero-filled. */
  serviceCode: string;
  header: AsobancariaHeader;
  details: AsobancariaDetail[];
}

export class LayoutError extends Error {}

/** Right-aligned, zero-filled digits of exactly `width`; refuses what does not fit. */
export function num(value: bigint | number | string, width: number): string {
  const text = typeof value === 'string' ? value : value.toString();
  if (!/^\d*$/.test(text)) throw new LayoutError(`not a non-negative whole number: ${text}`);
  if (text.length > width) throw new LayoutError(`${text} does not fit in ${width} digits`);
  return text.padStart(width, '0');
}

/** Left-aligned, space-filled text of exactly `width`: accents dropped, anything outside printable ASCII a space, cut at `width`. */
export function alpha(value: string, width: number): string {
  const ascii = value
    .normalize('NFD')
    .replace(/[\u0300-\u036f]/g, '')
    .replace(/[^\x20-\x7e]/g, ' ');
  return ascii.slice(0, width).padEnd(width, ' ');
}

const spaces = (width: number) => ' '.repeat(width);

function record(parts: string[]): string {
  const line = parts.join('');
  if (line.length !== RECORD_LENGTH) throw new LayoutError(`record ${line.slice(0, 2)} is ${line.length} characters, not ${RECORD_LENGTH}`);
  return line;
}

export function fileHeader(h: AsobancariaHeader): string {
  return record([
    '01',
    num(h.billerNit, 10),
    num(h.collectionDate, 8),
    num(h.entityCode ?? '0', 3),
    num(h.accountNumber ?? '0', 17),
    num(h.fileDate, 8),
    num(h.fileTime, 4),
    alpha(h.modifier ?? 'A', 1),
    num(h.accountType ?? '0', 2),
    spaces(107),
  ]);
}

export function lotHeader(serviceCode: string, lot: number): string {
  return record(['05', num(serviceCode, 13), num(lot, 4), spaces(143)]);
}

export function detailRecord(d: AsobancariaDetail, sequence: number): string {
  if (d.amount <= 0n) throw new LayoutError('a collected amount is more than zero');
  return record([
    '06',
    alpha(d.reference, 48),
    num(d.amount, 14),
    num(d.origin, 2),
    num(d.means, 2),
    num('0', 6), // operation number: none (the reference identifies the collection)
    num('0', 6), // authorization number: none
    num(d.bankCode ?? '0', 3),
    num('0', 4), // branch
    num(sequence, 7),
    spaces(3), // return reason: none, these are collections
    spaces(65),
  ]);
}

export function lotControl(count: number, total: bigint, lot: number): string {
  return record(['08', num(count, 9), num(total, 18), num(lot, 4), spaces(129)]);
}

export function fileControl(count: number, total: bigint): string {
  return record(['09', num(count, 9), num(total, 18), spaces(133)]);
}

/** The whole file: one lot with every detail; CRLF after every record. */
export function asobancariaFile(file: AsobancariaFile): string {
  const total = file.details.reduce((sum, d) => sum + d.amount, 0n);
  const lines = [
    fileHeader(file.header),
    lotHeader(file.serviceCode, 1),
    ...file.details.map((d, i) => detailRecord(d, i + 1)),
    lotControl(file.details.length, total, 1),
    fileControl(file.details.length, total),
  ];
  return lines.map((l) => `${l}\r\n`).join('');
}
