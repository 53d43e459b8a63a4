import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import http from 'node:http';
import { ENGINE } from './harness.ts';
import { freePort } from './fault-harness.ts';
import { cliWithServer } from './support/cli.ts';

/** The operator's path, over real HTTP against the real start command and the real CLI. */
// Ports from the OS: fixed ranges collided with other suites' servers running in parallel.
const { base, env, cli, start: startServer, stop } = await cliWithServer('e2e', { RATE_LIMIT_TEST: '100000' });
const port = Number(new URL(base).port);

function api(key: string, method: string, url: string, body?: unknown) {
  return fetch(`${base}${url}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body ? { 'content-type': 'application/json', 'x-idempotency': `${Math.random()}` } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
}

describe('start command, CLI and shutdown', () => {
  let server: ChildProcess;
  before(async () => {
    server = await startServer();
  });
  after(() => stop(server, 'SIGKILL'));

  test('the CLI creates a company while the server runs, and its test key works', async () => {
    const out = cli('companies', 'create', '--name', 'Acme SAS', '--nit', '900123456', '--feature', 'campaigns', '--json');
    assert.equal(out.code, 0, out.stderr);
    const created = JSON.parse(out.stdout);
    assert.match(created.company.id, /^cmp_/);
    assert.match(created.keys.test, /^sk_test_[A-Za-z0-9]+$/);
    assert.match(created.keys.live, /^sk_live_[A-Za-z0-9]+$/);

    const res = await api(created.keys.test, 'POST', '/v1/customers', { first_name: 'Ana', email: 'ana@example.com' });
    assert.equal(res.status, 200);
    assert.ok(res.headers.get('x-request-id'));
    const customer = await res.json();
    const read = await api(created.keys.test, 'GET', `/v1/customers/${customer.id}`);
    assert.equal(read.status, 200);
    assert.equal((await read.json()).email, 'ana@example.com');

    const rotated = cli('keys', 'rotate', '--company', created.company.id, '--env', 'test', '--json');
    assert.equal(rotated.code, 0, rotated.stderr);
    const { key } = JSON.parse(rotated.stdout);
    assert.match(key, /^sk_test_/);
    assert.equal((await api(key, 'GET', '/v1/customers')).status, 200);
    if (ENGINE === 'pglite') {
      // Through the control socket the server forgets cached keys at once.
      assert.equal((await api(created.keys.test, 'GET', '/v1/customers')).status, 404);
    }
  });

  test('the CLI explains bad input', () => {
    const out = cli('companies', 'create', '--json');
    assert.equal(out.code, 2);
    assert.match(out.stderr, /--name is required/);
    const unknown = cli('keys', 'rotate', '--company', 'cmp_nope', '--env', 'test', '--json');
    assert.equal(unknown.code, 2);
    assert.match(unknown.stderr, /does not exist/);
  });

  test('a second server on the same embedded data directory refuses to start', { skip: ENGINE !== 'pglite' && 'embedded only' }, async () => {
    const res = spawnSync(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
      env: { ...env, PORT: String(await freePort()) },
      encoding: 'utf8',
      timeout: 30_000,
    });
    assert.notEqual(res.status, 0);
    assert.match(res.stdout + res.stderr, /in use by another Recaudo server/);
  });

  test('SIGTERM lets an in-flight request finish, then exits 0', async () => {
    const out = JSON.parse(cli('companies', 'create', '--name', 'Drain SAS', '--json').stdout);
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const request = (body: string, partial: boolean) =>
      new Promise<{ status: number; text: string }>((resolve, reject) => {
        const req = http.request(
          {
            host: '127.0.0.1',
            port,
            path: '/v1/customers',
            method: 'POST',
            agent,
            headers: {
              authorization: `Bearer ${out.keys.test}`,
              'content-type': 'application/json',
              'content-length': Buffer.byteLength(body),
              'x-idempotency': `${Math.random()}`,
            },
          },
          (res) => {
            let text = '';
            res.on('data', (c) => (text += c));
            res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
          },
        );
        req.on('error', reject);
        if (!partial) return req.end(body);
        // Send half the body, stop the server, then send the rest: the request is in flight across SIGTERM.
        req.write(body.slice(0, 10), () => {
          setTimeout(() => {
            server.kill('SIGTERM');
            setTimeout(() => req.end(body.slice(10)), 300);
          }, 100);
        });
      });
    // A first request opens the keep-alive connection the in-flight one reuses.
    assert.equal((await request(JSON.stringify({ first_name: 'Warm' }), false)).status, 200);
    const exited = once(server, 'exit');
    const inflight = await request(JSON.stringify({ first_name: 'In flight', last_name: 'During shutdown' }), true);
    assert.equal(inflight.status, 200, inflight.text);
    const [code] = await exited;
    assert.equal(code, 0);
    agent.destroy();
    // With the server gone the CLI opens the data directory itself.
    const direct = cli('companies', 'create', '--name', 'After SAS', '--json');
    assert.equal(direct.code, 0, direct.stderr);
    assert.match(JSON.parse(direct.stdout).keys.test, /^sk_test_/);
  });
});
