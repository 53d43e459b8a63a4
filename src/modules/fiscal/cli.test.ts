import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { makeTestPkcs12 } from '../../../test/support/fiscal.ts';
import { FakeDianServer } from '../../../test/fakes/dian-server.ts';
import { cliWithServer } from '../../../test/support/cli.ts';

/**
 * `recaudo fiscal-profile set|show` against the real start command: through the control socket
 * with the embedded engine, directly on PostgreSQL. The rules themselves (the API's) are covered
 * in profile.test.ts, also through the operator functions the CLI calls.
 */
const {
  base,
  dataDir,
  cli,
  cliAsync: cliInBackground,
  start: startServer,
  stop,
} = await cliWithServer('fiscal', { DIAN_ALLOW_INSECURE_ENDPOINT: 'true' });
/** Without blocking this process (the fake DIAN server it runs must answer meanwhile). */
const cliAsync = (...args: string[]) => cliInBackground(...args).done;

describe('recaudo fiscal-profile', () => {
  let server: ChildProcess;
  let companyId = '';
  const p12File = path.join(dataDir, 'cert.p12');
  before(async () => {
    fs.writeFileSync(p12File, makeTestPkcs12('clave').p12);
    server = await startServer();
  });
  after(() => stop(server, 'SIGKILL'));

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
