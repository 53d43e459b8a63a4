import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { cliWithServer } from './support/cli.ts';
import { makeTestPkcs12 } from './support/fiscal.ts';
import { signBody } from '../src/modules/webhooks/signature.ts';

/**
 * The developer and operator tools against a running server, as a developer runs them
 * (docs/operations.md "Developer tools"): `recaudo keys list`, `recaudo trigger`, `recaudo listen`
 * forwarding signed events to a local receiver, and secrets passed to `fiscal-profile set` as files.
 */

const { base, cli, cliAsync, start, stop } = await cliWithServer('tools');

describe('recaudo keys list, trigger, listen and secrets from files', () => {
  let server: ChildProcess;
  let company: { company: { id: string }; keys: { test: string; live: string }; publishable_keys: { test: string } };

  before(async () => {
    server = await start({ stderr: 'inherit' });
    const created = cli('companies', 'create', '--name', 'Herramientas SAS', '--json');
    assert.equal(created.code, 0, created.stderr);
    company = JSON.parse(created.stdout);
  });
  after(() => stop(server));

  test('keys list: prefix, environment, kind, created and revoked; never a key', () => {
    const rotated = cli('keys', 'rotate', '--company', company.company.id, '--env', 'test', '--publishable', '--json');
    assert.equal(rotated.code, 0, rotated.stderr);
    const out = cli('keys', 'list', '--company', company.company.id, '--json');
    assert.equal(out.code, 0, out.stderr);
    const { keys } = JSON.parse(out.stdout) as {
      keys: { prefix: string; environment: string; kind: string; created_at: string; revoked_at: string | null }[];
    };
    assert.equal(keys.length, 5, 'secret and publishable keys of both environments, and the revoked publishable one');
    assert.deepEqual(keys.map((k) => `${k.environment} ${k.kind} ${k.revoked_at ? 'revoked' : 'active'}`).sort(), [
      'live publishable active',
      'live secret active',
      'test publishable active',
      'test publishable revoked',
      'test secret active',
    ]);
    assert.ok(keys.every((k) => k.prefix.length < 20 && /^(sk|pk)_(test|live)_/.test(k.prefix)));
    for (const secret of [company.keys.test, company.keys.live, company.publishable_keys.test, JSON.parse(rotated.stdout).key])
      assert.ok(!out.stdout.includes(secret), 'no key is printed');
    const human = cli('keys', 'list', '--company', company.company.id, '--env', 'live');
    assert.equal(human.stdout.trim().split('\n').length, 2);
    assert.equal(cli('keys', 'list', '--company', 'cmp_nope').code, 2);
  });

  test('keys create: one more secret key, its own principal, kept when the main key rotates; revoke ends it', async () => {
    const made = cli('keys', 'create', '--company', company.company.id, '--env', 'live', '--name', 'Tesorería', '--json');
    assert.equal(made.code, 0, made.stderr);
    const key = JSON.parse(made.stdout) as { key: string; id: string; name: string };
    assert.match(key.key, /^sk_live_/);
    assert.match(key.id, /^key_/);
    assert.equal(key.name, 'Tesorería');
    const unnamed = JSON.parse(cli('keys', 'create', '--company', company.company.id, '--env', 'live', '--json').stdout);
    assert.match(unnamed.name, /^Clave \d+$/, 'a name is given when none is');
    const works = async (secret: string) => (await fetch(`${base}/v1/customers`, { headers: { authorization: `Bearer ${secret}` } })).status;
    assert.equal(await works(key.key), 200);
    assert.equal(await works(company.keys.live), 200, 'the main key still works');
    // Rotating the main key leaves the named keys alone.
    const rotated = JSON.parse(cli('keys', 'rotate', '--company', company.company.id, '--env', 'live', '--json').stdout).key as string;
    const listed = JSON.parse(cli('keys', 'list', '--company', company.company.id, '--env', 'live', '--json').stdout).keys as {
      id: string;
      name: string | null;
      kind: string;
      revoked_at: string | null;
    }[];
    assert.deepEqual(
      listed
        .filter((k) => k.kind === 'secret' && !k.revoked_at)
        .map((k) => k.name ?? 'main')
        .sort(),
      ['Clave 3', 'Tesorería', 'main'].sort(),
    );
    assert.equal(await works(key.key), 200);
    assert.equal(await works(rotated), 200);
    const revoked = cli('keys', 'revoke', '--company', company.company.id, '--key', key.id, '--json');
    assert.equal(revoked.code, 0, revoked.stderr);
    // An invalid key is SPEC's 404 record_not_found. Through the control socket (embedded engine)
    // the server forgets its cached keys at once; with PostgreSQL the CLI writes the database
    // itself and the server's key cache (5 s) lets it go.
    const deadline = Date.now() + 7_000;
    let status = await works(key.key);
    while (status !== 404 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 250));
      status = await works(key.key);
    }
    assert.equal(status, 404);
    assert.equal(cli('keys', 'revoke', '--company', company.company.id, '--key', key.id).code, 2, 'already revoked');
    assert.equal(cli('keys', 'create', '--company', company.company.id, '--env', 'prod').code, 2);
  });

  test('listen forwards new events signed like deliveries; trigger causes them and prints what it made', async () => {
    const received: { headers: http.IncomingHttpHeaders; raw: string }[] = [];
    const receiver = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c) => chunks.push(c));
      req.on('end', () => {
        received.push({ headers: req.headers, raw: Buffer.concat(chunks).toString('utf8') });
        res.writeHead(received.length === 1 ? 200 : 500).end();
      });
    });
    receiver.listen(0, '127.0.0.1');
    await once(receiver, 'listening');
    const hook = `http://127.0.0.1:${(receiver.address() as { port: number }).port}/hook`;
    try {
      // An event before listen started is not forwarded.
      assert.equal(cli('trigger', 'payment.created', '--api-key', company.keys.test).code, 0);
      const secret = 'wh_tok_listen_test_secret';
      const listening = cliAsync(
        'listen',
        '--forward-to',
        hook,
        '--api-key',
        company.keys.test,
        '--events',
        'charge.paid,payment.deleted',
        '--secret',
        secret,
        '--token',
        'tok-123',
        '--interval-ms',
        '100',
        '--max-events',
        '2',
      );
      // Ready once it printed its secret.
      for (let i = 0; i < 600 && !listening.child.stderr!.readableLength && listening.child.exitCode === null; i++)
        await new Promise((r) => setTimeout(r, 50));
      const paid = cli('trigger', 'charge.paid', '--api-key', company.keys.test, '--json');
      assert.equal(paid.code, 0, paid.stderr);
      const made = JSON.parse(paid.stdout);
      assert.deepEqual(
        made.created.map((c: { object: string }) => c.object),
        ['customer', 'card', 'charge'],
      );
      assert.equal(made.created[2].status, 'paid');
      const deleted = cli('trigger', 'payment.deleted', '--api-key', company.keys.test);
      assert.equal(deleted.code, 0, deleted.stderr);
      assert.match(deleted.stdout, /payment\.deleted triggered:\n {2}payment\s+pay_/);

      const out = await listening.done;
      assert.equal(out.code, 0, out.stderr);
      assert.match(out.stderr, /signing secret \(Signature\): wh_tok_listen_test_secret/);
      assert.deepEqual(
        received.map((r) => r.headers['x-webhook-event']),
        ['charge.paid', 'payment.deleted'],
      );
      for (const r of received) {
        assert.equal(r.headers.signature, signBody(secret, r.raw), 'signed over the exact bytes with the session secret');
        assert.equal(r.headers['x-webhook-token'], 'tok-123');
        assert.equal(JSON.parse(r.raw).id, r.headers['x-webhook-id']);
      }
      assert.equal(JSON.parse(received[0].raw).data.id, made.created[2].id, 'the charge trigger made');
      const lines = out.stdout.trim().split('\n');
      assert.equal(lines.length, 2);
      assert.match(lines[0], /charge\.paid\s+evt_\S+\s+→ 200/);
      assert.match(lines[1], /payment\.deleted\s+evt_\S+\s+→ 500/);
    } finally {
      receiver.close();
    }
  });

  test('listen and trigger take test keys only; trigger names what it can cause', () => {
    const live = cli('trigger', 'charge.paid', '--api-key', company.keys.live);
    assert.equal(live.code, 2);
    assert.match(live.stderr, /only a test secret key/);
    const unknown = cli('trigger', 'invoice.nope', '--api-key', company.keys.test);
    assert.equal(unknown.code, 2);
    assert.match(unknown.stderr, /charge\.refunded/);
    assert.equal(cli('listen', '--forward-to', 'http://127.0.0.1:9/x', '--api-key', company.keys.live).code, 2);
  });

  test('fiscal-profile set: the certificate password and the PIN from files; the old flag still works with a warning', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'recaudo-pw-'));
    try {
      const password = 'clave del certificado';
      fs.writeFileSync(path.join(dir, 'cert.p12'), makeTestPkcs12(password).p12);
      fs.writeFileSync(path.join(dir, 'password'), `${password}\n`, { mode: 0o600 });
      fs.writeFileSync(path.join(dir, 'pin'), '77777\n', { mode: 0o600 });
      const args = ['fiscal-profile', 'set', '--company', company.company.id, '--env', 'test', '--certificate', path.join(dir, 'cert.p12'), '--json'];
      const fromFiles = cli(...args, '--certificate-password-file', path.join(dir, 'password'), '--software-pin-file', path.join(dir, 'pin'));
      assert.equal(fromFiles.code, 0, fromFiles.stderr);
      assert.ok(JSON.parse(fromFiles.stdout).profile.certificate, 'the PKCS#12 opened with the password read from the file');
      assert.doesNotMatch(fromFiles.stderr, /deprecated/);

      const onArgv = cli(...args, '--certificate-password', password);
      assert.equal(onArgv.code, 0, onArgv.stderr);
      assert.match(onArgv.stderr, /--certificate-password is deprecated .* use --certificate-password-file FILE/);

      const both = cli(...args, '--certificate-password', password, '--certificate-password-file', path.join(dir, 'password'));
      assert.equal(both.code, 2);
      const wrong = cli(...args, '--certificate-password-file', path.join(dir, 'pin'));
      assert.equal(wrong.code, 2, 'a password that does not open the certificate is refused');
      assert.equal(cli(...args, '--certificate-password-file', path.join(dir, 'missing')).code, 2);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
