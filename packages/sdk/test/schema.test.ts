import { before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { wrapPglite } from '../../../src/platform/db/database.ts';
import { pgliteFromTemplate } from '../../../test/template.ts';
import { describeService, type ServiceDescription } from '../scripts/document.ts';
import { GENERATE_COMMAND, renderSchema, SCHEMA_FILE } from '../scripts/schema.ts';
import { needsIdempotencyKey } from '../src/index.ts';

// The SDK's types and rules against the service as it is in this checkout. The document does not
// depend on the engine: both runs build it on the embedded one.
describe('the SDK matches the service', () => {
  let service: ServiceDescription;
  before(async () => {
    service = await describeService(wrapPglite(await pgliteFromTemplate()));
  });

  test('src/schema.d.ts is what openapi-typescript makes of the current OpenAPI document', async () => {
    const expected = await renderSchema(service.document);
    const committed = fs.readFileSync(SCHEMA_FILE, 'utf8');
    if (committed !== expected) {
      const a = committed.split('\n');
      const b = expected.split('\n');
      const line = a.findIndex((l, i) => l !== b[i]);
      assert.fail(
        `packages/sdk/src/schema.d.ts is out of date with the service's OpenAPI document (first difference at line ${line + 1}:\n` +
          `  committed: ${JSON.stringify(a[line]?.slice(0, 160))}\n  current:   ${JSON.stringify(b[line]?.slice(0, 160))}).\n` +
          `Regenerate it with \`${GENERATE_COMMAND}\` and commit the result.`,
      );
    }
  });

  test('the SDK sends x-idempotency exactly on the POST routes that require it', () => {
    const posts = service.routes.filter((r) => r.method === 'POST' && r.url.startsWith('/v1/'));
    assert.ok(posts.length > 40, `only ${posts.length} POST routes found`);
    const wrong = posts
      .map((r) => ({ url: r.url, path: r.url.replace(/:(\w+)/g, 'x_$1'), required: r.idempotent }))
      .filter((r) => needsIdempotencyKey('POST', r.path) !== r.required)
      .map((r) => `${r.url}: the service ${r.required ? 'requires' : 'takes no'} key`);
    assert.deepEqual(wrong, [], 'update POSTS_WITHOUT_KEY in packages/sdk/src/transport.ts');
  });

  test('every path the resource helpers call exists in the document with that method', () => {
    const source = fs.readFileSync(new URL('../src/client.ts', import.meta.url), 'utf8');
    const calls = [...source.matchAll(/this\.request\('(get|post|put|delete)', '([^']+)'/g)].map((m) => [m[1]!, m[2]!] as const);
    assert.ok(calls.length > 30);
    const paths = service.document.paths as Record<string, Record<string, unknown>>;
    const missing = calls.filter(([method, path]) => !paths[path]?.[method]).map(([m, p]) => `${m} ${p}`);
    assert.deepEqual(missing, []);
  });
});
