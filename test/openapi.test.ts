import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { gunzipSync } from 'node:zlib';
import { createRequire } from 'node:module';
import ts from 'typescript';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { compileErrors, validate } from '@readme/openapi-parser';
import openapiTS, { astToString } from 'openapi-typescript';
import { createHarness, send, type Company, type Harness } from './harness.ts';
import { createCard, createCustomer } from './support/cards.ts';
import { Errors } from '../src/platform/errors/registry.ts';
import { EVENT_TYPES } from '../src/modules/events/catalog.ts';
import { RESOURCE_SCHEMA_NAMES } from '../src/modules/api-docs/names.ts';

/**
 * The OpenAPI document as generators and people take it (docs/openapi.md): a real validator
 * (@readme/openapi-parser, OpenAPI 3.1) and openapi-typescript (whose output must type-check and
 * carry the named schemas) run on the document the service serves; every operation has a unique
 * operationId and published ones never change; what the document says about security, idempotency,
 * rate limits, examples and webhook bodies is checked against the service's own behaviour.
 */

const addFormats = createRequire(import.meta.url)('ajv-formats') as (ajv: Ajv2020) => Ajv2020;
const FIXTURE = path.join(path.dirname(new URL(import.meta.url).pathname), 'fixtures', 'operation-ids.json');
const METHODS = ['get', 'put', 'post', 'delete', 'patch'];

type Json = any;
interface Op {
  key: string; // "POST /v1/customers"
  method: string;
  path: string;
  op: Json;
}

function operations(doc: Json): Op[] {
  const out: Op[] = [];
  for (const [p, item] of Object.entries<Json>(doc.paths))
    for (const m of METHODS) if (item[m]) out.push({ key: `${m.toUpperCase()} ${p}`, method: m.toUpperCase(), path: p, op: item[m] });
  return out;
}

/** A JSON pointer into the document (for ajv refs to inline schemas). */
const pointer = (...parts: string[]) => '#/' + parts.map((p) => encodeURIComponent(p.replace(/~/g, '~0').replace(/\//g, '~1'))).join('/');

describe('OpenAPI document', () => {
  let h: Harness;
  let co: Company;
  let doc: Json;
  let ajv: Ajv2020;
  const check = (ref: string, value: unknown): string | null => {
    const validator = ajv.getSchema(`openapi.json${ref}`) ?? ajv.compile({ $ref: `openapi.json${ref}` });
    return validator(value) ? null : ajv.errorsText(validator.errors, { dataVar: 'example' });
  };

  before(async () => {
    h = await createHarness();
    co = await h.company('Documentada SAS');
    const res = await send(h.app, { url: '/v1/openapi.json' });
    assert.equal(res.status, 200);
    doc = res.body;
    ajv = addFormats(new Ajv2020({ strict: false, allErrors: true, validateFormats: true }));
    ajv.addSchema(doc, 'openapi.json');
  });
  after(() => h?.close());

  test('a real validator accepts it as OpenAPI 3.1', async () => {
    assert.equal(doc.openapi, '3.1.0');
    const result = await validate(structuredClone(doc));
    assert.ok(result.valid, result.valid ? '' : compileErrors(result));
    assert.deepEqual(result.warnings, []);
  });

  test('openapi-typescript generates types that compile and name the schemas, operations and webhooks', async () => {
    const started = Date.now();
    const source = astToString(await openapiTS(structuredClone(doc)));
    for (const name of ['Customer', 'Charge', 'Payment', 'Invoice', 'Error', 'CustomerList', 'ChargeEvent', 'WebhookEvent']) {
      assert.match(source, new RegExp(`^        ${name}: `, 'm'), `components.schemas.${name} is generated`);
    }
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'recaudo-openapi-ts-'));
    try {
      fs.writeFileSync(path.join(dir, 'schema.ts'), source);
      // What an SDK writes against the generated types: it must type-check in strict mode.
      fs.writeFileSync(
        path.join(dir, 'use.ts'),
        `import type { components, operations, paths, webhooks } from './schema.ts';
type Customer = components['schemas']['Customer'];
type Charge = components['schemas']['Charge'];
type ChargeList = components['schemas']['ChargeList'];
type Failure = components['schemas']['Error'];
type CreateCharge = NonNullable<operations['createCharge']['requestBody']>['content']['application/json'];
type Paid = NonNullable<webhooks['charge.paid']['post']['requestBody']>['content']['application/json'];
type Idempotency = operations['createCustomer']['parameters']['header']['x-idempotency'];
export const customerId = (c: Customer): string => c.id;
export const amount = (c: Charge): number => c.amount;
export const first = (l: ChargeList): Charge | undefined => l.data[0];
export const codeName = (e: Failure): string | undefined => e.code_name;
export const body: CreateCharge = { amount: 150000, title: 'Cuota de octubre', customer_id: 'x', card_id: 'card_x' };
export const paidData = (e: Paid): Charge => e.data;
export const key: Idempotency = 'a-unique-value';
export type Path = keyof paths;
`,
      );
      const program = ts.createProgram([path.join(dir, 'use.ts')], {
        strict: true,
        noEmit: true,
        target: ts.ScriptTarget.ES2022,
        module: ts.ModuleKind.NodeNext,
        moduleResolution: ts.ModuleResolutionKind.NodeNext,
        allowImportingTsExtensions: true,
        skipLibCheck: true,
        types: [],
      });
      const diagnostics = ts.getPreEmitDiagnostics(program).map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n'));
      assert.deepEqual(diagnostics, []);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
    console.log(`openapi-typescript: ${source.length} characters of types, generated and type-checked in ${Date.now() - started} ms`);
  });

  test('every operation has a unique operationId, and the published ones never change', () => {
    const ops = operations(doc);
    const ids = ops.map((o) => o.op.operationId);
    assert.ok(ops.length >= 150, `${ops.length} operations`);
    assert.deepEqual(
      ids.filter((id) => typeof id !== 'string' || !/^[a-z][A-Za-z0-9]+$/.test(id)),
      [],
      'operationIds are lowerCamelCase',
    );
    const webhookIds = Object.values<Json>(doc.webhooks).map((w) => w.post.operationId);
    const all = [...ids, ...webhookIds];
    assert.equal(new Set(all).size, all.length, `duplicate operationIds: ${all.filter((id, i) => all.indexOf(id) !== i).join(', ')}`);
    // Stability: an operationId, once published, names the same operation for good (SDK function
    // names). New operations may be added to the fixture; none may change or disappear.
    const published: Record<string, string> = JSON.parse(fs.readFileSync(FIXTURE, 'utf8'));
    const now = Object.fromEntries(ops.map((o) => [o.op.operationId, o.key]));
    const changed = Object.entries(published).filter(([id, key]) => now[id] !== key);
    assert.deepEqual(
      changed.map(([id, key]) => `${id} was ${key}, now ${now[id] ?? 'gone'}`),
      [],
      'published operationIds changed; keep them (src/modules/api-docs/operations.ts) or, for a deliberate break, update test/fixtures/operation-ids.json',
    );
  });

  test('security: the secret key by default, the publishable key only on POST /v1/tokens, the payer token on the session routes, none on public routes', () => {
    const schemes = doc.components.securitySchemes;
    assert.deepEqual(Object.keys(schemes).sort(), ['customerToken', 'publishableKey', 'secretKey']);
    assert.equal(schemes.secretKey.scheme, 'bearer');
    assert.equal(schemes.publishableKey.scheme, 'bearer');
    assert.deepEqual({ in: schemes.customerToken.in, name: schemes.customerToken.name }, { in: 'header', name: 'X-Customer-Token' });
    const byKey = new Map(operations(doc).map((o) => [o.key, o.op]));
    const publishable: string[] = [];
    for (const route of h.routes) {
      const key = `${route.method} ${route.url.replace(/:([A-Za-z0-9_]+)/g, '{$1}')}`;
      const op = byKey.get(key);
      if (!op) continue; // hidden routes (rail callbacks kept out of the document)
      const schemes = (op.security as Json[]).flatMap((s) => Object.keys(s)).sort();
      if (route.auth === 'none') assert.deepEqual(op.security, [], `${key} needs no key`);
      else if (route.auth === 'publishable') {
        assert.deepEqual(schemes, ['publishableKey'], key);
        publishable.push(key);
      } else assert.ok(schemes.includes('secretKey') && !schemes.includes('publishableKey'), `${key}: ${JSON.stringify(op.security)}`);
      if (key.startsWith('GET /v1/customers/session') || /^(POST|DELETE) \/v1\/customers\/session/.test(key))
        assert.deepEqual(schemes, ['customerToken', 'secretKey'], `${key} takes the payer token`);
    }
    assert.deepEqual(publishable, ['POST /v1/tokens']);
  });

  test('x-idempotency is declared, required, on exactly the POSTs that need it (and the service agrees)', async () => {
    const byKey = new Map(operations(doc).map((o) => [o.key, o.op]));
    const param = doc.components.parameters['x-idempotency'];
    assert.deepEqual({ name: param.name, in: param.in, required: param.required }, { name: 'x-idempotency', in: 'header', required: true });
    assert.equal(doc.components.parameters['Idempotency-Key'].name, 'Idempotency-Key');
    let declared = 0;
    const without: string[] = [];
    for (const route of h.routes) {
      const key = `${route.method} ${route.url.replace(/:([A-Za-z0-9_]+)/g, '{$1}')}`;
      const op = byKey.get(key);
      if (!op) continue;
      const refs = (op.parameters ?? []).map((p: Json) => p.$ref);
      const needs = route.method === 'POST' && route.idempotent && route.auth !== 'none';
      assert.equal(refs.includes('#/components/parameters/x-idempotency'), needs, `${key} declares x-idempotency: ${needs}`);
      if (needs) {
        declared++;
        assert.ok(refs.includes('#/components/parameters/Idempotency-Key'), key);
      } else if (route.method === 'POST') without.push(key);
    }
    assert.ok(declared >= 60, `${declared} POSTs declare x-idempotency`);
    assert.ok(without.includes('POST /v1/flows'), without.join(', '));
    // The service: a POST the document marks is refused without the header; Idempotency-Key is accepted instead.
    const refused = await co.req({ url: '/v1/customers', body: { first_name: 'Ana' }, idem: false });
    assert.equal(refused.status, 409, refused.raw);
    assert.equal(refused.body.code_name, 'idempotency_error');
    const alias = await co.req({ url: '/v1/customers', body: { first_name: 'Ana' }, idem: false, headers: { 'idempotency-key': 'doc-alias-1' } });
    assert.equal(alias.status, 200, alias.raw);
  });

  test('every authenticated operation declares 429 with Retry-After and the rate-limit headers', () => {
    const tooMany = doc.components.responses.TooManyRequests;
    assert.deepEqual(Object.keys(tooMany.headers).sort(), ['Retry-After', 'X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-Request-Id']);
    for (const { key, op } of operations(doc)) {
      if (op.security.length === 0) continue;
      assert.ok(op.responses['429'], `${key} declares 429`);
      const ok = Object.entries<Json>(op.responses).find(([status]) => status.startsWith('2'))?.[1];
      if (ok && !ok.$ref)
        assert.ok(ok.headers?.['X-RateLimit-Limit'] && ok.headers?.['X-RateLimit-Remaining'], `${key}: rate-limit headers on success`);
    }
  });

  test('named component schemas: the resources, the error envelope, list envelopes and webhook bodies; request bodies stay inline', () => {
    const schemas = doc.components.schemas;
    for (const name of [...RESOURCE_SCHEMA_NAMES, 'Error', 'WebhookEvent']) assert.ok(schemas[name], `components.schemas.${name}`);
    for (const name of ['CustomerList', 'ChargeList', 'PaymentList', 'InvoiceList', 'EventList'])
      assert.ok(schemas[name], `components.schemas.${name}`);
    assert.equal(
      Object.keys(schemas).filter((n) => n.endsWith('Input')).length,
      0,
      'no unused input copies of the registry schemas are left in the document',
    );
    const refs = (o: Json) => JSON.stringify(o ?? {}).match(/"\$ref":"#\/components\/schemas\/[^"]+"/g) ?? [];
    for (const { key, op } of operations(doc)) {
      // The schema fuzzers (test/fuzz.test.ts, test/robustness.test.ts) read request schemas as they are.
      assert.deepEqual(refs(op.requestBody), [], `${key}: request body inline`);
      assert.deepEqual(refs(op.parameters), [], `${key}: parameters inline`);
    }
    const get = doc.paths['/v1/customers/{id}'].get.responses['200'].content['application/json'].schema;
    assert.deepEqual(get, { $ref: '#/components/schemas/Customer' });
    const errorRef = doc.paths['/v1/customers'].post.responses['422'];
    assert.deepEqual(errorRef, { $ref: '#/components/responses/UnprocessableEntity' });
    console.log(`${Object.keys(schemas).length} named component schemas, ${Object.keys(doc.components.responses).length} shared error responses`);
  });

  test('every example validates against its own schema', () => {
    const problems: string[] = [];
    let count = 0;
    for (const [name, schema] of Object.entries<Json>(doc.components.schemas)) {
      for (const [i, example] of (schema.examples ?? []).entries()) {
        count++;
        const error = check(pointer('components', 'schemas', name), example);
        if (error) problems.push(`components.schemas.${name}.examples[${i}]: ${error}`);
      }
    }
    for (const [name, response] of Object.entries<Json>(doc.components.responses)) {
      const media = response.content['application/json'];
      count++;
      const error = check(pointer('components', 'responses', name, 'content', 'application/json', 'schema'), media.example);
      if (error) problems.push(`components.responses.${name}: ${error}`);
    }
    let requests = 0;
    for (const { path: p, method, op } of operations(doc)) {
      const media = op.requestBody?.content?.['application/json'];
      if (media?.example === undefined) continue;
      count++;
      requests++;
      const error = check(pointer('paths', p, method.toLowerCase(), 'requestBody', 'content', 'application/json', 'schema'), media.example);
      if (error) problems.push(`${op.operationId} request example: ${error}`);
    }
    let deliveries = 0;
    for (const [type, item] of Object.entries<Json>(doc.webhooks)) {
      const media = item.post.requestBody.content['application/json'];
      if (media.example === undefined) continue;
      count++;
      deliveries++;
      const error = check(media.schema.$ref, media.example);
      if (error) problems.push(`webhook ${type} example: ${error}`);
    }
    assert.deepEqual(problems, []);
    assert.ok(requests >= 30, `${requests} request examples`);
    assert.ok(deliveries >= 15, `${deliveries} webhook examples`);
    console.log(`${count} examples validated (${requests} request bodies, ${deliveries} webhook deliveries)`);
  });

  test('webhooks: one per catalogue type, and the events the service emits match their documented body', async () => {
    assert.deepEqual(Object.keys(doc.webhooks).sort(), [...EVENT_TYPES].sort());
    for (const [type, item] of Object.entries<Json>(doc.webhooks)) {
      const post = item.post;
      assert.deepEqual(
        post.parameters.map((p: Json) => p.name),
        ['Signature', 'x-webhook-token', 'x-webhook-event', 'x-webhook-id'],
        type,
      );
      assert.match(post.description, /legacy/, `${type} mentions the legacy body`);
      assert.match(post.requestBody.content['application/json'].schema.$ref, /^#\/components\/schemas\/[A-Za-z]+Event$/);
    }
    // Make events of several kinds, then check what GET /v1/events (the delivered bodies) holds.
    const customer = await createCustomer(co);
    const card = (await createCard(co, customer)).id;
    const paid = await co.req({ url: '/v1/charges', body: { amount: 150000, title: 'Cuota', customer_id: customer, card_id: card } });
    assert.equal(paid.status, 200, paid.raw);
    const refundable = await co.req({
      url: '/v1/charges',
      body: { amount: 90000, title: 'Cuota', customer_id: customer, card_id: card, test_scenario: 'refundable' },
    });
    assert.equal((await co.req({ url: `/v1/charges/${refundable.body.id}/refund`, body: {} })).status, 200);
    const declined = await createCard(co, customer, { card_number: '4000000000000002' });
    assert.equal(
      (await co.req({ url: '/v1/charges', body: { amount: 5000, title: 'Cuota', customer_id: customer, card_id: declined.id } })).status,
      200,
    );
    const payment = await co.req({ url: '/v1/payments', body: { title: 'Factura 1', amount: 150000 } });
    assert.equal((await co.req({ url: `/v1/payments/${payment.body.id}/resolve`, body: { action: 'approve' } })).status, 200);
    assert.equal((await co.req({ url: `/v1/customers/${customer}/transactions`, body: { amount: 1000, concept: 'Recarga' } })).status, 200);
    const events = await co.req({ url: '/v1/events?per_page=100' });
    assert.equal(events.status, 200, events.raw);
    const types = new Set<string>();
    const problems: string[] = [];
    for (const event of events.body.data) {
      types.add(event.event);
      const error = check(doc.webhooks[event.event].post.requestBody.content['application/json'].schema.$ref, event);
      if (error) problems.push(`${event.event}: ${error}`);
    }
    assert.deepEqual(problems, []);
    for (const t of [
      'charge.created',
      'charge.paid',
      'charge.failed',
      'charge.refunded',
      'payment.created',
      'payment.approved',
      'wallet.transaction.created',
    ])
      assert.ok(types.has(t), `${t} was emitted and checked (${[...types].join(', ')})`);
  });

  test('the introduction covers authentication, test mode, idempotency, errors, rate limits and webhooks; every registry code is in the document', () => {
    const intro: string = doc.info.description;
    for (const heading of ['## Authentication', '## Test mode', '## Idempotency', '## Errors', '## Rate limits', '## Webhooks'])
      assert.ok(intro.includes(heading), heading);
    const text = JSON.stringify(doc);
    const missing = Object.values(Errors)
      .filter((d) => d.codeName !== null)
      .filter((d) => !text.includes(`\`${d.codeName}\``))
      .map((d) => d.codeName);
    assert.deepEqual(missing, []);
    for (const d of Object.values(Errors).filter((e) => typeof e.code === 'number'))
      assert.ok(text.includes(`(${d.code})`), `code ${d.code} is listed`);
  });

  test('/docs is served from this process (no CDN, no web fonts), the script compressed and cached', async () => {
    const page = await h.app.inject({ method: 'GET', url: '/docs/' });
    assert.equal(page.statusCode, 200);
    assert.match(String(page.headers['content-type']), /text\/html/);
    assert.match(page.body, /<script[^>]+src="js\/scalar\.js"/);
    assert.match(page.body, /\.\.\/v1\/openapi\.json/);
    assert.match(page.body, /name="viewport"/);
    assert.doesNotMatch(page.body, /(src|href)="(https?:)?\/\//, 'no asset from another host');
    const script = await h.app.inject({ method: 'GET', url: '/docs/js/scalar.js', headers: { 'accept-encoding': 'gzip, br' } });
    assert.equal(script.statusCode, 200);
    assert.equal(script.headers['content-encoding'], 'gzip');
    assert.match(String(script.headers['cache-control']), /max-age=86400/);
    const plain = gunzipSync(script.rawPayload);
    assert.ok(plain.length > 1_000_000 && script.rawPayload.length < plain.length / 2, `${script.rawPayload.length} of ${plain.length} bytes`);
    const identity = await h.app.inject({ method: 'GET', url: '/docs/js/scalar.js', headers: { 'accept-encoding': 'identity' } });
    assert.equal(identity.headers['content-encoding'], undefined);
    assert.equal(identity.rawPayload.length, plain.length);
    console.log(`/docs/js/scalar.js: ${plain.length} bytes, ${script.rawPayload.length} gzip-compressed`);
  });
});

describe('OpenAPI: the rate limit as documented', () => {
  let h: Harness;
  before(async () => {
    h = await createHarness({ RATE_LIMIT_TEST: '1' });
  });
  after(() => h?.close());

  test('past the limit: 429 with Retry-After and X-RateLimit-*, as the document says', async () => {
    const co = await h.company();
    const answers = [];
    for (let i = 0; i < 5; i++) answers.push(await co.req({ url: '/v1/customers/00000000-0000-4000-8000-000000000000' }));
    const allowed = answers.find((a) => a.status !== 429)!;
    assert.equal(allowed.headers['x-ratelimit-limit'], '1');
    const limited = answers.find((a) => a.status === 429);
    assert.ok(limited, `statuses ${answers.map((a) => a.status).join(', ')}`);
    assert.match(String(limited.headers['retry-after']), /^\d+$/);
    assert.equal(limited.headers['x-ratelimit-remaining'], '0');
    assert.equal(typeof limited.body.message, 'string');
  });
});
