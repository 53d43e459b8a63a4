import { z } from 'zod';
import { sql, type SelectQueryBuilder } from 'kysely';
import { ApiError, validationError } from '../errors/api-error.ts';

/**
 * One mechanism for every list endpoint: `page`, `per_page` (1..100), `filter[field]` and
 * `sort=field|-field` checked against the endpoint's whitelist, and PRODUCT.md's envelope.
 */
export interface ListSpec<F extends string, S extends string> {
  filters: readonly F[];
  sorts: readonly S[];
  /** Filters that also take `filter[f][gte|gt|lte|lt]=value` (dates, amounts). */
  ranges?: readonly F[];
  /** Extra per_page aliases (accounts accept `limit`). */
  perPageAliases?: readonly string[];
}

export interface ListQuery<F extends string, S extends string> {
  page: number;
  perPage: number;
  filters: Partial<Record<F, string>>;
  ranges: Partial<Record<F, Partial<Record<RangeOp, string>>>>;
  sort: { field: S; direction: 'asc' | 'desc' } | null;
}

export interface ListEnvelope<T> {
  data: T[];
  current_page: number;
  first_page_url: string;
  from: number | null;
  last_page: number;
  last_page_url: string;
  next_page_url: string | null;
  path: string;
  per_page: number;
  prev_page_url: string | null;
  to: number | null;
  total: number;
}

/** The querystring schema (for validation of shape and the OpenAPI document). Unknown keys pass through. */
export function listQuerySchema<F extends string, S extends string>(spec: ListSpec<F, S>) {
  const shape: Record<string, z.ZodType> = {
    page: z.string().optional().describe('1-based page number'),
    per_page: z.string().optional().describe('items per page, 1 to 100 (default 20)'),
  };
  for (const alias of spec.perPageAliases ?? []) shape[alias] = z.string().optional().describe('alias of per_page');
  if (spec.sorts.length) {
    shape.sort = z
      .string()
      .optional()
      .describe(`one of ${spec.sorts.map((s) => `${s}, -${s}`).join(', ')}`);
  }
  for (const f of spec.filters) {
    shape[`filter[${f}]`] = z.string().optional();
    if (spec.ranges?.includes(f)) for (const op of ['gte', 'gt', 'lte', 'lt']) shape[`filter[${f}][${op}]`] = z.string().optional();
  }
  return z.looseObject(shape);
}

function positiveInt(raw: unknown, field: string, min: number, max: number): number {
  const text = Array.isArray(raw) ? raw[raw.length - 1] : raw;
  if (typeof text !== 'string' || !/^\d{1,9}$/.test(text)) {
    throw validationError({ [field]: [`must be an integer between ${min} and ${max}`] });
  }
  const n = Number(text);
  if (n < min || n > max) throw validationError({ [field]: [`must be an integer between ${min} and ${max}`] });
  return n;
}

const FILTER_KEY = /^filter\[([^\]]*)\](?:\[(gte|gt|lte|lt)\])?$/;
export type RangeOp = 'gte' | 'gt' | 'lte' | 'lt';
export const RANGE_SQL: Record<RangeOp, '>=' | '>' | '<=' | '<'> = { gte: '>=', gt: '>', lte: '<=', lt: '<' };

export function parseListQuery<F extends string, S extends string>(spec: ListSpec<F, S>, query: Record<string, unknown>): ListQuery<F, S> {
  const filters: Partial<Record<F, string>> = {};
  const ranges: Partial<Record<F, Partial<Record<RangeOp, string>>>> = {};
  const unknown: Record<string, string[]> = {};
  for (const [key, value] of Object.entries(query)) {
    if (!key.startsWith('filter[') && !key.startsWith('filter%5B')) continue;
    const m = FILTER_KEY.exec(key);
    const name = m?.[1] as F;
    const op = m?.[2] as RangeOp | undefined;
    if (!m || !spec.filters.includes(name) || (op && !spec.ranges?.includes(name))) {
      unknown[key] = [`filter not allowed; allowed: ${spec.filters.join(', ') || 'none'}`];
      continue;
    }
    const text = Array.isArray(value) ? value[value.length - 1] : value;
    if (typeof text !== 'string') continue;
    if (op) (ranges[name] ??= {})[op] = text;
    else filters[name] = text;
  }
  let sort: ListQuery<F, S>['sort'] = null;
  if (query.sort !== undefined && query.sort !== '') {
    const raw = String(Array.isArray(query.sort) ? query.sort[query.sort.length - 1] : query.sort);
    const desc = raw.startsWith('-');
    const field = (desc ? raw.slice(1) : raw) as S;
    if (!spec.sorts.includes(field)) unknown.sort = [`sort not allowed; allowed: ${spec.sorts.join(', ') || 'none'}`];
    else sort = { field, direction: desc ? 'desc' : 'asc' };
  }
  if (Object.keys(unknown).length) {
    throw new ApiError('invalid_list_query', { errors: unknown });
  }
  const page = query.page === undefined ? 1 : positiveInt(query.page, 'page', 1, 1_000_000);
  let perPage = 20;
  let perPageField: string | undefined;
  for (const name of ['per_page', ...(spec.perPageAliases ?? [])]) {
    if (query[name] !== undefined) perPageField = name;
  }
  if (perPageField) perPage = positiveInt(query[perPageField], perPageField, 1, 100);
  return { page, perPage, filters, ranges, sort };
}

function pageUrl(path: string, query: Record<string, unknown>, page: number): string {
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) {
    if (k === 'page' || v === undefined) continue;
    for (const item of Array.isArray(v) ? v : [v]) params.append(k, String(item));
  }
  params.set('page', String(page));
  return `${path}?${params.toString()}`;
}

/**
 * Runs the count and the page query. `base` must already carry scope and filters; ordering is the
 * requested sort (or created_at) with `id` as the tie-breaker so pages are stable.
 */
export async function paginate<DB, TB extends keyof DB, O, T>(
  base: SelectQueryBuilder<DB, TB, O>,
  list: ListQuery<string, string>,
  opts: {
    path: string;
    query: Record<string, unknown>;
    table: string;
    defaultSort?: { field: string; direction: 'asc' | 'desc' };
    map: (row: O) => T;
  },
): Promise<ListEnvelope<T>> {
  const countRow = (await base
    .clearSelect()
    .select(sql<string>`count(*)`.as('n'))
    .executeTakeFirst()) as { n: string | number | bigint } | undefined;
  const total = Number(countRow?.n ?? 0);
  const sort = list.sort ?? opts.defaultSort ?? { field: 'created_at', direction: 'desc' as const };
  const rows = await base
    .orderBy(sql.ref(`${opts.table}.${sort.field}`), (ob) => (sort.direction === 'desc' ? ob.desc().nullsLast() : ob.asc().nullsFirst()))
    .orderBy(sql.ref(`${opts.table}.id`), sort.direction)
    .limit(list.perPage)
    .offset((list.page - 1) * list.perPage)
    .execute();
  return envelope(rows.map(opts.map), total, list, opts);
}

/** PRODUCT.md's envelope around one page of items (`rows`) out of `total`. */
function envelope<T>(
  rows: T[],
  total: number,
  list: ListQuery<string, string>,
  opts: { path: string; query: Record<string, unknown> },
): ListEnvelope<T> {
  const lastPage = Math.max(1, Math.ceil(total / list.perPage));
  const from = rows.length ? (list.page - 1) * list.perPage + 1 : null;
  return {
    data: rows,
    current_page: list.page,
    first_page_url: pageUrl(opts.path, opts.query, 1),
    from,
    last_page: lastPage,
    last_page_url: pageUrl(opts.path, opts.query, lastPage),
    next_page_url: list.page < lastPage ? pageUrl(opts.path, opts.query, list.page + 1) : null,
    path: opts.path,
    per_page: list.perPage,
    prev_page_url: list.page > 1 ? pageUrl(opts.path, opts.query, list.page - 1) : null,
    to: from === null ? null : from + rows.length - 1,
    total,
  };
}

/** The list envelope schema for the OpenAPI document. */
export function listEnvelopeSchema<T extends z.ZodType>(item: T) {
  const url = z.string();
  return z.object({
    data: z.array(item),
    current_page: z.number().int(),
    first_page_url: url,
    from: z.number().int().nullable(),
    last_page: z.number().int(),
    last_page_url: url,
    next_page_url: url.nullable(),
    path: url,
    per_page: z.number().int(),
    prev_page_url: url.nullable(),
    to: z.number().int().nullable(),
    total: z.number().int(),
  });
}

/** A timestamp filter value (`2026-11-21` or a full ISO 8601 timestamp); invalid → 422. */
export function parseTimestampFilter(key: string, value: string): Date {
  const date = /^\d{4}-\d{2}-\d{2}$/.test(value)
    ? new Date(`${value}T00:00:00Z`)
    : /^\d{4}-\d{2}-\d{2}T/.test(value)
      ? new Date(value)
      : new Date(NaN);
  if (Number.isNaN(date.getTime())) throw validationError({ [key]: ['must be an ISO 8601 date or timestamp'] });
  return date;
}

/**
 * The list envelope over items already in memory (a catalogue a rail answers, not a table): the
 * same page arithmetic and page URLs as `paginate`, with the items in the order given.
 */
export function paginateItems<T>(
  items: readonly T[],
  list: ListQuery<string, string>,
  opts: { path: string; query: Record<string, unknown> },
): ListEnvelope<T> {
  return envelope(items.slice((list.page - 1) * list.perPage, list.page * list.perPage), items.length, list, opts);
}
