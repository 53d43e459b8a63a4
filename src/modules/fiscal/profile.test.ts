import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHarness, expectError, expectValidation, type Company, type Harness } from '../../../test/harness.ts';
import { nitCheckDigit } from '../../documents/dian/nit.ts';
import { summarizePkcs12 } from './certificate.ts';
import { loadFiscalIssuer } from './profile.ts';
import { makeTestPkcs12 } from '../../../test/support/fiscal.ts';
import { OperatorInputError } from '../companies/service.ts';
import { setFiscalProfile, showFiscalProfile } from './operator.ts';

const acme = {
  nit: '800197268',
  dv: '4',
  legal_name: 'Acme Colombia SAS',
  trade_name: 'Acme',
  address: { line: 'Calle 10 # 43-20', city_code: '05001' },
  email: 'Facturas@Acme.co',
  phone: '+576044440000',
  fiscal_responsibilities: ['O-13', 'O-15'],
  tax_regime: '48',
  software_id: '0f3e7c1a-1111-4222-8333-944455556666',
  software_pin: '98765',
};

describe('fiscal profile', () => {
  let h: Harness;
  let co: Company;
  const cert = makeTestPkcs12('s3cret');
  before(async () => {
    h = await createHarness();
    co = await h.company();
  });
  after(() => h.close());

  const put = (body: unknown, env: 'test' | 'live' = 'test', c = co) => c.req({ method: 'PUT', url: '/v1/fiscal-profile', body, env });
  const get = (env: 'test' | 'live' = 'test', c = co) => c.req({ url: '/v1/fiscal-profile', env });

  test('the test environment has a working default; live is not configured', async () => {
    const c = await h.company('Fresh SAS');
    const test = await get('test', c);
    assert.equal(test.status, 200, test.raw);
    assert.equal(test.body.configured, true);
    assert.equal(test.body.is_default, true);
    assert.equal(test.body.is_test, true);
    assert.equal(nitCheckDigit(test.body.nit), Number(test.body.dv), 'the sandbox NIT has a correct check digit');
    assert.equal(test.body.address.city_code, '11001');
    assert.equal(test.body.software_pin_set, true);
    assert.equal('software_pin' in test.body, false);
    assert.equal(test.body.certificate, null);
    const issuer = await loadFiscalIssuer(h.runtime.deps.database.db, h.runtime.deps.secrets, { companyId: c.company.id, environment: 'test' });
    assert.ok(issuer?.softwareId && issuer.softwarePin && issuer.address.cityCode === '11001' && issuer.address.country === 'CO');
    assert.equal(issuer?.certificate, null);

    const live = await get('live', c);
    assert.equal(live.status, 200);
    assert.deepEqual(live.body, {
      configured: false,
      is_default: false,
      is_test: false,
      nit: null,
      dv: null,
      legal_name: null,
      trade_name: null,
      address: null,
      email: null,
      phone: null,
      fiscal_responsibilities: [],
      tax_regime: null,
      software_id: null,
      software_pin_set: false,
      certificate: null,
      dian: null,
      updated_at: null,
    });
    assert.equal(await loadFiscalIssuer(h.runtime.deps.database.db, h.runtime.deps.secrets, { companyId: c.company.id, environment: 'live' }), null);
  });

  test('PUT in live needs the whole profile; then GET and the issuer reflect it', async () => {
    const partial = await put({ legal_name: 'Acme' }, 'live');
    expectValidation(partial, 'nit', 'dv', 'address', 'fiscal_responsibilities', 'tax_regime', 'software_id', 'software_pin');
    assert.equal((await get('live')).body.configured, false, 'a refused PUT stores nothing');

    const res = await put({ ...acme, certificate: cert.p12.toString('base64'), certificate_password: 's3cret' }, 'live');
    assert.equal(res.status, 200, res.raw);
    assert.equal(res.body.configured, true);
    assert.equal(res.body.email, 'facturas@acme.co');
    assert.deepEqual(res.body.address, acme.address);
    assert.deepEqual(res.body.fiscal_responsibilities, ['O-13', 'O-15']);
    assert.equal(res.body.software_pin_set, true);
    for (const secret of ['software_pin', 'certificate_password']) assert.equal(secret in res.body, false);
    assert.equal(res.raw.includes('98765') || res.raw.includes('s3cret'), false, 'write-only values never come back');
    assert.deepEqual(res.body.certificate, {
      subject: 'CN=Emisor de Pruebas SAS, C=CO',
      issuer: 'CN=Emisor de Pruebas SAS, C=CO',
      serial: cert.serial,
      valid_from: '2025-01-01T00:00:00.000Z',
      valid_until: '2035-01-01T00:00:00.000Z',
    });
    assert.deepEqual((await get('live')).body, res.body);

    const issuer = await loadFiscalIssuer(h.runtime.deps.database.db, h.runtime.deps.secrets, { companyId: co.company.id, environment: 'live' });
    assert.equal(issuer?.nit, '800197268');
    assert.equal(issuer?.dv, '4');
    assert.equal(issuer?.softwarePin, '98765');
    assert.deepEqual(issuer?.responsibilities, ['O-13', 'O-15']);
    assert.ok(issuer?.certificate && summarizePkcs12(issuer.certificate.p12, issuer.certificate.password));

    // Unsent fields keep their value; null clears the optional ones.
    const upd = await put({ trade_name: null, phone: null, tax_regime: '49' }, 'live');
    assert.equal(upd.status, 200, upd.raw);
    assert.equal(upd.body.trade_name, null);
    assert.equal(upd.body.tax_regime, '49');
    assert.equal(upd.body.nit, '800197268');
    assert.ok(upd.body.certificate, 'the certificate stays');
    const removed = await put({ certificate: null }, 'live');
    assert.equal(removed.body.certificate, null);
    // The test environment is untouched by live.
    assert.equal((await get('test')).body.is_default, true);
  });

  test('PUT in test overrides the default', async () => {
    const res = await put({ legal_name: 'Mi Empresa de Pruebas SAS' });
    assert.equal(res.status, 200, res.raw);
    assert.equal(res.body.is_default, false);
    assert.equal(res.body.legal_name, 'Mi Empresa de Pruebas SAS');
    assert.equal(res.body.software_pin_set, true, 'the rest comes from the default');
    const issuer = await loadFiscalIssuer(h.runtime.deps.database.db, h.runtime.deps.secrets, { companyId: co.company.id, environment: 'test' });
    assert.equal(issuer?.legalName, 'Mi Empresa de Pruebas SAS');
  });

  test('validation', async () => {
    const c = await h.company('Validation SAS');
    expectValidation(await put({ nit: '800197268', dv: '5' }, 'test', c), 'dv');
    expectValidation(await put({ nit: '800197268', dv: 4 }, 'live', c), 'address');
    assert.equal((await put({ nit: '800197268', dv: 4 }, 'test', c)).status, 200, 'dv as a number');
    expectValidation(await put({ nit: '800-197' }, 'test', c), 'nit');
    expectValidation(await put({ dv: '12' }, 'test', c), 'dv');
    expectValidation(await put({ address: { line: 'x', city_code: '99999' } }, 'test', c), 'address.city_code');
    expectValidation(await put({ address: { line: 'x', city_code: '1100' } }, 'test', c), 'address.city_code');
    expectValidation(await put({ address: { city_code: '11001' } }, 'test', c), 'address.line');
    expectValidation(await put({ fiscal_responsibilities: ['O-13', 'X-1'] }, 'test', c), 'fiscal_responsibilities');
    expectValidation(await put({ fiscal_responsibilities: [] }, 'test', c), 'fiscal_responsibilities');
    expectValidation(await put({ tax_regime: '47' }, 'test', c), 'tax_regime');
    expectValidation(await put({ email: 'not-an-email' }, 'test', c), 'email');
    expectValidation(await put({ legal_name: null }, 'test', c), 'legal_name');
    expectValidation(await put({ certificate: cert.p12.toString('base64') }, 'test', c), 'certificate_password');
    expectValidation(await put({ certificate: cert.p12.toString('base64'), certificate_password: 'wrong' }, 'test', c), 'certificate');
    expectValidation(await put({ certificate: Buffer.from('not a p12').toString('base64'), certificate_password: 'x' }, 'test', c), 'certificate');
    expectValidation(await put({ certificate: '%%%', certificate_password: 'x' }, 'test', c), 'certificate');
    expectValidation(await put({ certificate_password: 'x' }, 'test', c), 'certificate_password');
    const after = await get('test', c);
    assert.equal(after.body.nit, '800197268', 'refused PUTs changed nothing');
    expectError(await c.req({ url: '/v1/fiscal-profile', key: null }), 401, 'unauthenticated', 10000);
    expectError(await c.req({ method: 'PUT', url: '/v1/fiscal-profile', body: {}, key: 'sk_test_nope' }), 404, 'record_not_found', 10002);
    // Another company never sees this one's profile.
    const other = await h.company('Other SAS');
    assert.equal((await get('test', other)).body.is_default, true);
  });

  test('operator commands (CLI and control socket) use the same rules', async () => {
    const db = h.runtime.deps.database.db;
    const now = h.clock.now();
    await assert.rejects(showFiscalProfile(db, h.runtime.deps.secrets, { company: 'cmp_nope', env: 'test' }), OperatorInputError);
    await assert.rejects(showFiscalProfile(db, h.runtime.deps.secrets, { company: co.company.id, env: 'prod' }), OperatorInputError);
    await assert.rejects(
      setFiscalProfile(db, h.runtime.deps.secrets, { company: co.company.id, env: 'live', profile: { dv: 'x' } }, now),
      /dv: must be one digit/,
    );
    await assert.rejects(
      setFiscalProfile(db, h.runtime.deps.secrets, { company: co.company.id, env: 'test', profile: { nit: '800197268', dv: '1' } }, now),
      /dv: does not match the NIT check digit/,
    );
    const out = await setFiscalProfile(db, h.runtime.deps.secrets, { company: co.company.id, env: 'test', profile: { trade_name: 'Por CLI' } }, now);
    assert.equal(out.profile.trade_name, 'Por CLI');
    assert.deepEqual(
      (await showFiscalProfile(db, h.runtime.deps.secrets, { company: co.company.id, env: 'test' })).profile,
      (await get('test')).body,
    );
  });
});
