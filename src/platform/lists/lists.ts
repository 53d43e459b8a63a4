import { z } from 'zod';
import { DummyDriver, Kysely, PostgresAdapter, PostgresIntrospector, PostgresQueryCompiler, sql, type SelectQueryBuilder } from 'kysely';
import { ApiError, validationError } from '../errors/api-error.ts';

/**
 * One mechanism for every list endpoint: `page`, `per_page` (1..100), `filter[field]` and
 * `sort=field|-field` checked against the endpoint's whitelist, and PRODUCT.md's envelope.
 *
 * Pages are read by keyset (docs/lists.md): `next_page_url` and `prev_page_url` carry an opaque
 * `cursor` (the sort key and id of the row the page continues from), so following them costs one
 * indexed range read of `per_page + 1` rows at any depth. `page=N` without a cursor still works
 * with OFFSET (the slow path). `total` is counted exactly up to a cap (`LIST_COUNT_CAP`).
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
  /** The decoded `cursor` parameter (shape checked; its sort and table are checked by `paginate`). */
  cursor: Cursor | null;
}

export interface ListEnvelope<T> {
  data: T[];
  current_page: number;
  first_page_url: string;
  from: number | null;
  /** null when more rows match than the count cap (`total` null too). */
  last_page: number | null;
  last_page_url: string | null;
  next_page_url: string | null;
  path: string;
  per_page: number;
  prev_page_url: string | null;
  to: number | null;
  /** Exact up to the count cap; null beyond it. */
  total: number | null;
  /** A next page exists (always present; the one answer to "is there more" when `total` is null). */
  has_more: boolean;
}

type Direction = 'asc' | 'desc';

/**
 * A position in a list: the sort key of a row as PostgreSQL prints it (`cast(col as text)`: exact,
 * microseconds included, read back by the column's own input function) and its id.
 */
interface Position {
  key: string | null;
  id: string;
}

/** What a page URL's `cursor` says: continue after (`next`) or before (`prev`) a row, for one list and sort. */
export interface Cursor extends Position {
  /** The sort it was made for (`-created_at`), and the table: a cursor never moves between lists. */
  sort: string;
  table: string;
  direction: 'next' | 'prev';
  /**
   * The count taken on the page the walk started from (null: beyond the cap), carried along so a
   * page reached by cursor reads per_page + 1 rows and nothing else (docs/lists.md).
   */
  total?: number | null;
}

/** The count cap (docs/lists.md); the HTTP app sets it from LIST_COUNT_CAP at start. */
let countCap = 10_000;

export function configureLists(settings: { listCountCap: number }): void {
  countCap = settings.listCountCap;
}

/** The querystring schema (for validation of shape and the OpenAPI document). Unknown keys pass through. */
export function listQuerySchema<F extends string, S extends string>(spec: ListSpec<F, S>) {
  const shape: Record<string, z.ZodType> = {
    page: z.string().optional().describe('1-based page number (without `cursor`: read by OFFSET, the slow path for deep pages)'),
    per_page: z.string().optional().describe('items per page, 1 to 100 (default 20)'),
    cursor: z.string().optional().describe('opaque position from next_page_url or prev_page_url; never built by hand'),
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
  const rawCursor = Array.isArray(query.cursor) ? query.cursor[query.cursor.length - 1] : query.cursor;
  const cursor = rawCursor === undefined || rawCursor === '' ? null : decodeCursor(rawCursor);
  return { page, perPage, filters, ranges, sort, cursor };
}

// ---------------------------------------------------------------------------------------------
// Cursors: base64url of a small JSON object. Opaque to clients (docs/lists.md); not signed, so
// every field is checked here and a key the column cannot read is refused when the query runs.

const CURSOR_VERSION = 1;
const MAX_CURSOR_LENGTH = 4096;
const MAX_CURSOR_FIELD = 1000;

function badCursor(why: string): ApiError {
  return new ApiError('invalid_list_query', {
    message: 'The cursor is not one this list made; follow next_page_url or prev_page_url as given, or drop the cursor to start again.',
    errors: { cursor: [why] },
  });
}

function encodeCursor(cursor: Cursor): string {
  const body = {
    v: CURSOR_VERSION,
    s: cursor.sort,
    t: cursor.table,
    d: cursor.direction === 'next' ? 'n' : 'p',
    k: cursor.key,
    i: cursor.id,
    ...(cursor.total === undefined ? {} : { n: cursor.total }),
  };
  return Buffer.from(JSON.stringify(body), 'utf8').toString('base64url');
}

function decodeCursor(raw: unknown): Cursor {
  if (typeof raw !== 'string' || raw.length > MAX_CURSOR_LENGTH || !/^[A-Za-z0-9_-]+$/.test(raw)) throw badCursor('is not a cursor');
  let body: unknown;
  try {
    body = JSON.parse(Buffer.from(raw, 'base64url').toString('utf8'));
  } catch {
    throw badCursor('is not a cursor');
  }
  const b = body as Record<string, unknown> | null;
  const text = (v: unknown) => typeof v === 'string' && v.length > 0 && v.length <= MAX_CURSOR_FIELD;
  if (
    typeof b !== 'object' ||
    b === null ||
    b.v !== CURSOR_VERSION ||
    !text(b.s) ||
    !text(b.t) ||
    (b.d !== 'n' && b.d !== 'p') ||
    !(b.k === null || (typeof b.k === 'string' && b.k.length <= MAX_CURSOR_FIELD)) ||
    !text(b.i) ||
    !(b.n === undefined || b.n === null || (Number.isSafeInteger(b.n) && (b.n as number) > 0))
  ) {
    throw badCursor('is not a cursor');
  }
  return {
    sort: b.s as string,
    table: b.t as string,
    direction: b.d === 'n' ? 'next' : 'prev',
    key: b.k as string | null,
    id: b.i as string,
    ...(b.n === undefined ? {} : { total: b.n as number | null }),
  };
}

function sortName(sort: { field: string; direction: Direction }): string {
  return `${sort.direction === 'desc' ? '-' : ''}${sort.field}`;
}

// ---------------------------------------------------------------------------------------------
// Page URLs

function pageUrl(path: string, query: Record<string, unknown>, page: number, cursor?: Cursor): string {
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) {
    if (k === 'page' || k === 'cursor' || v === undefined) continue;
    for (const item of Array.isArray(v) ? v : [v]) params.append(k, String(item));
  }
  params.set('page', String(page));
  if (cursor) params.set('cursor', encodeCursor(cursor));
  return `${path}?${params.toString()}`;
}

// ---------------------------------------------------------------------------------------------
// Reading

type AnyQuery = SelectQueryBuilder<any, any, any>;

/**
 * Builds queries without a connection (kysely's DummyDriver): `paginate` receives a query builder,
 * not a connection, and runs what it builds here on that builder's executor (`runOn`).
 */
const composer = new Kysely<any>({
  dialect: {
    createAdapter: () => new PostgresAdapter(),
    createDriver: () => new DummyDriver(),
    createIntrospector: (db) => new PostgresIntrospector(db),
    createQueryCompiler: () => new PostgresQueryCompiler(),
  },
});

/**
 * Runs `query` on the executor `base` was built on (the pool, or the request's transaction):
 * kysely's plugin hook swaps the query just before it is compiled.
 */
async function runOn<R>(base: AnyQuery, query: SelectQueryBuilder<any, any, R>): Promise<R[]> {
  const node = query.toOperationNode();
  const rows = await base
    .withPlugin({
      transformQuery: () => node,
      transformResult: async ({ result }) => result,
    })
    .execute();
  return rows as R[];
}

/** How many rows `q` matches, counted up to `cap + 1` (so "more than cap" is known without counting them all). */
async function countUpTo(q: AnyQuery, cap: number): Promise<number> {
  const capped = q
    .clearSelect()
    .clearOrderBy()
    .select(sql`1`.as('one'))
    .limit(cap + 1);
  const [row] = await runOn(q, composer.selectFrom(capped.as('capped')).select(sql<string | number>`count(*)`.as('n')));
  return Number(row?.n ?? 0);
}

/**
 * Whether a sort column may hold NULL (read once per process from the catalogue). A NOT NULL
 * column is walked in one index range; a nullable one in two (the rows with a value, then the
 * NULLs), so each read still follows an index without a sort.
 */
const nullableColumns = new Map<string, boolean>();
async function isNullable(base: AnyQuery, table: string, column: string): Promise<boolean> {
  const name = `${table}.${column}`;
  let known = nullableColumns.get(name);
  if (known === undefined) {
    const [row] = await runOn(
      base,
      composer
        .selectFrom('pg_attribute')
        .select('attnotnull as not_null')
        .where('attrelid', '=', sql`to_regclass(${table})`)
        .where('attname', '=', column),
    );
    known = row?.not_null !== true;
    nullableColumns.set(name, known);
  }
  return known;
}

const KEY = '__list_key';
const ID = '__list_id';

interface ListRow {
  [KEY]: string | null;
  [ID]: string;
  [column: string]: unknown;
}

interface Walk {
  base: AnyQuery;
  table: string;
  field: string;
  nullable: boolean;
}

/**
 * The rows of the list in `order` (the list's own direction, or the reverse for a previous page)
 * strictly after `after` (or from the start), skipping `offset`, at most `limit`.
 *
 * The list order is PRODUCT's: descending puts NULLs last, ascending puts them first, ties broken
 * by id. Each piece below reads one index range in the index's own order (`col desc, id desc`
 * or `col asc, id asc`; PostgreSQL's default NULLS placement, which the btree indexes have), and
 * the NULL rows are a piece of their own, so no read needs a sort:
 *   descending: [rows with a value: (col, id) descending] then [NULL rows: id descending];
 *   ascending:  [NULL rows: id ascending] then [rows with a value: (col, id) ascending].
 */
async function walk(w: Walk, order: Direction, after: Position | null, limit: number, offset = 0): Promise<ListRow[]> {
  const col = sql.ref(`${w.table}.${w.field}`);
  const id = sql.ref(`${w.table}.id`);
  const op = sql.raw(order === 'desc' ? '<' : '>');
  type Piece = { nulls: boolean; after: Position | null };
  let pieces: Piece[];
  if (!w.nullable) pieces = [{ nulls: false, after }];
  else if (after?.key === null)
    pieces =
      order === 'desc'
        ? [{ nulls: true, after }]
        : [
            { nulls: true, after },
            { nulls: false, after: null },
          ];
  else if (after)
    pieces =
      order === 'desc'
        ? [
            { nulls: false, after },
            { nulls: true, after: null },
          ]
        : [{ nulls: false, after }];
  else
    pieces =
      order === 'desc'
        ? [
            { nulls: false, after: null },
            { nulls: true, after: null },
          ]
        : [
            { nulls: true, after: null },
            { nulls: false, after: null },
          ];

  const rows: ListRow[] = [];
  let skip = offset;
  for (const piece of pieces) {
    const need = limit - rows.length;
    if (need <= 0) break;
    let q = w.base;
    if (piece.nulls) {
      q = q.where(sql<boolean>`${col} is null`);
      if (piece.after) q = q.where(sql<boolean>`${id} ${op} ${piece.after.id}`);
    } else if (piece.after) {
      // A row comparison on the index's columns: PostgreSQL starts the index scan right at the position.
      q = q.where(sql<boolean>`(${col}, ${id}) ${op} (${piece.after.key}, ${piece.after.id})`);
    } else if (w.nullable) {
      q = q.where(sql<boolean>`${col} is not null`);
    }
    let read = q
      .select([sql<string | null>`cast(${col} as text)`.as(KEY), sql<string>`cast(${id} as text)`.as(ID)])
      .orderBy(col, order)
      .orderBy(id, order)
      .limit(need);
    if (skip > 0) read = read.offset(skip);
    const got = (await read.execute()) as ListRow[];
    if (skip > 0) {
      // Skipped past this whole piece: what is left to skip is counted off in the next one.
      if (got.length === 0) {
        skip -= await countUpTo(q, skip);
        continue;
      }
      skip = 0;
    }
    rows.push(...got);
  }
  return rows;
}

/** A bad key in a cursor (a date that is not one, an id of the wrong type) fails in PostgreSQL's input functions. */
function isInputError(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && code.startsWith('22');
}

function positionOf(row: ListRow): Position {
  return { key: row[KEY], id: row[ID] };
}

function withoutListColumns<O>(row: ListRow): O {
  const { [KEY]: _key, [ID]: _id, ...rest } = row;
  return rest as O;
}

/**
 * One page of `base` (scope and filters applied) in the requested sort (or `defaultSort`, or
 * newest first) with `id` as the tie-breaker, and PRODUCT.md's envelope around it.
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
  const q = base as unknown as AnyQuery;
  const sort = list.sort ?? opts.defaultSort ?? { field: 'created_at', direction: 'desc' as const };
  const cursor = list.cursor;
  if (cursor && (cursor.sort !== sortName(sort) || cursor.table !== opts.table)) {
    throw badCursor(`was made for another list or sort (sort=${cursor.sort}); drop it to read with sort=${sortName(sort)}`);
  }
  const n = list.perPage;
  // A cursor carries the count of the page its walk started from: following it reads one range.
  const counted = cursor?.total !== undefined ? (cursor.total ?? countCap + 1) : await countUpTo(q, countCap);
  const total = counted > countCap ? null : counted;
  if (counted === 0) return envelope([], { total: 0, page: list.page, before: list.page > 1, after: false }, list, opts);

  const w: Walk = { base: q, table: opts.table, field: sort.field, nullable: await isNullable(q, opts.table, sort.field) };
  if (cursor && cursor.key === null && !w.nullable) throw badCursor('is not a cursor');
  const reverse: Direction = sort.direction === 'desc' ? 'asc' : 'desc';
  let page = list.page;
  let rows: ListRow[];
  let before: boolean;
  let after: boolean;
  try {
    if (cursor?.direction === 'next') {
      rows = await walk(w, sort.direction, cursor, n + 1);
      after = rows.length > n;
      rows = rows.slice(0, n);
      before = true;
    } else if (cursor?.direction === 'prev') {
      const earlier = await walk(w, reverse, cursor, n + 1);
      if (earlier.length > n) {
        rows = earlier.slice(0, n).reverse();
        before = true;
        after = true;
      } else {
        // The start of the list is reached: answer the first page itself (rows inserted at the top
        // while a client walked back would otherwise leave it a short page numbered wrongly).
        page = 1;
        rows = earlier.length === n ? earlier.reverse() : await walk(w, sort.direction, null, n + 1);
        after = earlier.length === n || rows.length > n;
        rows = rows.slice(0, n);
        before = false;
      }
    } else {
      rows = await walk(w, sort.direction, null, n + 1, (page - 1) * n);
      after = rows.length > n;
      rows = rows.slice(0, n);
      before = page > 1;
    }
  } catch (error) {
    if (cursor && isInputError(error)) throw badCursor('holds a position this list cannot read');
    throw error;
  }
  const links = {
    first: rows[0] ? positionOf(rows[0]) : null,
    last: rows.length ? positionOf(rows[rows.length - 1]) : null,
    sort: sortName(sort),
    table: opts.table,
    total,
  };
  return envelope(
    rows.map((r) => opts.map(withoutListColumns<O>(r))),
    { total, page, before, after, links },
    list,
    opts,
  );
}

/** Where a page sits: its number, whether pages exist before and after it, and the rows its links continue from. */
interface PageFacts {
  total: number | null;
  page: number;
  before: boolean;
  after: boolean;
  links?: { first: Position | null; last: Position | null; sort: string; table: string; total: number | null };
}

/** PRODUCT.md's envelope (plus `has_more`) around one page of items. */
function envelope<T>(
  rows: T[],
  facts: PageFacts,
  list: ListQuery<string, string>,
  opts: { path: string; query: Record<string, unknown> },
): ListEnvelope<T> {
  const { total, page, links } = facts;
  const lastPage = total === null ? null : Math.max(1, Math.ceil(total / list.perPage));
  const from = rows.length ? (page - 1) * list.perPage + 1 : null;
  const plain = (p: number) => pageUrl(opts.path, opts.query, p);
  const at = (p: number, position: Position | null, direction: 'next' | 'prev') =>
    links && position
      ? pageUrl(opts.path, opts.query, p, { ...position, sort: links.sort, table: links.table, direction, total: links.total })
      : plain(p);
  let prev: string | null = null;
  if (facts.before) prev = page - 1 <= 1 ? plain(1) : at(page - 1, links?.first ?? null, 'prev');
  return {
    data: rows,
    current_page: page,
    first_page_url: plain(1),
    from,
    last_page: lastPage,
    last_page_url: lastPage === null ? null : plain(lastPage),
    next_page_url: facts.after ? at(page + 1, links?.last ?? null, 'next') : null,
    path: opts.path,
    per_page: list.perPage,
    prev_page_url: prev,
    to: from === null ? null : from + rows.length - 1,
    total,
    has_more: facts.after,
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
    last_page: z.number().int().nullable().describe('null when more rows match than the count cap'),
    last_page_url: url.nullable(),
    next_page_url: url.nullable().describe('carries an opaque cursor: reading it costs the same at any depth'),
    path: url,
    per_page: z.number().int(),
    prev_page_url: url.nullable(),
    to: z.number().int().nullable(),
    total: z.number().int().nullable().describe('exact up to the count cap (LIST_COUNT_CAP, 10,000 by default); null beyond it'),
    has_more: z.boolean().describe('a next page exists'),
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
 * same page arithmetic and page URLs (plain `page=N`: slicing an array costs nothing), exact totals.
 */
export function paginateItems<T>(
  items: readonly T[],
  list: ListQuery<string, string>,
  opts: { path: string; query: Record<string, unknown> },
): ListEnvelope<T> {
  const rows = items.slice((list.page - 1) * list.perPage, list.page * list.perPage);
  return envelope(rows, { total: items.length, page: list.page, before: list.page > 1, after: list.page * list.perPage < items.length }, list, opts);
}
