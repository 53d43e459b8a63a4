import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { sql, type Kysely } from 'kysely';
import { createHarness, expectError, type Company, type Harness, type Res } from './harness.ts';
import { createCard, createCustomer, VISA_DECLINED } from './support/cards.ts';
import { captureStatements, explain, planNodes, type PlanNode } from './support/sql-capture.ts';

/**
 * Lists over HTTP (docs/lists.md): the keyset cursors of next_page_url/prev_page_url on the hot
 * lists (customers, charges), the count cap, bad cursors, the OFFSET slow path, and the plans
 * PostgreSQL (or PGlite) makes for them. The mechanism itself, on a table of its own with NULLs
 * and microseconds, is tested in src/platform/lists/lists.test.ts.
 */

const BASE = 'http://recaudo.test';
const local = (url: string) => url.replace(BASE, '');

async function get(co: Company, url: string): Promise<Res> {
  const res = await co.req({ url: local(url) });
  assert.equal(res.status, 200, `${url}: ${res.raw}`);
  return res;
}

/** Every page from `url` on by next_page_url. */
async function walkForward(co: Company, url: string): Promise<Res[]> {
  const pages: Res[] = [];
  for (let next: string | null = url; next; next = pages[pages.length - 1].body.next_page_url) {
    pages.push(await get(co, next));
    assert.ok(pages.length < 200, 'the walk ends');
  }
  return pages;
}

const ids = (pages: Res[]) => pages.flatMap((p) => p.body.data.map((r: { id: string }) => r.id));

describe('lists over HTTP: cursors on customers and charges', () => {
  let h: Harness;
  before(async () => {
    h = await createHarness();
  });
  after(() => h.close());

  test('customers: next_page_url gives every customer once in order, prev_page_url walks back (property: created_at ties from a frozen clock)', async () => {
    h.clock.freeze();
    try {
      await fc.assert(
        fc.asyncProperty(
          fc.array(fc.constantFrom(0, 0, 1, 1000), { maxLength: 12 }),
          fc.integer({ min: 1, max: 5 }),
          fc.constantFrom('', 'created_at', '-created_at', 'updated_at', '-updated_at'),
          async (steps, perPage, sort) => {
            const co = await h.company('Paginas SAS');
            const made: { id: string; created_at: string }[] = [];
            for (const [i, step] of [0, ...steps].entries()) {
              h.clock.advance(step);
              const res = await co.req({ url: '/v1/customers', body: { first_name: `C${i}` } });
              assert.equal(res.status, 200, res.raw);
              made.push(res.body);
            }
            // The documented order, computed here: the sort key, then id (UUIDs compare as their text).
            const desc = sort === '' || sort.startsWith('-');
            const want = [...made]
              .sort((a, b) => (a.created_at === b.created_at ? (a.id < b.id ? -1 : 1) : a.created_at < b.created_at ? -1 : 1))
              .map((c) => c.id);
            if (desc) want.reverse();

            const first = `/v1/customers?per_page=${perPage}${sort ? `&sort=${sort}` : ''}`;
            const pages = await walkForward(co, first);
            assert.deepEqual(ids(pages), want);
            assert.equal(pages.length, Math.ceil(made.length / perPage));
            for (const [i, page] of pages.entries()) {
              assert.equal(page.body.current_page, i + 1);
              assert.equal(page.body.total, made.length);
              assert.equal(page.body.has_more, i < pages.length - 1);
              assert.equal(page.body.from, i * perPage + 1);
              if (page.body.next_page_url) assert.match(page.body.next_page_url, new RegExp(`page=${i + 2}&cursor=`));
            }
            // And back, page by page, to the first.
            for (let i = pages.length - 2; i >= 0; i--) {
              const back = await get(co, pages[i + 1].body.prev_page_url);
              assert.deepEqual(back.body.data, pages[i].body.data, `back to page ${i + 1}`);
              assert.equal(back.body.current_page, i + 1);
            }
          },
        ),
        { numRuns: 8 },
      );
    } finally {
      h.clock.unfreeze();
    }
  });

  test('charges: sort by paid_at puts unpaid charges last (descending) or first (ascending), walked both ways', async () => {
    const co = await h.company('Cobros Pagina SAS');
    const customer = await createCustomer(co);
    const good = await createCard(co, customer);
    const bad = await createCard(co, customer, { card_number: VISA_DECLINED });
    h.clock.freeze();
    try {
      for (const [i, card] of [good, bad, good, good, bad, good, bad].entries()) {
        if (i % 3 === 0) h.clock.advance(1000);
        const res = await co.req({
          url: '/v1/charges',
          body: { amount: 150000 + i, title: `Cuota numero ${i}`, customer_id: customer, card_id: card.id },
        });
        assert.equal(res.status, 200, res.raw);
      }
    } finally {
      h.clock.unfreeze();
    }
    for (const sort of ['-paid_at', 'paid_at', '-created_at', 'created_at']) {
      const whole = await get(co, `/v1/charges?per_page=100&sort=${sort}`);
      const rows: { id: string; paid_at: string | null; status: string }[] = whole.body.data;
      assert.equal(rows.length, 7);
      if (sort.endsWith('paid_at')) {
        const unpaid = rows.filter((r) => r.paid_at === null).map((r) => r.id);
        assert.equal(unpaid.length, 3);
        const placed = sort.startsWith('-') ? rows.slice(4) : rows.slice(0, 3);
        assert.deepEqual(
          placed.map((r) => r.id),
          unpaid,
          `${sort}: NULLs ${sort.startsWith('-') ? 'last' : 'first'}`,
        );
      }
      for (const perPage of [1, 2, 3]) {
        const pages = await walkForward(co, `/v1/charges?per_page=${perPage}&sort=${sort}`);
        assert.deepEqual(
          ids(pages),
          rows.map((r) => r.id),
          `${sort} per_page=${perPage}`,
        );
        for (let i = pages.length - 2; i >= 0; i--) {
          const back = await get(co, pages[i + 1].body.prev_page_url);
          assert.deepEqual(back.body.data, pages[i].body.data, `${sort} per_page=${perPage}: back to page ${i + 1}`);
        }
      }
    }
    // A filter with the cursor: the walk stays inside it.
    const failed = await walkForward(co, '/v1/charges?per_page=1&filter[status]=failed');
    assert.equal(ids(failed).length, 3);
    for (const page of failed) assert.equal(page.body.data[0].status, 'failed');
  });

  test('a tampered cursor, or one made for another sort, is 400 invalid_list_query on cursor; page=N still works', async () => {
    const co = await h.company('Cursores SAS');
    for (let i = 0; i < 5; i++) {
      assert.equal((await co.req({ url: '/v1/customers', body: { first_name: `K${i}` } })).status, 200);
      h.clock.advance(1000);
    }
    const first = await get(co, '/v1/customers?per_page=2');
    const next = new URL(first.body.next_page_url);
    const cursor = next.searchParams.get('cursor')!;
    assert.ok(cursor, 'next_page_url carries a cursor');
    assert.equal(next.searchParams.get('page'), '2');

    const refused = async (url: string) => {
      const res = await co.req({ url });
      expectError(res, 400);
      assert.equal(res.body.code_name, undefined, 'invalid_list_query has no code (SPEC)');
      assert.ok(res.body.errors?.cursor?.length, res.raw);
    };
    await refused(`/v1/customers?per_page=2&page=2&cursor=${cursor.slice(0, -3)}x`);
    await refused('/v1/customers?per_page=2&page=2&cursor=%F0%9F%92%A5');
    await refused(`/v1/customers?per_page=2&page=2&cursor=${cursor}&sort=created_at`);
    const forged = Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(cursor, 'base64url').toString()), i: 'not-a-uuid' })).toString('base64url');
    await refused(`/v1/customers?per_page=2&page=2&cursor=${forged}`);
    const elsewhere = await co.req({ url: `/v1/charges?per_page=2&page=2&cursor=${cursor}` });
    expectError(elsewhere, 400);
    assert.ok(elsewhere.body.errors?.cursor, 'a customers cursor means nothing to charges');

    // The slow path: page=2 by OFFSET is the same page, and its own links carry cursors again.
    const byCursor = await get(co, first.body.next_page_url);
    const byOffset = await get(co, '/v1/customers?per_page=2&page=2');
    assert.deepEqual(byOffset.body.data, byCursor.body.data);
    assert.equal(byOffset.body.current_page, 2);
    assert.match(byOffset.body.next_page_url, /page=3&cursor=/);
    assert.equal(byOffset.body.prev_page_url, `${BASE}/v1/customers?per_page=2&page=1`);
    assert.equal(byOffset.body.last_page_url, `${BASE}/v1/customers?per_page=2&page=3`);
    const last = await get(co, byOffset.body.last_page_url);
    assert.equal(last.body.data.length, 1);
    assert.equal(last.body.next_page_url, null);
    assert.equal(last.body.has_more, false);
    // The OpenAPI document names the cursor parameter and has_more.
    const doc = await co.req({ url: '/v1/openapi.json', key: null });
    assert.equal(doc.status, 200);
    const listing = doc.body.paths['/v1/customers'].get;
    assert.ok(listing.parameters.some((p: { name: string }) => p.name === 'cursor'));
    const envelope = doc.body.components.schemas[listing.responses['200'].content['application/json'].schema.$ref.split('/').pop()];
    assert.equal(envelope.properties.has_more.type, 'boolean');
    assert.match(JSON.stringify(envelope.properties.total), /null/, 'total is nullable');
  });
});

describe('lists over HTTP: the count cap (LIST_COUNT_CAP=3)', () => {
  let h: Harness;
  let co: Company;
  before(async () => {
    h = await createHarness({ LIST_COUNT_CAP: '3' });
    co = await h.company('Tope SAS');
    for (let i = 0; i < 5; i++) {
      assert.equal((await co.req({ url: '/v1/customers', body: { first_name: `T${i}`, phone: i < 3 ? '+573001112233' : null } })).status, 200);
      h.clock.advance(1000);
    }
  });
  after(() => h.close());

  test('beyond the cap total, last_page and last_page_url are null and has_more tells of a next page; within it all is exact', async () => {
    const pages = await walkForward(co, '/v1/customers?per_page=2');
    assert.equal(pages.length, 3);
    assert.equal(ids(pages).length, 5);
    for (const [i, page] of pages.entries()) {
      assert.equal(page.body.total, null);
      assert.equal(page.body.last_page, null);
      assert.equal(page.body.last_page_url, null);
      assert.equal(page.body.current_page, i + 1);
      assert.equal(page.body.has_more, i < 2);
    }
    const capped = await get(co, '/v1/customers?per_page=2&filter[phone]=%2B573001112233');
    assert.equal(capped.body.total, 3, 'exactly the cap is still a count');
    assert.equal(capped.body.last_page, 2);
    assert.equal(capped.body.has_more, true);
  });
});

/**
 * The plans of the hot lists, first page and a cursor page, with and without filters: every page
 * read is one index range in order (an Index Scan on the list's index, no Seq Scan, no Sort), and
 * the capped count reads an index too. The company holds about a tenth of each table (three other
 * companies share it), as in a multi-tenant database; ANALYZE gives the planner true numbers.
 */
describe('lists: EXPLAIN of the hot lists uses their indexes, never a Seq Scan or a Sort', () => {
  let h: Harness;
  let db: Kysely<any>;
  let co: Company;
  let payer: string;

  before(async () => {
    h = await createHarness();
    db = h.runtime.deps.database.db as unknown as Kysely<any>;
    const companies = [
      await h.company('Planes SAS'),
      await h.company('Ruido Uno SAS'),
      await h.company('Ruido Dos SAS'),
      await h.company('Ruido Tres SAS'),
    ];
    co = companies[0];
    for (const [n, company] of companies.entries()) {
      const rows = n === 0 ? 1000 : 3000;
      const customer = await createCustomer(company);
      const card = await createCard(company, customer);
      const charge = await company.req({
        url: '/v1/charges',
        body: { amount: 150000, title: 'Cuota de octubre', customer_id: customer, card_id: card.id },
      });
      assert.equal(charge.status, 200, charge.raw);
      if (n === 0) payer = customer;
      // Copies of the API's own rows (every column as the API wrote it), three to a second, with
      // repeated phones, a quarter of the charges failed (no paid_at).
      await sql`insert into customers
        select (jsonb_populate_record(null::customers, to_jsonb(c) || jsonb_build_object(
          'id', gen_random_uuid(), 'email', 'seed' || g || '@example.com', 'phone', '+57300000000' || (g % 7),
          'created_at', c.created_at - (g / 3) * interval '1 second', 'updated_at', c.created_at - (g % 97) * interval '1 minute'))).*
        from customers c, generate_series(1, ${rows}) g where c.id = ${customer}`.execute(db);
      await sql`insert into charges
        select (jsonb_populate_record(null::charges, to_jsonb(c) || jsonb_build_object(
          'id', c.id || '_' || g, 'intent_id', c.intent_id || '_' || g, 'idempotency_key', null,
          'status', case when g % 4 = 0 then 'failed' else 'paid' end,
          'paid_at', case when g % 4 = 0 then null else c.created_at - (g / 2) * interval '1 second' end,
          'created_at', c.created_at - (g / 3) * interval '1 second'))).*
        from charges c, generate_series(1, ${rows}) g where c.id = ${charge.body.id}`.execute(db);
    }
    await sql`analyze customers`.execute(db);
    await sql`analyze charges`.execute(db);
  });
  after(() => h.close());

  /** GETs `url` and the page it links to next; checks the plan of every statement it ran on `table`. */
  async function checkPlans(url: string, table: string, index: string | string[], pagesToCheck = 2) {
    const indexes = Array.isArray(index) ? index : [index];
    let next: string | null = url;
    let checked = 0;
    for (let page = 1; page <= pagesToCheck && next; page++) {
      checked = page;
      const capture = captureStatements();
      let res: Res;
      try {
        res = await co.req({ url: local(next) });
      } finally {
        capture.stop();
      }
      assert.equal(res.status, 200, res.raw);
      const statements = capture.sent.filter((s) => s.sql.includes(`from "${table}"`));
      const reads = statements.filter((s) => s.sql.includes('__list_key'));
      const counts = statements.filter((s) => s.sql.startsWith('select count(*)'));
      // The first page counts (up to the cap); a page reached by cursor carries that count and only reads.
      const expectedCounts = page === 1 ? 1 : 0;
      assert.ok(
        reads.length >= 1 && counts.length === expectedCounts,
        `${next}: ${expectedCounts} count and a page read (${statements.length} statements)`,
      );
      for (const statement of [...reads, ...counts]) {
        const plan = await explain(db, statement);
        const nodes = planNodes(plan);
        const shown = nodes.map((n) => `${n['Node Type']} ${n['Index Name'] ?? ''} ${n['Relation Name'] ?? ''}`).join(' > ');
        const bad = nodes.filter((n: PlanNode) => n['Node Type'] === 'Seq Scan' || /Sort/.test(n['Node Type']));
        assert.deepEqual(bad, [], `${next} (page ${page}): ${statement.sql}\n${shown}`);
        if (statement.sql.includes('__list_key')) {
          const scan = nodes.find((n) => /^Index (Only )?Scan$/.test(n['Node Type']) && n['Relation Name'] === table);
          assert.ok(indexes.includes(String(scan?.['Index Name'])), `${next} (page ${page}) reads ${indexes.join(' or ')}: ${shown}`);
          if (page > 1) assert.match(String(scan?.['Index Cond']), /ROW\(|IS NULL/, `the cursor is an index condition: ${scan?.['Index Cond']}`);
        }
      }
      next = res.body.next_page_url;
    }
    assert.equal(checked, pagesToCheck, `${url}: ${pagesToCheck} pages read`);
  }

  test('GET /v1/customers: default order, updated_at, filters', async () => {
    await checkPlans('/v1/customers?per_page=20', 'customers', 'customers_list');
    await checkPlans('/v1/customers?per_page=20&sort=-updated_at', 'customers', 'customers_list_updated');
    await checkPlans('/v1/customers?per_page=20&sort=updated_at', 'customers', 'customers_list_updated');
    await checkPlans('/v1/customers?per_page=20&filter[phone]=%2B573000000003', 'customers', 'customers_phone');
    await checkPlans('/v1/customers?filter[email]=seed77@example.com', 'customers', 'customers_email', 1);
  });

  test('GET /v1/charges: default order, paid_at both ways (its NULLs too), filters', async () => {
    await checkPlans('/v1/charges?per_page=20', 'charges', 'charges_list');
    await checkPlans('/v1/charges?per_page=20&sort=created_at', 'charges', 'charges_list');
    await checkPlans('/v1/charges?per_page=20&sort=-paid_at', 'charges', 'charges_paid');
    await checkPlans('/v1/charges?per_page=20&sort=paid_at', 'charges', 'charges_paid');
    await checkPlans('/v1/charges?per_page=20&filter[status]=failed', 'charges', 'charges_list_status');
    await checkPlans(`/v1/charges?per_page=20&filter[customer_id]=${payer}`, 'charges', 'charges_customer');
    const since = new Date(Date.now() - 86_400_000).toISOString();
    await checkPlans(`/v1/charges?per_page=20&filter[status]=paid&filter[created_at][gte]=${since}`, 'charges', 'charges_list_status');
    // Every seeded charge is a card charge: walking the list's own index and filtering is as good a plan.
    await checkPlans('/v1/charges?per_page=20&filter[payment_method_type]=card', 'charges', ['charges_list_method', 'charges_list']);
  });
});
