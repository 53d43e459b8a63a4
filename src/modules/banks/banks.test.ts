import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHarness, expectError, expectValidation, type Company, type Harness } from '../../../test/harness.ts';
import { CATALOGUE, PLATFORM_BANK_ID, bankId } from './catalogue.ts';
import { seedBanks } from './service.ts';

type Bank = {
  id: string;
  code: string;
  name: string;
  banklink: boolean;
  priority: number;
  connection_type: string;
  supported_types: string[];
  logo: string;
  base64_logo: string;
};

describe('banks', () => {
  let h: Harness;
  let co: Company;
  before(async () => {
    h = await createHarness();
    co = await h.company();
  });
  after(() => h.close());

  test('the catalogue has the real codes, stable ids and no duplicates', () => {
    const codes = new Map(CATALOGUE.map((b) => [b.code, b.name]));
    assert.equal(codes.size, CATALOGUE.length, 'codes are unique');
    for (const [code, name] of [
      ['1007', 'Bancolombia'],
      ['1001', 'Banco de Bogotá'],
      ['1002', 'Banco Popular'],
      ['1006', 'Banco Itaú'],
      ['1009', 'Citibank Colombia'],
      ['1012', 'Banco GNB Sudameris'],
      ['1013', 'BBVA Colombia'],
      ['1019', 'Scotiabank Colpatria'],
      ['1023', 'Banco de Occidente'],
      ['1032', 'Banco Caja Social'],
      ['1040', 'Banco Agrario de Colombia'],
      ['1051', 'Davivienda'],
      ['1052', 'Banco AV Villas'],
      ['1053', 'Banco W'],
      ['1059', 'Bancamía'],
      ['1060', 'Banco Pichincha'],
      ['1061', 'Bancoomeva'],
      ['1062', 'Banco Falabella'],
      ['1063', 'Banco Finandina'],
      ['1065', 'Banco Santander de Negocios Colombia'],
      ['1066', 'Banco Cooperativo Coopcentral'],
      ['1069', 'Banco Serfinanza'],
      ['1070', 'Lulo Bank'],
      ['1507', 'Nequi'],
      ['1551', 'Daviplata'],
      ['1809', 'Nu Colombia'],
      ['1801', 'Movii'],
    ]) {
      assert.equal(codes.get(code), name, `code ${code}`);
    }
    assert.equal(bankId('1007'), bankId('1007'));
    assert.match(bankId('1007'), /^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  });

  test('GET /banks: a bare array ordered by priority, without the platform bank', async () => {
    const res = await co.req({ url: '/v1/banks?page=3&per_page=1' });
    assert.equal(res.status, 200, res.raw);
    assert.ok(Array.isArray(res.body));
    const banks = res.body as Bank[];
    assert.equal(banks.length, CATALOGUE.length - 1, 'page and per_page are ignored');
    assert.equal(
      banks.some((b) => b.id === PLATFORM_BANK_ID),
      false,
    );
    assert.deepEqual(
      banks.map((b) => b.priority),
      [...banks.map((b) => b.priority)].sort((a, b) => a - b),
    );
    const bancolombia = banks.find((b) => b.code === '1007')!;
    assert.equal(bancolombia.id, bankId('1007'));
    assert.equal(bancolombia.name, 'Bancolombia');
    assert.equal(bancolombia.connection_type, 'DATA');
    assert.equal(bancolombia.banklink, true);
    assert.equal(bancolombia.logo, `http://recaudo.test/v1/banks/${bancolombia.id}/logo.svg`);
    assert.match(bancolombia.base64_logo, /^data:image\/svg\+xml;base64,/);
    assert.match(Buffer.from(bancolombia.base64_logo.split(',')[1], 'base64').toString(), /<svg[^>]*>.*BC<\/text><\/svg>$/);
    for (const wallet of ['1507', '1551']) assert.equal(banks.find((b) => b.code === wallet)!.connection_type, 'CONFIRMATION');
    for (const b of banks) {
      assert.ok(b.supported_types.every((t) => ['savings', 'checking', 'electronic_deposit'].includes(t)));
      if (!['1507', '1551'].includes(b.code)) assert.equal(b.connection_type, 'DATA', b.name);
    }
    const same = await co.req({ url: '/v1/accounts/banks' });
    assert.deepEqual(same.body, res.body);
  });

  test('banklink filter and order', async () => {
    const yes = (await co.req({ url: '/v1/banks?banklink=true' })).body as Bank[];
    const no = (await co.req({ url: '/v1/banks?filter[banklink]=false' })).body as Bank[];
    assert.ok(yes.length > 10 && no.length > 0);
    assert.ok(yes.every((b) => b.banklink) && no.every((b) => !b.banklink));
    assert.equal(yes.length + no.length, CATALOGUE.length - 1);
    for (const code of ['1007', '1051', '1001', '1013', '1507', '1551'])
      assert.ok(
        yes.some((b) => b.code === code),
        code,
      );

    const byName = (await co.req({ url: '/v1/accounts/banks?order=name' })).body as Bank[];
    const names = byName.map((b) => b.name);
    assert.deepEqual(names, [...names].sort(new Intl.Collator('es', { sensitivity: 'base', numeric: true }).compare));
    const reversed = (await co.req({ url: '/v1/banks?order=-name' })).body as Bank[];
    assert.deepEqual(
      reversed.map((b) => b.name),
      [...names].reverse(),
    );
    const last = (await co.req({ url: '/v1/banks?order=-priority&banklink=true' })).body as Bank[];
    assert.ok(last[0].priority > last[last.length - 1].priority);
    const sortAlias = (await co.req({ url: '/v1/banks?sort=name' })).body as Bank[];
    assert.deepEqual(
      sortAlias.map((b) => b.name),
      names,
    );
  });

  test('bad queries: order outside the list is 400, a non-boolean banklink is 422', async () => {
    expectError(await co.req({ url: '/v1/banks?order=code' }), 400);
    expectError(await co.req({ url: '/v1/accounts/banks?order=-created_at' }), 400);
    expectError(await co.req({ url: '/v1/banks?filter[name]=Nequi' }), 400);
    expectValidation(await co.req({ url: '/v1/banks?banklink=yes' }), 'banklink');
    expectValidation(await co.req({ url: '/v1/accounts/banks?filter[banklink]=1' }), 'filter[banklink]');
    const ignored = await co.req({ url: '/v1/banks?foo=bar' });
    assert.equal(ignored.status, 200);
  });

  test('authentication: the list needs a key, the logo does not', async () => {
    expectError(await co.req({ url: '/v1/banks', key: null }), 401, 'unauthenticated', 10000);
    expectError(await co.req({ url: '/v1/banks', key: 'sk_test_nope' }), 404, 'record_not_found', 10002);
    const live = await co.req({ url: '/v1/banks', env: 'live' });
    assert.equal(live.status, 200, 'the catalogue is the same in both environments');

    const logo = await h.app.inject({ url: `/v1/banks/${bankId('1507')}/logo.svg` });
    assert.equal(logo.statusCode, 200);
    assert.match(String(logo.headers['content-type']), /^image\/svg\+xml/);
    assert.match(logo.body, /^<svg xmlns="http:\/\/www.w3.org\/2000\/svg".*aria-label="Nequi".*<\/svg>$/);
    const platformLogo = await h.app.inject({ url: `/v1/banks/${PLATFORM_BANK_ID}/logo.svg` });
    assert.equal(platformLogo.statusCode, 200, 'WALLET accounts show the platform logo');
    const missing = await h.app.inject({ url: '/v1/banks/00000000-0000-4000-8000-000000000000/logo.svg' });
    assert.equal(missing.statusCode, 404);
    assert.equal(JSON.parse(missing.body).code_name, 'record_not_found');
  });

  test('GET /banks/{id}', async () => {
    const one = await co.req({ url: `/v1/banks/${bankId('1051')}` });
    assert.equal(one.status, 200, one.raw);
    assert.equal(one.body.name, 'Davivienda');
    expectError(await co.req({ url: `/v1/banks/${PLATFORM_BANK_ID}` }), 404, 'record_not_found', 10002);
    expectError(await co.req({ url: '/v1/banks/not-a-uuid' }), 404, 'record_not_found', 10002);
  });

  test('seeding is an idempotent upsert', async () => {
    const db = h.runtime.deps.database.db;
    // A bank no other test reads: on PostgreSQL the catalogue is shared by concurrent test files.
    await db.updateTable('banks').set({ name: 'Stale' }).where('id', '=', bankId('1370')).execute();
    await seedBanks(db);
    await seedBanks(db);
    const rows = await db.selectFrom('banks').select(['id', 'name']).execute();
    assert.equal(rows.length, CATALOGUE.length);
    assert.equal(rows.find((r) => r.id === bankId('1370'))!.name, 'Coltefinanciera');
  });
});
