import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHarness, type Company, type Harness, type Res } from './harness.ts';

/**
 * No input makes the service answer 500: for every route, malformed JSON, wrong types for every
 * documented body field, huge strings, odd ids and unknown or hostile query parameters.
 */
const HUGE = 'x'.repeat(200_000);
const WRONG_VALUES: unknown[] = [
  null,
  123456789012345678901234567890,
  -1,
  1.5,
  true,
  'text',
  '',
  HUGE,
  [],
  [1, 'a'],
  {},
  { nested: { deep: [null] } },
  '\u0000\uFFFF😀',
  '2026-13-45',
  'NaN',
];
const ODD_IDS = [
  'not-a-uuid',
  '00000000-0000-0000-0000-000000000000',
  'x'.repeat(400),
  '%00',
  '%F0%9F%98%80',
  "1' OR '1'='1",
  '..%2F..%2Fetc',
  'ch_01m7zx20s70qez4k542m909n4r',
];
const ODD_QUERIES = [
  'foo=bar',
  'page=-1',
  'page=abc',
  'per_page=1e3',
  'sort=;drop table customers',
  'filter[id]=' + 'z'.repeat(5000),
  'filter[status]=%00',
  'filter[=x',
  'filter]=x',
  'page[]=1&page[]=2',
  'limit=-5',
  'banklink=maybe',
  'order=sideways',
  'filter[created_at][gte]=yesterday',
  'filter[amount]=abc',
];

type JsonSchema = {
  type?: string | string[];
  properties?: Record<string, JsonSchema>;
  items?: JsonSchema;
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
};

function fieldPaths(schema: JsonSchema | undefined, prefix = '', depth = 0): string[] {
  if (!schema || depth > 3) return [];
  const variants = [schema, ...(schema.anyOf ?? []), ...(schema.oneOf ?? [])];
  const out: string[] = [];
  for (const v of variants) {
    for (const [name, child] of Object.entries(v.properties ?? {})) {
      const path = prefix ? `${prefix}.${name}` : name;
      out.push(path, ...fieldPaths(child, path, depth + 1));
    }
  }
  return [...new Set(out)];
}

function setPath(path: string, value: unknown): Record<string, unknown> {
  const parts = path.split('.');
  const root: Record<string, unknown> = {};
  let cur = root;
  parts.forEach((p, i) => {
    if (i === parts.length - 1) cur[p] = value;
    else cur = (cur[p] = {}) as Record<string, unknown>;
  });
  return root;
}

describe('no input answers 500', () => {
  let h: Harness;
  let co: Company;
  let doc: { paths: Record<string, Record<string, { requestBody?: { content?: Record<string, { schema?: JsonSchema }> } }>> };
  before(async () => {
    h = await createHarness();
    co = await h.company();
    doc = (await co.req({ url: '/v1/openapi.json' })).body;
  });
  after(() => h.close());

  function check(res: Res, label: string) {
    assert.ok(res.status < 500, `${label} answered ${res.status}: ${res.raw.slice(0, 300)}`);
    assert.equal(typeof res.body?.message === 'string' || res.status < 400 || res.status === 204, true, `${label}: error without message`);
    assert.ok(!/at .*\.ts:\d+/.test(res.raw), `${label}: stack trace leaked`);
  }

  test('every route survives hostile input', async () => {
    // A real customer lets id-taking routes get past the lookup and into body validation.
    const customer = (await co.req({ url: '/v1/customers', body: { first_name: 'Fuzz' } })).body;
    let requests = 0;
    for (const route of h.routes.filter((r) => r.auth !== 'none')) {
      const docPath = route.url.replace(/:([A-Za-z_]+)/g, '{$1}');
      const op = doc.paths[docPath]?.[route.method.toLowerCase()];
      const schema = op?.requestBody?.content?.['application/json']?.schema;
      const ids = route.url.includes(':') ? [customer.id, ...ODD_IDS] : [''];
      for (const id of ids) {
        const url = route.url.replace(/:[A-Za-z_]+/g, id);
        const label = `${route.method} ${url.slice(0, 80)}`;
        const method = route.method as 'GET' | 'DELETE' | 'POST' | 'PUT';
        if (method === 'GET' || method === 'DELETE') {
          for (const q of ODD_QUERIES) {
            check(await co.req({ method, url: `${url}?${q}` }), `${label}?${q.slice(0, 40)}`);
            requests++;
          }
          if (method === 'DELETE') check(await co.req({ method, url }), label);
          continue;
        }
        for (const raw of ['{', '{"a":', '[]', '"str"', 'null', '12', '{"__proto__":{"admin":true}}', '\u0000']) {
          check(await co.req({ method, url, body: raw }), `${label} body ${raw}`);
          requests++;
        }
        if (id !== customer.id && id !== '') continue; // field fuzzing once per route is enough
        for (const field of fieldPaths(schema)) {
          for (const value of WRONG_VALUES) {
            check(await co.req({ method, url, body: setPath(field, value) }), `${label} ${field}=${JSON.stringify(value)?.slice(0, 30)}`);
            requests++;
          }
        }
      }
    }
    assert.ok(requests > 100, `sent ${requests} hostile requests`);
  });
});
