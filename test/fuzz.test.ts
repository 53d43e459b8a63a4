import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { createHarness, type Company, type Harness } from './harness.ts';

/**
 * Issue 11's schema-driven fuzz: every operation of /v1/openapi.json, with wrong types, huge
 * strings, deep nesting, bad UTF-8, prototype keys, garbage ids and another company's ids. What must
 * hold: never a 5xx, never a hang (each request is bounded), every error in the registry's envelope,
 * another company's resource never answered, Object.prototype never polluted, and the service still
 * serving afterwards. Deterministic: no randomness in what is sent.
 */

const REQUEST_BOUND_MS = 10_000;

interface Operation {
  method: string;
  path: string;
  params: { name: string; in: string }[];
  bodySchema: { properties?: Record<string, { type?: string | string[] }> } | null;
}

const nestedArray = (depth: number) => '['.repeat(depth) + ']'.repeat(depth);

/** Values that are wrong for almost any field. */
const WRONG_VALUES: unknown[] = [
  null,
  true,
  -1,
  1e308,
  '9223372036854775808',
  'x'.repeat(100_000),
  [],
  { __proto__: null, nested: { deeper: ['x'] } },
  '\u0000',
  'ñ\uD800',
];

/** Whole bodies that are wrong for every operation: [content type, raw payload]. */
const RAW_BODIES: [string, string | Buffer][] = [
  ['application/json', Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xc3, 0x28, 0xff, 0x22, 0x7d])], // invalid UTF-8
  ['application/json', nestedArray(10_000)],
  ['application/json', `{"a":${nestedArray(5_000)}}`],
  ['application/json', '[]'],
  ['application/json', '"text"'],
  ['application/json', '12'],
  ['application/json', 'null'],
  ['application/json', '{"__proto__":{"polluted":true},"constructor":{"prototype":{"polluted":true}}}'],
  ['application/json', '{"a":'],
  ['application/json', ''],
  ['text/plain', 'hello'],
  ['application/x-www-form-urlencoded', 'a=1&b=2'],
  ['application/json', `{"x":"${'y'.repeat(900_000)}"}`],
];

const GARBAGE_IDS = ['x'.repeat(600), '%00', '..%2F..%2Fetc%2Fpasswd', '__proto__', 'constructor', '%C3%28', '%FF%FE', '-1', '1e308', 'ch_', '00000000-0000-0000-0000-000000000000'];
const QUERY_VALUES = ['', 'x'.repeat(5_000), '-1', '1e308', '%00', '%FF', '__proto__', '9223372036854775808'];

function operations(doc: { paths: Record<string, Record<string, any>> }): Operation[] {
  const out: Operation[] = [];
  for (const [path, ops] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(ops)) {
      if (!['get', 'post', 'put', 'patch', 'delete'].includes(method)) continue;
      const bodySchema = op.requestBody?.content?.['application/json']?.schema ?? null;
      out.push({ method: method.toUpperCase(), path, params: (op.parameters ?? []).map((p: { name: string; in: string }) => ({ name: p.name, in: p.in })), bodySchema });
    }
  }
  return out;
}

describe('schema-driven fuzz of every operation', () => {
  let h: Harness;
  let victim: Company;
  let attacker: Company;
  let ops: Operation[];
  /** The victim's resource ids by the collection the path starts with. */
  const victimIds: Record<string, string> = {};
  const failures: string[] = [];
  let requests = 0;

  before(async () => {
    h = await createHarness();
    victim = await h.company('Víctima SAS');
    attacker = await h.company('Atacante SAS');
    const doc = await h.app.inject({ method: 'GET', url: '/v1/openapi.json' });
    ops = operations(JSON.parse(doc.body));
    const customer = (await victim.req({ url: '/v1/customers', body: { first_name: 'Ana', last_name: 'Gómez', email: 'ana@example.com' } })).body.id;
    const year = String(new Date().getUTCFullYear() + 3);
    const card = (await victim.req({ url: '/v1/cards', body: { card_number: '4242424242424242', expiration_month: '12', expiration_year: year, cvv: '123', holder_name: 'Ana Gómez', customer_id: customer, authorization: true } })).body.id;
    const charge = (await victim.req({ url: '/v1/charges', body: { amount: 150000, title: 'Cuota', customer_id: customer, card_id: card } })).body.id;
    const payment = (await victim.req({ url: '/v1/payments', body: { title: 'Factura', amount: 150000 } })).body.id;
    const webhook = (await victim.req({ url: '/v1/webhooks', body: { name: 'Fuzz hook', url: 'http://localhost:9/hook', events: ['charge.paid'] } })).body.data.id;
    Object.assign(victimIds, { customers: customer, cards: card, charges: charge, 'request-to-pay': charge, payments: payment, webhooks: webhook });
    for (const [name, id] of Object.entries(victimIds)) assert.ok(id, `fixture ${name}`);
  });
  after(() => h.close());

  /** One request, bounded; records a failure for a 5xx, a hang or an error outside the envelope. */
  async function probe(label: string, method: string, url: string, opts: { key: string; contentType?: string; payload?: string | Buffer }): Promise<{ status: number; body: string }> {
    requests++;
    const headers: Record<string, string> = { authorization: `Bearer ${opts.key}` };
    if (method === 'POST') headers['x-idempotency'] = randomUUID();
    if (opts.contentType) headers['content-type'] = opts.contentType;
    let timer: NodeJS.Timeout | undefined;
    const hang = new Promise<null>((resolve) => (timer = setTimeout(() => resolve(null), REQUEST_BOUND_MS)));
    const res = await Promise.race([h.app.inject({ method: method as 'GET', url, headers, payload: opts.payload }), hang]);
    clearTimeout(timer);
    if (!res) {
      failures.push(`${label}: no answer within ${REQUEST_BOUND_MS} ms`);
      return { status: 0, body: '' };
    }
    if (res.statusCode >= 500) failures.push(`${label}: ${res.statusCode} ${res.body.slice(0, 300)}`);
    else if (res.statusCode >= 400 && (res.headers['content-type'] ?? '').toString().includes('json')) {
      const body = JSON.parse(res.body);
      if (typeof body.message !== 'string') failures.push(`${label}: ${res.statusCode} without the error envelope: ${res.body.slice(0, 200)}`);
    }
    return { status: res.statusCode, body: res.body };
  }

  const fill = (path: string, id: string) => path.replace(/\{[^}]+\}/g, id);
  const collection = (path: string) => path.split('/')[2];

  test('wrong and hostile bodies on every write operation: no 5xx, no hang', { timeout: 600_000 }, async () => {
    for (const op of ops.filter((o) => o.method !== 'GET' && o.method !== 'DELETE')) {
      const id = victimIds[collection(op.path)] ?? GARBAGE_IDS[0];
      const url = fill(op.path, id);
      for (const [contentType, payload] of RAW_BODIES) {
        await probe(`${op.method} ${op.path} raw ${contentType} ${String(payload).slice(0, 30)}`, op.method, url, { key: victim.keys.test, contentType, payload });
      }
      const properties = Object.keys(op.bodySchema?.properties ?? {}).slice(0, 8);
      for (const property of properties) {
        for (const value of WRONG_VALUES) {
          const payload = JSON.stringify({ [property]: value });
          await probe(`${op.method} ${op.path} ${property}=${JSON.stringify(value)?.slice(0, 30)}`, op.method, url, { key: victim.keys.test, contentType: 'application/json', payload });
        }
        // Prototype keys next to the property.
        await probe(`${op.method} ${op.path} ${property} with __proto__`, op.method, url, {
          key: victim.keys.test,
          contentType: 'application/json',
          payload: `{"${property}":{"__proto__":{"polluted":1}},"__proto__":{"polluted":1},"constructor":{"prototype":{"polluted":1}}}`,
        });
      }
    }
    assert.deepEqual(failures, [], `${failures.length} failures of ${requests} requests:\n${failures.slice(0, 40).join('\n')}`);
  });

  test('garbage ids and hostile query strings on every operation: no 5xx, no hang', { timeout: 600_000 }, async () => {
    for (const op of ops) {
      if (op.params.some((p) => p.in === 'path')) {
        for (const id of GARBAGE_IDS) await probe(`${op.method} ${op.path} id=${id.slice(0, 20)}`, op.method, fill(op.path, id), { key: victim.keys.test, contentType: op.method === 'GET' ? undefined : 'application/json', payload: op.method === 'GET' ? undefined : '{}' });
      }
      if (op.method !== 'GET') continue;
      const base = fill(op.path, victimIds[collection(op.path)] ?? 'x');
      for (const param of op.params.filter((p) => p.in === 'query')) {
        for (const value of QUERY_VALUES) await probe(`GET ${op.path}?${param.name}=${value.slice(0, 20)}`, 'GET', `${base}?${encodeURIComponent(param.name)}=${value}`, { key: victim.keys.test });
      }
      await probe(`GET ${op.path} repeated params`, 'GET', `${base}?limit=1&limit=2&page=1&page=x&sort=a&sort[]=b&filter[id][]=1`, { key: victim.keys.test });
    }
    assert.deepEqual(failures, [], `${failures.length} failures of ${requests} requests:\n${failures.slice(0, 40).join('\n')}`);
  });

  test("another company's ids are never answered with its data", { timeout: 600_000 }, async () => {
    const leaks: string[] = [];
    const before = (await victim.req({ url: `/v1/charges/${victimIds.charges}` })).body;
    for (const op of ops.filter((o) => o.params.some((p) => p.in === 'path' && p.name === 'id'))) {
      const id = victimIds[collection(op.path)];
      if (!id) continue;
      const res = await probe(`${op.method} ${op.path} (other company)`, op.method, fill(op.path, id), { key: attacker.keys.test, contentType: op.method === 'GET' ? undefined : 'application/json', payload: op.method === 'GET' ? undefined : '{}' });
      if (res.status >= 200 && res.status < 300) leaks.push(`${op.method} ${op.path}: ${res.status} ${res.body.slice(0, 200)}`);
    }
    assert.deepEqual(leaks, [], 'the attacker reads or changes nothing of the victim');
    assert.deepEqual(failures, []);
    // The victim's resources are as they were before the attacker's requests.
    assert.deepEqual((await victim.req({ url: `/v1/charges/${victimIds.charges}` })).body, before);
  });

  test('afterwards: Object.prototype is clean and the service serves as before', async () => {
    assert.equal(({} as Record<string, unknown>).polluted, undefined);
    assert.equal((Object.prototype as Record<string, unknown>).polluted, undefined);
    const res = await victim.req({ url: '/v1/customers', body: { first_name: 'Luis' } });
    assert.equal(res.status, 200, res.raw);
    assert.ok(requests > 1000, `${requests} requests sent`);
    console.log(`FUZZ-SUMMARY ${JSON.stringify({ operations: ops.length, requests, failures: failures.length })}`);
  });
});
