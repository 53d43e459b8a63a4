import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { sql, type Kysely } from 'kysely';
import { createHarness, type Harness } from '../../../test/harness.ts';
import { ApiError } from '../errors/api-error.ts';
import { configureLists, paginate, parseListQuery, type ListEnvelope, type ListSpec } from './lists.ts';

/**
 * The list mechanism on a table of its own (on the engine under test): walking `next_page_url`,
 * walking back by `prev_page_url`, and `page=N` give exactly the order a plain ORDER BY gives
 * (PRODUCT's: descending NULLs last, ascending NULLs first, ties by id), with ties everywhere,
 * NULLs in a nullable sort column and microseconds the JavaScript Date cannot hold. The HTTP side
 * (customers, charges, EXPLAIN) is in test/lists.test.ts.
 */

type Sort = 'at' | 'made';
const spec: ListSpec<never, Sort> = { filters: [], sorts: ['at', 'made'] };
const PATH = 'http://lists.test/v1/probe';

// A few instants, some a microsecond apart, so that ties and sub-millisecond order both occur.
const INSTANTS = [
  '2026-03-01 10:00:00+00',
  '2026-03-01 10:00:00.000001+00',
  '2026-03-01 10:00:00.000999+00',
  '2026-03-01 10:00:00.001+00',
  '2026-03-02 08:30:00.5+00',
];

interface ProbeRow {
  id: string;
  at: string | null;
  made: string;
}

describe('lists: keyset pages over a table with ties and NULLs', () => {
  let h: Harness;
  let db: Kysely<any>;
  const table = `list_probe_${randomUUID().replace(/-/g, '').slice(0, 12)}`;

  before(async () => {
    h = await createHarness();
    db = h.runtime.deps.database.db as unknown as Kysely<any>;
    // `at` may be NULL (like paid_at), `made` may not (like created_at); both indexed as the lists' migrations do.
    await sql`create table ${sql.table(table)} (grp text not null, id text not null, at timestamptz, made timestamptz not null, primary key (grp, id))`.execute(
      db,
    );
    await sql`create index ${sql.id(`${table}_at`)} on ${sql.table(table)} (grp, at, id)`.execute(db);
    await sql`create index ${sql.id(`${table}_made`)} on ${sql.table(table)} (grp, made, id)`.execute(db);
  });
  after(async () => {
    configureLists({ listCountCap: 10_000 });
    await sql`drop table if exists ${sql.table(table)}`.execute(db);
    await h.close();
  });

  const base = (grp: string) => db.selectFrom(table).select(['id']).where('grp', '=', grp);

  async function read(grp: string, url: string): Promise<ListEnvelope<string>> {
    const query = Object.fromEntries(new URL(url).searchParams);
    const list = parseListQuery(spec, query);
    return paginate(base(grp), list, { path: PATH, query, table, map: (r: { id: string }) => r.id });
  }

  /** The order PRODUCT.md defines, straight from PostgreSQL. */
  async function expected(grp: string, sort: string): Promise<string[]> {
    const desc = sort.startsWith('-');
    const col = sql.ref(desc ? sort.slice(1) : sort);
    const rows = await base(grp)
      .orderBy(col, (ob) => (desc ? ob.desc().nullsLast() : ob.asc().nullsFirst()))
      .orderBy('id', desc ? 'desc' : 'asc')
      .execute();
    return rows.map((r) => r.id);
  }

  async function seed(rows: ProbeRow[]): Promise<string> {
    const grp = randomUUID();
    if (rows.length)
      await db
        .insertInto(table)
        .values(rows.map((r) => ({ grp, ...r })))
        .execute();
    return grp;
  }

  const rowsArb = fc.uniqueArray(
    fc.record({
      id: fc.stringMatching(/^[a-z0-9]{1,6}$/),
      at: fc.option(fc.constantFrom(...INSTANTS), { nil: null, freq: 3 }),
      made: fc.constantFrom(...INSTANTS),
    }),
    { selector: (r) => r.id, maxLength: 40 },
  );

  test('next_page_url, prev_page_url and page=N agree with ORDER BY, every row once', async () => {
    await fc.assert(
      fc.asyncProperty(rowsArb, fc.integer({ min: 1, max: 7 }), fc.constantFrom('at', '-at', 'made', '-made'), async (rows, perPage, sort) => {
        const grp = await seed(rows);
        const want = await expected(grp, sort);
        const first = `${PATH}?per_page=${perPage}&sort=${sort}`;

        const pages: ListEnvelope<string>[] = [];
        for (let url: string | null = first; url;) {
          const page: ListEnvelope<string> = await read(grp, url);
          pages.push(page);
          assert.equal(page.current_page, pages.length);
          assert.equal(page.total, rows.length);
          assert.equal(page.last_page, Math.max(1, Math.ceil(rows.length / perPage)));
          assert.equal(page.has_more, page.next_page_url !== null);
          if (page.data.length) assert.equal(page.from, (pages.length - 1) * perPage + 1);
          assert.ok(pages.length <= want.length + 1, 'the walk ends');
          url = page.next_page_url;
        }
        assert.deepEqual(
          pages.flatMap((p) => p.data),
          want,
          'forward walk',
        );
        assert.equal(pages.length, Math.max(1, Math.ceil(rows.length / perPage)));

        // Back from the last page to the first: the same pages.
        let back = pages[pages.length - 1];
        for (let i = pages.length - 2; i >= 0; i--) {
          assert.ok(back.prev_page_url, `page ${i + 2} links back`);
          back = await read(grp, back.prev_page_url);
          assert.deepEqual(back.data, pages[i].data, `back to page ${i + 1}`);
          assert.equal(back.current_page, i + 1);
        }
        assert.equal(back.prev_page_url, null);

        // The slow path: page=N by OFFSET gives the same pages.
        for (const [i, page] of pages.entries()) {
          const byOffset = await read(grp, `${first}&page=${i + 1}`);
          assert.deepEqual(byOffset.data, page.data, `page=${i + 1}`);
          assert.equal(byOffset.has_more, page.has_more);
        }
      }),
      { numRuns: 40 },
    );
  });

  test('a page past the end is empty and links back; a row deleted under the cursor does not break the walk', async () => {
    const rows = INSTANTS.map((made, i) => ({ id: `r${i}`, at: i % 2 ? made : null, made }));
    const grp = await seed(rows);
    const past = await read(grp, `${PATH}?per_page=2&page=9&sort=made`);
    assert.deepEqual(past.data, []);
    assert.equal(past.from, null);
    assert.equal(past.has_more, false);
    assert.match(past.prev_page_url!, /sort=made&page=8$/);

    const first = await read(grp, `${PATH}?per_page=2&sort=-at`);
    const want = await expected(grp, '-at');
    // The row the cursor points at goes away: the next page still starts right after its position.
    await db.deleteFrom(table).where('grp', '=', grp).where('id', '=', first.data[1]).execute();
    const second = await read(grp, first.next_page_url!);
    assert.deepEqual(second.data, want.slice(2, 4));
  });

  test('walking back past rows added at the top answers the real first page', async () => {
    const grp = await seed(INSTANTS.map((made, i) => ({ id: `r${i}`, at: made, made })));
    const p1 = await read(grp, `${PATH}?per_page=2&sort=made`);
    const p2 = await read(grp, p1.next_page_url!);
    const p3 = await read(grp, p2.next_page_url!);
    await db.insertInto(table).values({ grp, id: 'a0', at: null, made: '2026-01-01 00:00:00+00' }).execute();
    // From page 3 back to "page 2": the rows before page 3 are now three; the first two of them are page 1.
    const back = await read(grp, p3.prev_page_url!);
    assert.equal(back.current_page, 2);
    assert.deepEqual(back.data, p2.data);
    const front = await read(grp, back.prev_page_url!);
    assert.equal(front.current_page, 1);
    assert.deepEqual(front.data, ['a0', 'r0']);
    assert.equal(front.prev_page_url, null);

    // Rows before the cursor deleted: walking back reaches the start early and answers page 1 in full.
    const grp2 = await seed(INSTANTS.map((made, i) => ({ id: `r${i}`, at: made, made })));
    const q1 = await read(grp2, `${PATH}?per_page=2&sort=made`);
    const q3 = await read(grp2, (await read(grp2, q1.next_page_url!)).next_page_url!);
    assert.deepEqual(q3.data, ['r4']);
    await db.deleteFrom(table).where('grp', '=', grp2).where('id', 'in', ['r1', 'r2', 'r3']).execute();
    const start = await read(grp2, q3.prev_page_url!);
    assert.equal(start.current_page, 1);
    assert.deepEqual(start.data, ['r0', 'r4']);
    assert.equal(start.prev_page_url, null);
    assert.equal(start.has_more, false);
  });

  test('the count cap: total and last_page null beyond it, has_more tells whether a next page exists', async () => {
    const grp = await seed(INSTANTS.map((made, i) => ({ id: `r${i}`, at: made, made })));
    configureLists({ listCountCap: 3 });
    try {
      const page = await read(grp, `${PATH}?per_page=2&sort=-made`);
      assert.equal(page.total, null);
      assert.equal(page.last_page, null);
      assert.equal(page.last_page_url, null);
      assert.equal(page.has_more, true);
      const p2 = await read(grp, page.next_page_url!);
      const p3 = await read(grp, p2.next_page_url!);
      assert.deepEqual([...page.data, ...p2.data, ...p3.data], await expected(grp, '-made'));
      assert.equal(p3.has_more, false);
      assert.equal(p3.next_page_url, null);
      configureLists({ listCountCap: 5 });
      const exact = await read(grp, `${PATH}?per_page=2&sort=-made`);
      assert.equal(exact.total, 5, 'exactly the cap is still counted');
      assert.equal(exact.last_page, 3);
      // 0: never counted; only an empty list knows its total.
      configureLists({ listCountCap: 0 });
      const uncounted = await read(grp, `${PATH}?per_page=5&sort=-made`);
      assert.equal(uncounted.total, null);
      assert.equal(uncounted.data.length, 5);
      assert.equal(uncounted.has_more, false);
      const empty = await read(randomUUID(), `${PATH}?sort=-made`);
      assert.equal(empty.total, 0);
      assert.equal(empty.last_page, 1);
    } finally {
      configureLists({ listCountCap: 10_000 });
    }
  });

  test('a cursor is checked: garbage, another sort, another list, a key the column cannot read → 400 on cursor', async () => {
    const grp = await seed(INSTANTS.map((made, i) => ({ id: `r${i}`, at: i ? made : null, made })));
    const page = await read(grp, `${PATH}?per_page=2&sort=made`);
    const cursor = new URL(page.next_page_url!).searchParams.get('cursor')!;
    const body = JSON.parse(Buffer.from(cursor, 'base64url').toString());
    const forge = (patch: Record<string, unknown>) => Buffer.from(JSON.stringify({ ...body, ...patch })).toString('base64url');

    const refused = async (url: string, why: RegExp) => {
      await assert.rejects(read(grp, url), (error: unknown) => {
        assert.ok(error instanceof ApiError, String(error));
        assert.equal(error.status, 400);
        assert.equal(error.def.codeName, null);
        assert.match(error.errors?.cursor?.[0] ?? '', why);
        return true;
      });
    };
    await refused(`${PATH}?sort=made&cursor=not-a-cursor`, /is not a cursor/);
    await refused(`${PATH}?sort=made&cursor=${'A'.repeat(5000)}`, /is not a cursor/);
    await refused(`${PATH}?sort=made&cursor=${Buffer.from('[1,2]').toString('base64url')}`, /is not a cursor/);
    await refused(`${PATH}?sort=made&cursor=${forge({ v: 2 })}`, /is not a cursor/);
    await refused(`${PATH}?sort=made&cursor=${forge({ d: 'x' })}`, /is not a cursor/);
    await refused(`${PATH}?sort=-made&cursor=${cursor}`, /sort=made/);
    await refused(`${PATH}?sort=made&cursor=${forge({ t: 'customers' })}`, /another list/);
    await refused(`${PATH}?sort=made&cursor=${forge({ k: 'yesterday-ish' })}`, /cannot read/);
    await refused(`${PATH}?sort=made&cursor=${forge({ k: '2026-13-45 99:00:00+00' })}`, /cannot read/);
    await refused(`${PATH}?sort=made&cursor=${forge({ k: null })}`, /is not a cursor/);
    // The same forged shapes on the nullable column: a NULL key is a position there.
    const onAt = forge({ s: 'at', k: null, i: 'r0' });
    const fromNull = await read(grp, `${PATH}?sort=at&per_page=2&page=2&cursor=${onAt}`);
    assert.deepEqual(fromNull.data, (await expected(grp, 'at')).slice(1, 3));
  });
});
