import { z } from 'zod';
import type { RequestContext } from '../../platform/context.ts';
import { validationError } from '../../platform/errors/api-error.ts';
import { collectionsBetween, type LedgerCollection } from '../ledger/collections.ts';
import { findCharge } from '../charges/queries.ts';
import { getIntent } from '../payments/intents.ts';
import { loadPayment } from '../payments/queries.ts';
import { getFiscalProfile } from '../fiscal/profile.ts';
import { asobancariaFile, type AsobancariaDetail } from './asobancaria.ts';

/**
 * GET /reports/collections (docs/reports.md): the collections of one Bogotá day — every
 * `collection` the ledger posted for the key's company and environment that day (paid charges
 * and paid attempts of payment links) — as an Asobancaria 2001 file or as CSV.
 */
export const REPORT_FORMATS = ['asobancaria', 'csv'] as const;
export const collectionsQuery = z.object({
  date: z.string().regex(/^\d{4}-\d{2}-\d{2}$/, 'must be a date YYYY-MM-DD (Bogotá)'),
  format: z.enum(REPORT_FORMATS).default('asobancaria'),
});
export type CollectionsQuery = z.infer<typeof collectionsQuery>;

const BOGOTA_OFFSET = '-05:00';
const DAY_MS = 86_400_000;

/**
 * Two-digit codes of the detail record (docs/reports.md). Procedencia: 03, an electronic channel
 * (every Recaudo collection is). Medio de pago: one code per rail.
 */
export const ORIGIN_ELECTRONIC = '03';
export const MEANS_BY_METHOD: Readonly<Record<string, string>> = {
  card: '04',
  account: '05',
  banklink: '06',
  rtkey: '07',
  walleta: '08',
  walletb: '08',
};
const MEANS_OTHER = '09';

/** One line of the report, whatever its format. */
export interface CollectionLine {
  at: Date;
  reference: string;
  sourceType: 'charge' | 'payment';
  sourceId: string;
  method: string;
  currency: string;
  amount: bigint;
}

function dayBounds(date: string): { from: Date; to: Date } {
  const from = new Date(`${date}T00:00:00${BOGOTA_OFFSET}`);
  // 2025-02-30 parses to a real instant in some engines: require the same calendar date back.
  if (Number.isNaN(from.getTime()) || new Date(from.getTime() - 5 * 3_600_000).toISOString().slice(0, 10) !== date) {
    throw validationError({ date: ['is not a calendar date'] });
  }
  return { from, to: new Date(from.getTime() + DAY_MS) };
}

/** Bogotá wall-clock parts of an instant: YYYYMMDD, HHMM, and ISO date/time for CSV. */
function bogota(at: Date): { ymd: string; hm: string; date: string; time: string } {
  const local = new Date(at.getTime() - 5 * 3_600_000).toISOString();
  return {
    ymd: local.slice(0, 10).replaceAll('-', ''),
    hm: local.slice(11, 16).replace(':', ''),
    date: local.slice(0, 10),
    time: local.slice(11, 19),
  };
}

async function describe(ctx: RequestContext, c: LedgerCollection): Promise<CollectionLine> {
  const base = { at: c.at, currency: c.currency, amount: c.amount };
  if (c.sourceType === 'charge') {
    const charge = await findCharge(ctx.db, ctx, c.sourceId);
    return {
      ...base,
      sourceType: 'charge',
      sourceId: c.sourceId,
      reference: charge?.external_id ?? c.sourceId,
      method: charge?.payment_method_type ?? 'other',
    };
  }
  if (c.sourceType === 'payment_intent') {
    const intent = await getIntent(ctx, c.sourceId);
    if (intent.payment_id) {
      const payment = await loadPayment(ctx, intent.payment_id);
      return {
        ...base,
        sourceType: 'payment',
        sourceId: payment.id,
        reference: payment.reference ?? payment.external_id ?? payment.id,
        method: intent.method,
      };
    }
    return {
      ...base,
      sourceType: 'charge',
      sourceId: intent.charge_id ?? c.sourceId,
      reference: intent.external_id ?? c.sourceId,
      method: intent.method,
    };
  }
  return { ...base, sourceType: 'payment', sourceId: c.sourceId, reference: c.sourceId, method: 'other' };
}

/** The day's collections, oldest first. */
export async function collectionsOfDay(ctx: RequestContext, date: string): Promise<CollectionLine[]> {
  const { from, to } = dayBounds(date);
  const lines: CollectionLine[] = [];
  for (const c of await collectionsBetween(ctx.db, ctx, from, to)) lines.push(await describe(ctx, c));
  return lines;
}

/** Minor units as a decimal with two places (123456 → "1234.56"). */
export function decimalAmount(minor: bigint): string {
  const sign = minor < 0n ? '-' : '';
  const abs = minor < 0n ? -minor : minor;
  return `${sign}${abs / 100n}.${(abs % 100n).toString().padStart(2, '0')}`;
}

/**
 * A CSV cell: a text a spreadsheet would run as a formula (starting with =, +, -, @, a tab or a
 * carriage return; plain numbers such as -1234.56 excepted) is neutralised with a leading
 * apostrophe (OWASP "CSV injection"), then quoted when it holds a quote, comma or line break.
 */
export function csvCell(value: string): string {
  const text = /^[=+\-@\t\r]/.test(value) && !/^-?\d+(\.\d+)?$/.test(value) ? `'${value}` : value;
  return /[",\r\n]/.test(text) || text !== value ? `"${text.replaceAll('"', '""')}"` : text;
}

export const CSV_COLUMNS = ['date', 'time', 'reference', 'source_type', 'source_id', 'method', 'currency', 'amount'] as const;

export function collectionsCsv(lines: CollectionLine[]): string {
  const rows = lines.map((l) => {
    const t = bogota(l.at);
    return [t.date, t.time, l.reference, l.sourceType, l.sourceId, l.method, l.currency, decimalAmount(l.amount)].map(csvCell).join(',');
  });
  return [CSV_COLUMNS.join(','), ...rows].map((r) => `${r}\r\n`).join('');
}

/** The biller's NIT and check digit for the header: the fiscal profile's, else the operator's `--nit`, else zeros. */
async function billerNit(ctx: RequestContext): Promise<string> {
  const profile = await getFiscalProfile(ctx.db, ctx.deps.secrets, ctx);
  if (profile.nit && profile.dv) return `${profile.nit}${profile.dv}`.slice(-10);
  const company = await ctx.db.selectFrom('companies').select('nit').where('id', '=', ctx.companyId).executeTakeFirst();
  const digits = company?.nit?.replace(/\D/g, '') ?? '';
  return digits ? digits.slice(-10) : '0';
}

export async function collectionsReport(
  ctx: RequestContext,
  query: CollectionsQuery,
): Promise<{ body: string; contentType: string; filename: string }> {
  const lines = await collectionsOfDay(ctx, query.date);
  const ymd = query.date.replaceAll('-', '');
  if (query.format === 'csv') {
    return { body: collectionsCsv(lines), contentType: 'text/csv; charset=utf-8', filename: `recaudo-${ymd}.csv` };
  }
  const nit = await billerNit(ctx);
  const now = bogota(ctx.deps.clock.now());
  const details: AsobancariaDetail[] = lines
    // The layout has no currency: the file carries pesos only (CSV has every currency).
    .filter((l) => l.currency === 'COP')
    .map((l) => ({ reference: l.reference, amount: l.amount, origin: ORIGIN_ELECTRONIC, means: MEANS_BY_METHOD[l.method] ?? MEANS_OTHER }));
  const body = asobancariaFile({
    billerNit: nit,
    serviceCode: nit,
    header: { billerNit: nit, collectionDate: ymd, fileDate: now.ymd, fileTime: now.hm },
    details,
  });
  return { body, contentType: 'text/plain; charset=us-ascii', filename: `recaudo-${ymd}.txt` };
}
