import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ENGINE } from '../../../test/harness.ts';
import { makeTestPkcs12 } from '../../../test/support/fiscal.ts';
import { FakeDianServer } from '../../../test/fakes/dian-server.ts';
import { freePort } from '../../../test/fault-harness.ts';

/**
 * `recaudo fiscal-profile set|show` against the real start command: through the control socket
 * with the embedded engine, directly on PostgreSQL. The rules themselves (the API's) are covered
 * in profile.test.ts, also through the operator functions the CLI calls.
 */
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'recaudo-fiscal-cli-'));
const port = await freePort();
const base = `http://127.0.0.1:${port}`;
const env: NodeJS.ProcessEnv = {
  ...process.env,
  PORT: String(port),
  HOST: '127.0.0.1',
  DATA_DIR: dataDir,
  DATABASE_URL: ENGINE === 'postgres' ? process.env.TEST_DATABASE_URL : '',
  LOG_LEVEL: 'warn',
  DIAN_ALLOW_INSECURE_ENDPOINT: 'true',
};

function cli(...args: string[]) {
  const res = spawnSync(process.execPath, ['bin/recaudo.mjs', ...args], { env, encoding: 'utf8', timeout: 60_000 });
  return { code: res.status, stdout: res.stdout, stderr: res.stderr };
}

/** Without blocking this process (the fake DIAN server it runs must answer meanwhile). */
async function cliAsync(...args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, ['bin/recaudo.mjs', ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (c) => (stdout += c));
  child.stderr!.on('data', (c) => (stderr += c));
  const [code] = (await once(child, 'close')) as [number | null];
  return { code, stdout, stderr };
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
  let companyId = '';
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
    companyId = id;
    const set = cli(
      'fiscal-profile',
      'set',
      '--company',
      id,
      '--env',
      'live',
      '--json',
      '--nit',
      '800197268',
      '--dv',
      '4',
      '--legal-name',
      'Fiscal CLI SAS',
      '--address',
      'Calle 10 # 43-20',
      '--city-code',
      '05001',
      '--email',
      'facturas@cli.co',
      '--responsibilities',
      'O-13,O-15',
      '--tax-regime',
      '48',
      '--software-id',
      'sw-123',
      '--software-pin',
      '55555',
      '--certificate',
      p12File,
      '--certificate-password',
      'clave',
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

  test('fiscal import-ranges through the server: progress on stderr, JSON summary on stdout, idempotency in live-dian.test.ts', async () => {
    const fake = new FakeDianServer({
      ranges: [
        {
          resolutionNumber: '18760000001',
          resolutionDate: '2019-01-19',
          prefix: 'SETP',
          fromNumber: '990000000',
          toNumber: '995000000',
          validDateFrom: '2019-01-19',
          validDateTo: '2099-01-19',
          technicalKey: 'fc8eac422eba16e22ffd8c6f94b3f40a',
        },
      ],
    });
    await fake.start();
    try {
      // The first test's company (one CLI start less: this file runs under a 120 s budget).
      const id = companyId;
      assert.ok(id, 'the previous test created the company');
      const set = cli(
        'fiscal-profile',
        'set',
        '--company',
        id,
        '--env',
        'live',
        '--json',
        '--software-id',
        'sw-123',
        '--dian-endpoint',
        fake.url,
        '--dian-mode',
        'async',
        '--dian-timeout-ms',
        '5000',
      );
      assert.equal(set.code, 0, set.stderr);
      assert.deepEqual(JSON.parse(set.stdout).profile.dian, { endpoint: fake.url, mode: 'async', test_set_id: null, timeout_ms: 5000 });
      const first = await cliAsync('fiscal', 'import-ranges', '--company', id, '--env', 'live', '--account-code-t', '900373076', '--json');
      assert.equal(first.code, 0, first.stderr);
      assert.match(first.stderr, /DIAN returned 1 range/);
      const out = JSON.parse(first.stdout);
      assert.deepEqual(
        out.created.map((r: any) => [r.number, r.prefix, r.status, r.technical_key]),
        [['18760000001', 'SETP', 'draft', 'fc8eac422eba16e22ffd8c6f94b3f40a']],
      );
      assert.deepEqual(
        [fake.calls[0].params.accountCode, fake.calls[0].params.accountCodeT, fake.calls[0].params.softwareCode],
        ['800197268', '900373076', 'sw-123'],
      );
      assert.equal(fake.refused.length, 0, fake.refused.join('\n'));
    } finally {
      await fake.stop();
    }
  });
});
