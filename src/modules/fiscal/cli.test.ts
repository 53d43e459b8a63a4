import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ENGINE } from '../../../test/harness.ts';
import { makeTestPkcs12 } from './test-support.ts';

/**
 * `recaudo fiscal-profile set|show` against the real start command: through the control socket
 * with the embedded engine, directly on PostgreSQL. The rules themselves (the API's) are covered
 * in profile.test.ts, also through the operator functions the CLI calls.
 */
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'recaudo-fiscal-cli-'));
const port = 36000 + (process.pid % 1000);
const base = `http://127.0.0.1:${port}`;
const env: NodeJS.ProcessEnv = {
  ...process.env,
  PORT: String(port),
  HOST: '127.0.0.1',
  DATA_DIR: dataDir,
  DATABASE_URL: ENGINE === 'postgres' ? process.env.TEST_DATABASE_URL : '',
  LOG_LEVEL: 'warn',
};

function cli(...args: string[]) {
  const res = spawnSync(process.execPath, ['bin/recaudo.mjs', ...args], { env, encoding: 'utf8', timeout: 60_000 });
  return { code: res.status, stdout: res.stdout, stderr: res.stderr };
}

async function startServer(): Promise<ChildProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], { env, stdio: ['ignore', 'ignore', 'ignore'] });
  const deadline = Date.now() + 90_000; // a fresh embedded data directory migrates first
  for (;;) {
    try {
      if ((await fetch(`${base}/health`)).ok) return child;
    } catch {
      /* starting */
    }
    if (child.exitCode !== null || Date.now() > deadline) throw new Error('server did not start');
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe('recaudo fiscal-profile', () => {
  let server: ChildProcess;
  const p12File = path.join(dataDir, 'cert.p12');
  before(async () => {
    fs.writeFileSync(p12File, makeTestPkcs12('clave').p12);
    server = await startServer();
  });
  after(async () => {
    if (server.exitCode === null) {
      server.kill('SIGKILL');
      await once(server, 'exit');
    }
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  test('set and show while the server runs; the API sees the result; bad input exits 2 and changes nothing', async () => {
    const created = JSON.parse(cli('companies', 'create', '--name', 'Fiscal CLI SAS', '--json').stdout);
    const id = created.company.id;
    const set = cli(
      'fiscal-profile', 'set', '--company', id, '--env', 'live', '--json',
      '--nit', '800197268', '--dv', '4', '--legal-name', 'Fiscal CLI SAS', '--address', 'Calle 10 # 43-20', '--city-code', '05001',
      '--email', 'facturas@cli.co', '--responsibilities', 'O-13,O-15', '--tax-regime', '48', '--software-id', 'sw-123', '--software-pin', '55555',
      '--certificate', p12File, '--certificate-password', 'clave',
    );
    assert.equal(set.code, 0, set.stderr);
    const out = JSON.parse(set.stdout);
    assert.equal(out.company.id, id);
    assert.equal(out.environment, 'live');
    assert.equal(out.profile.configured, true);
    assert.deepEqual(out.profile.fiscal_responsibilities, ['O-13', 'O-15']);
    assert.match(out.profile.certificate.subject, /CN=Emisor de Pruebas SAS/);
    assert.equal(set.stdout.includes('55555') || set.stdout.includes('clave'), false, 'write-only values are not printed');
    const api = await fetch(`${base}/v1/fiscal-profile`, { headers: { authorization: `Bearer ${created.keys.live}` } });
    assert.deepEqual(await api.json(), out.profile);

    const bad = cli('fiscal-profile', 'set', '--company', id, '--env', 'live', '--dv', '7', '--address', 'x', '--city-code', '99999', '--json');
    assert.equal(bad.code, 2, bad.stderr);
    assert.match(bad.stderr, /dv: does not match the NIT check digit/);
    assert.match(bad.stderr, /address\.city_code: is not a DIVIPOLA municipality code/);

    const shown = cli('fiscal-profile', 'show', '--company', id, '--env', 'live', '--json');
    assert.equal(shown.code, 0, shown.stderr);
    assert.deepEqual(JSON.parse(shown.stdout).profile, out.profile, 'the refused command changed nothing');
  });
});
