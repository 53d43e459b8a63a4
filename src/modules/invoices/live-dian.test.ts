import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHarness, expectValidation, type Company, type Harness } from '../../../test/harness.ts';
import { importRanges } from '../fiscal/import-ranges.ts';
import { FakeDianServer, makeTestCertificate } from '../../../test/fakes/dian-server.ts';
import { dianConfigFromProfile } from '../fiscal/dian-config.ts';
import { LiveDianAuthority } from '../../rails/tax-authority/live.ts';
import { runStamping } from './stamping.ts';
import { STAMP_JOB } from './stamping-request.ts';
import { drainJobs, LINES } from '../../../test/support/invoices.ts';

/**
 * The live environment end to end against the fake DIAN SOAP server (which checks every request's
 * WS-Security signature): the company's live fiscal profile holds a certificate generated here and
 * points `dian.endpoint` at the fake (allowed by DIAN_ALLOW_INSECURE_ENDPOINT=true); numbering
 * ranges come from GetNumberingRange through `importRanges` (what `recaudo fiscal import-ranges`
 * runs); invoices are created and stamped through the HTTP API with the live key.
 */
process.env.DIAN_ALLOW_INSECURE_ENDPOINT = 'true';

const RANGE = {
  resolutionNumber: '18760000001',
  resolutionDate: '2019-01-19',
  prefix: 'SETP',
  fromNumber: '990000000',
  toNumber: '995000000',
  validDateFrom: '2019-01-19',
  validDateTo: '2099-01-19',
  technicalKey: 'fc8eac422eba16e22ffd8c6f94b3f40a6e38162c',
};
const EXPIRED = {
  ...RANGE,
  resolutionNumber: '18760000002',
  prefix: 'OLD',
  validDateFrom: '2018-01-01',
  validDateTo: '2019-01-01',
  technicalKey: 'abc123',
};

describe('live stamping through the DIAN web service (fake DIAN server)', () => {
  let h: Harness;
  let co: Company;
  let fake: FakeDianServer;
  let customerId: string;
  const cert = makeTestCertificate({ commonName: 'Emisor Live SAS' });

  const profile = (dian: Record<string, unknown>, extra: Record<string, unknown> = {}) =>
    co.req({
      method: 'PUT',
      url: '/v1/fiscal-profile',
      env: 'live',
      body: {
        nit: '800197268',
        dv: '4',
        legal_name: 'Emisor Live SAS',
        address: { line: 'Calle 10 # 43-20', city_code: '05001' },
        fiscal_responsibilities: ['O-13'],
        tax_regime: '48',
        software_id: '56f2ae4e-9812-4fad-9255-08fcfcd5ccb0',
        software_pin: '12345',
        certificate: cert.p12.toString('base64'),
        certificate_password: cert.password,
        dian,
        ...extra,
      },
    });

  async function liveEvents(type: string): Promise<any[]> {
    const res = await co.req({ url: `/v1/events?filter[type]=${type}&per_page=100`, env: 'live' });
    assert.equal(res.status, 200, res.raw);
    return res.body.data;
  }

  async function stampNew(): Promise<any> {
    const res = await co.req({ url: '/v1/invoices', env: 'live', body: { customer_id: customerId, items: LINES, stamp_policy: 'on_issue' } });
    assert.equal(res.status, 201, res.raw);
    await drainJobs(h, co);
    return (await co.req({ url: `/v1/invoices/${res.body.id}`, env: 'live' })).body;
  }

  before(async () => {
    h = await createHarness();
    co = await h.company();
    fake = new FakeDianServer({ now: () => h.clock.now(), ranges: [RANGE, EXPIRED] });
    await fake.start();
    const put = await profile({ endpoint: fake.url, mode: 'sync', timeout_ms: 400 });
    assert.equal(put.status, 200, put.raw);
    const customer = await co.req({
      url: '/v1/customers',
      env: 'live',
      body: {
        first_name: 'Ana',
        last_name: 'Pérez',
        email: 'ana.live@example.com',
        document_type: 'CC',
        document_number: '1020304050',
        address: { line: 'Calle 100 # 10-20', city_code: '11001' },
      },
    });
    assert.equal(customer.status, 200, customer.raw);
    customerId = customer.body.id;
  });
  after(async () => {
    await fake.stop();
    await h.close();
  });

  test('the profile shows and validates the DIAN settings (422 validation_error, nothing changed)', async () => {
    const shown = (await co.req({ url: '/v1/fiscal-profile', env: 'live' })).body;
    assert.deepEqual(shown.dian, { endpoint: fake.url, mode: 'sync', test_set_id: null, timeout_ms: 400 });
    expectValidation(await profile({ mode: 'test_set' }), 'dian.test_set_id');
    expectValidation(await profile({ endpoint: 'http://dian.example.com/ws' }), 'dian.endpoint');
    expectValidation(await profile({ endpoint: 'ftp://x' }), 'dian.endpoint');
    expectValidation(await profile({ mode: 'fast' }), 'dian.mode');
    expectValidation(await profile({ endpoint: 'produccion', mode: 'test_set', test_set_id: 'abc-123' }), 'dian.mode');
    expectValidation(await profile({ timeout_ms: 5 }), 'dian.timeout_ms');
    expectValidation(await profile({ unknown: 1 }), 'dian');
    process.env.DIAN_ALLOW_INSECURE_ENDPOINT = 'false';
    try {
      expectValidation(await profile({ endpoint: fake.url }), 'dian.endpoint');
    } finally {
      process.env.DIAN_ALLOW_INSECURE_ENDPOINT = 'true';
    }
    assert.deepEqual((await co.req({ url: '/v1/fiscal-profile', env: 'live' })).body, shown);
    const test = (await co.req({ url: '/v1/fiscal-profile' })).body;
    assert.deepEqual(test.dian, { endpoint: 'habilitacion', mode: 'sync', test_set_id: null, timeout_ms: 30000 });
  });

  test('import-ranges loads DIAN ranges as draft resolutions with their technical keys, idempotently', async () => {
    const db = h.runtime.deps.database.db;
    const lines: string[] = [];
    const first = await importRanges(db, { company: co.company.id, env: 'live' }, h.runtime.deps, (l) => lines.push(l));
    assert.equal(first.ranges_found, 2);
    assert.deepEqual(
      first.created.map((r) => [r.number, r.prefix, r.from, r.to, r.technical_key, r.status]),
      [['18760000001', 'SETP', 990000000, 995000000, RANGE.technicalKey, 'draft']],
    );
    assert.deepEqual(
      first.skipped.map((s) => [s.number, s.reason]),
      [['18760000002', 'expired']],
    );
    assert.ok(
      lines.some((l) => /DIAN returned 2 range/.test(l)),
      lines.join('\n'),
    );
    const call = fake.callsOf('GetNumberingRange')[0];
    assert.deepEqual(
      [call.params.accountCode, call.params.accountCodeT, call.params.softwareCode],
      ['800197268', '800197268', '56f2ae4e-9812-4fad-9255-08fcfcd5ccb0'],
    );
    const second = await importRanges(db, { company: co.company.id, env: 'live' }, h.runtime.deps);
    assert.equal(second.created.length, 0);
    assert.deepEqual(
      second.skipped.map((s) => [s.number, s.reason, s.resolution_id]),
      [
        ['18760000001', 'already_loaded', first.created[0].id],
        ['18760000002', 'expired', null],
      ],
    );
    const bare = await h.company();
    await assert.rejects(importRanges(db, { company: bare.company.id, env: 'live' }, h.runtime.deps), /no fiscal profile/);
    await assert.rejects(
      importRanges(db, { company: co.company.id, env: 'live', account_code: '12ab' }, h.runtime.deps),
      /--account-code must be a NIT/,
    );
    const listed = (await co.req({ url: '/v1/fiscal-resolutions?filter[prefix]=SETP', env: 'live' })).body;
    assert.equal(listed.total, 1);
    const activated = await co.req({ url: `/v1/fiscal-resolutions/${first.created[0].id}/activate`, env: 'live', body: {} });
    assert.equal(activated.status, 200, activated.raw);
    assert.equal(fake.refused.length, 0, fake.refused.join('\n'));
  });

  test('import-ranges in test asks the sandbox authority (never DIAN): its habilitación range is the one already loaded', async () => {
    const calls = fake.callsOf('GetNumberingRange').length;
    const out = await importRanges(h.runtime.deps.database.db, { company: co.company.id, env: 'test' }, h.runtime.deps);
    assert.equal(out.ranges_found, 1);
    assert.deepEqual(
      out.skipped.map((s) => [s.number, s.prefix, s.reason]),
      [['18760000001', 'SETP', 'already_loaded']],
    );
    assert.equal(fake.callsOf('GetNumberingRange').length, calls, 'the fake DIAN was not called');
  });

  test('accepted: invoice.stamped with the CUFE DIAN validated', async () => {
    fake.script('*', { verdict: { status: 'accepted' } });
    const inv = await stampNew();
    assert.equal(inv.fiscal_status, 'stamped', JSON.stringify(inv.stampings));
    assert.equal(inv.number, 'SETP990000000');
    const sent = fake.callsOf('SendBillSync').filter((c) => c.documentKeys.includes(inv.cufe));
    assert.equal(sent.length, 1);
    const ev = (await liveEvents('invoice.stamped')).find((e) => e.data.invoice_id === inv.id);
    assert.ok(ev, 'invoice.stamped emitted');
    assert.equal(ev.data.stamping.cufe, inv.cufe);
    assert.equal(fake.refused.length, 0, fake.refused.join('\n'));
  });

  test("rejected: invoice.stamp_rejected with DIAN's rule message as rejection_reason", async () => {
    const rule = 'Regla: FAJ44b, Rechazo: Nit o Documento de Identificación informado No corresponde al registrado por el Facturador.';
    fake.script('*', { verdict: { status: 'rejected', messages: [rule] } });
    try {
      const inv = await stampNew();
      assert.equal(inv.fiscal_status, 'rejected');
      assert.match(inv.stampings[0].rejection_reason, /FAJ44b/);
      const ev = (await liveEvents('invoice.stamp_rejected')).find((e) => e.data.invoice_id === inv.id);
      assert.match(ev.data.stamping.rejection_reason, /Nit o Documento de Identificación/);
    } finally {
      fake.script('*', { verdict: { status: 'accepted' } });
    }
  });

  test('a send that times out is settled by GetStatus, never sent twice', async () => {
    fake.script('*', { verdict: { status: 'accepted' }, submit: 'hang' });
    const before = fake.callsOf('SendBillSync').length;
    try {
      const inv = await stampNew();
      assert.equal(inv.fiscal_status, 'stamped', JSON.stringify(inv.stampings));
      const sends = fake.callsOf('SendBillSync').slice(before);
      assert.equal(sends.length, 1, 'one send only');
      assert.deepEqual(sends[0].documentKeys, [inv.cufe]);
      assert.ok(
        fake.callsOf('GetStatus').some((c) => c.params.trackId === inv.cufe),
        'settled by GetStatus',
      );
    } finally {
      fake.script('*', { verdict: { status: 'accepted' } });
    }
  });

  test('async: pending stores the ZipKey as track id, then GetStatusZip settles it', async () => {
    const authorities = h.runtime.deps.rails.taxAuthority;
    const previous = authorities.live;
    const db0 = h.runtime.deps.database.db;
    authorities.live = new LiveDianAuthority({
      clock: h.clock,
      pollAttempts: 1,
      pollIntervalMs: 0,
      resolveConfig: (c, e) => dianConfigFromProfile(db0, h.runtime.deps.secrets, c, e),
    });
    assert.equal((await profile({ mode: 'async' })).status, 200);
    fake.script('*', { verdict: { status: 'accepted' }, inProcessPolls: 2 });
    try {
      const res = await co.req({ url: '/v1/invoices', env: 'live', body: { customer_id: customerId, items: LINES, stamp_policy: 'on_issue' } });
      assert.equal(res.status, 201, res.raw);
      const db = h.runtime.deps.database.db;
      const job = (await db.selectFrom('jobs').selectAll().where('kind', '=', STAMP_JOB).execute()).find(
        (j) => j.payload.company_id === co.company.id,
      )!;
      await db.deleteFrom('jobs').where('id', '=', job.id).execute();
      await runStamping(h.runtime.deps, job.payload);
      const pending = await db.selectFrom('stampings').selectAll().where('invoice_id', '=', res.body.id).executeTakeFirstOrThrow();
      const zipKey = fake.callsOf('GetStatusZip').at(-1)!.params.trackId;
      assert.equal(pending.status, 'pending');
      assert.equal(pending.track_id, zipKey);
      await drainJobs(h, co);
      const inv = (await co.req({ url: `/v1/invoices/${res.body.id}`, env: 'live' })).body;
      assert.equal(inv.fiscal_status, 'stamped');
      assert.equal(fake.callsOf('SendBillAsync').filter((c) => c.documentKeys.includes(inv.cufe)).length, 1);
    } finally {
      fake.script('*', { verdict: { status: 'accepted' } });
      assert.equal((await profile({ mode: 'sync' })).status, 200);
      authorities.live = previous;
    }
  });

  test('a live profile without a certificate: rejected (certificate_missing, before a folio is taken) and nothing is sent', async () => {
    const calls = fake.calls.length;
    assert.equal((await profile({}, { certificate: null, certificate_password: undefined })).status, 200);
    try {
      const inv = await stampNew();
      assert.equal(inv.fiscal_status, 'rejected');
      // Stamping checks the signing certificate before it takes a folio or builds anything.
      assert.match(inv.stampings[0].rejection_reason, /^certificate_missing: /);
      assert.equal(fake.calls.length, calls, 'nothing sent to DIAN');
    } finally {
      assert.equal((await profile({})).status, 200);
    }
  });
});
