import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { FiscalDocument } from '../../documents/dian/model.ts';
import type { SubmitInput } from './port.ts';
import { decodeApplicationResponse, dianClientFor, DianTaxAuthority, type DianCompanyConfig, type DianMode } from './dian-authority.ts';
import { FakeDianServer, makeTestCertificate, transportTestXml } from '../../../test/fakes/dian-server.ts';
import { fetchNumberingRanges } from './import-ranges.ts';
import { unzipTexts, zipSingleBase64 } from '../../documents/dian/zip.ts';

const certificate = makeTestCertificate();
let counter = 0;

/** A submit input whose document key (CUFE) is unique per test. */
function input(): SubmitInput {
  counter++;
  const cufe = counter.toString(16).padStart(4, '0').repeat(24);
  const document = {
    kind: 'invoice',
    environment: 'test',
    number: `SETP${990000000 + counter}`,
    prefix: 'SETP',
    folio: 990000000 + counter,
    issueDate: '2026-11-20',
    issueTime: '10:15:30-05:00',
    issuer: { nit: '900206480', dv: '2' },
  } as unknown as FiscalDocument; // transport tests only read kind, issuer.nit, issueDate, folio
  return {
    companyId: 'com_1',
    environment: 'test',
    document,
    built: { xml: transportTestXml(cufe), identityCode: cufe, qrText: '' },
    testScenario: null,
  };
}

describe('DianTaxAuthority against the fake DIAN server', () => {
  const server = new FakeDianServer({ testSetId: 'set-123' });
  const configs: Array<{ companyId: string; environment: string }> = [];
  const authority = (mode: DianMode, extra: Partial<DianCompanyConfig> | (() => Partial<DianCompanyConfig>) = {}, pollAttempts = 2) =>
    new DianTaxAuthority({
      resolveConfig: async (companyId, environment) => {
        configs.push({ companyId, environment });
        return {
          endpoint: server.url,
          certificate: { p12: certificate.p12, password: certificate.password },
          softwareId: 'soft-1',
          pin: '12345',
          testSetId: 'set-123',
          mode,
          timeoutMs: 10_000,
          ...(typeof extra === 'function' ? extra() : extra),
        };
      },
      pollAttempts,
      pollIntervalMs: 0,
      sleep: async () => {},
    });
  before(() => server.start());
  after(() => server.stop());

  test('accepted: SendBillSync 00 → accepted with the ApplicationResponse; the zip holds the XML under the annex name', async () => {
    const i = input();
    server.script(i.built.identityCode, { verdict: { status: 'accepted', notifications: ['Regla: FAJ44b, Notificación: NIT no autorizado'] } });
    const outcome = await authority('sync').submit(i);
    assert.equal(outcome.status, 'accepted');
    assert.ok(outcome.status === 'accepted');
    assert.equal(outcome.trackId, i.built.identityCode);
    assert.match(outcome.applicationResponse ?? '', /<ApplicationResponse[^]*<cbc:ResponseCode>02</);
    assert.deepEqual(outcome.messages, ['Regla: FAJ44b, Notificación: NIT no autorizado']);
    const call = server.callsOf('SendBillSync').at(-1)!;
    assert.match(call.params.fileName, /^z0900206480000263b[0-9a-f]{6}\.zip$/);
    const [entry] = unzipTexts(Buffer.from(call.params.contentFile, 'base64'));
    assert.equal(entry.name, call.params.fileName.replace(/^z/, 'fv').replace(/\.zip$/, '.xml'));
    assert.equal(entry.text, i.built.xml);
    assert.deepEqual(configs.at(-1), { companyId: 'com_1', environment: 'test' });
  });

  test('rejected: the rule messages surface as the rejection reason (notifications left out)', async () => {
    const i = input();
    const messages = [
      'Regla: FAD06, Rechazo: Valor del CUFE no está calculado correctamente.',
      'Regla: FAU04, Rechazo: Valor total de impuestos no cuadra.',
      'Regla: FAJ44b, Notificación: NIT no autorizado',
    ];
    server.script(i.built.identityCode, { verdict: { status: 'rejected', messages } });
    const outcome = await authority('sync').submit(i);
    assert.deepEqual(outcome, {
      status: 'rejected',
      trackId: i.built.identityCode,
      reason: 'Regla: FAD06, Rechazo: Valor del CUFE no está calculado correctamente.; Regla: FAU04, Rechazo: Valor total de impuestos no cuadra.',
      messages,
    });
  });

  test('in process then accepted (async): SendBillAsync → pending with the ZipKey; GetStatusZip settles it', async () => {
    const i = input();
    server.script(i.built.identityCode, { verdict: { status: 'accepted' }, inProcessPolls: 3 });
    const a = authority('async');
    const first = await a.submit(i); // two polls inside submit, both 98
    assert.equal(first.status, 'pending');
    assert.match(first.trackId, /^[0-9a-f-]{36}$/);
    const second = await a.status({ ...i, trackId: first.trackId }); // third 98
    assert.deepEqual(second, { status: 'pending', trackId: first.trackId });
    const third = await a.status({ ...i, trackId: first.trackId });
    assert.equal(third.status, 'accepted');
    assert.equal(third.trackId, i.built.identityCode);
    assert.equal(server.callsOf('SendBillAsync').filter((c) => c.documentKeys[0] === i.built.identityCode).length, 1);
  });

  test('in process then accepted (sync): 98 → pending on the CUFE, settled by GetStatus', async () => {
    const i = input();
    server.script(i.built.identityCode, { verdict: { status: 'accepted' }, inProcessPolls: 1 });
    const a = authority('sync');
    assert.deepEqual(await a.submit(i), { status: 'pending', trackId: i.built.identityCode });
    const settled = await a.status({ ...i, trackId: i.built.identityCode });
    assert.equal(settled.status, 'accepted');
  });

  test('a timeout gives unknown, settled by GetStatus without resubmitting', async () => {
    const i = input();
    server.script(i.built.identityCode, { verdict: { status: 'accepted' }, submit: 'hang' });
    let timeoutMs = 200; // short for the send that hangs, generous for the GetStatus that settles it
    const a = authority('sync', () => ({ timeoutMs }));
    const first = await a.submit(i);
    timeoutMs = 10_000;
    assert.equal(first.status, 'unknown');
    assert.equal(first.trackId, i.built.identityCode);
    const settled = await a.status({ ...i, trackId: first.trackId });
    assert.equal(settled.status, 'accepted');
    assert.ok(settled.status === 'accepted' && settled.applicationResponse?.includes(i.built.identityCode));
    const sends = server.callsOf('SendBillSync').filter((c) => c.documentKeys[0] === i.built.identityCode);
    assert.equal(sends.length, 1, 'never resubmitted');
    assert.equal(server.callsOf('GetStatus').filter((c) => c.params.trackId === i.built.identityCode).length, 1);
  });

  test('a timeout where DIAN never got the document: GetStatus 66 → sent once more', async () => {
    const i = input();
    server.script(i.built.identityCode, { verdict: { status: 'accepted' }, submit: 'hang-lost' });
    let timeoutMs = 200;
    const a = authority('sync', () => ({ timeoutMs }));
    assert.equal((await a.submit(i)).status, 'unknown');
    timeoutMs = 10_000;
    server.script(i.built.identityCode, { verdict: { status: 'accepted' } });
    const settled = await a.status({ ...i, trackId: i.built.identityCode });
    assert.equal(settled.status, 'accepted');
    assert.equal(server.callsOf('SendBillSync').filter((c) => c.documentKeys[0] === i.built.identityCode).length, 2);
  });

  test('rule 90 (already processed) on a retry maps to the accepted outcome via GetStatus', async () => {
    const i = input();
    const a = authority('sync');
    assert.equal((await a.submit(i)).status, 'accepted');
    const retry = await a.submit(i);
    assert.equal(retry.status, 'accepted');
    assert.ok(retry.status === 'accepted' && retry.applicationResponse);
    // A rejected document re-sent stays rejected with DIAN's reason.
    const j = input();
    server.script(j.built.identityCode, { verdict: { status: 'rejected', messages: ['Regla: FAK24, Rechazo: DV del NIT no es correcto.'] } });
    assert.equal((await a.submit(j)).status, 'rejected');
    const again = await a.submit(j);
    assert.equal(again.status, 'rejected');
    assert.ok(again.status === 'rejected' && again.reason.includes('FAK24'));
  });

  test('test-set mode: SendTestSetAsync with the company test set id; a wrong id is rejected with DIAN message', async () => {
    const i = input();
    const outcome = await authority('test-set').submit(i);
    assert.equal(outcome.status, 'accepted');
    assert.equal(server.callsOf('SendTestSetAsync').at(-1)!.params.testSetId, 'set-123');
    const wrong = await authority('test-set', { testSetId: 'nope' }).submit(input());
    assert.equal(wrong.status, 'rejected');
    assert.ok(wrong.status === 'rejected' && /Set de pruebas no existe/.test(wrong.reason));
  });

  test('a security fault (DIAN refuses the message) is unknown, not a rejection of the document', async () => {
    const i = input();
    const broken = new DianTaxAuthority({
      resolveConfig: async () => ({
        endpoint: server.url,
        certificate: { p12: certificate.p12, password: certificate.password },
        softwareId: 's',
        pin: 'p',
        mode: 'sync',
        timeoutMs: 10_000,
      }),
      fetch: (url, init) => fetch(url, { ...init, body: String(init?.body).replace('<ds:SignatureValue>', '<ds:SignatureValue>AAAA') }),
    });
    const outcome = await broken.submit(i);
    assert.equal(outcome.status, 'unknown');
    assert.ok(outcome.status === 'unknown' && /InvalidSecurity/.test(outcome.reason));
  });
});

test('ApplicationResponse bytes: plain XML or a zip holding it', () => {
  const xml = '<ApplicationResponse>ñ</ApplicationResponse>';
  assert.equal(decodeApplicationResponse(Buffer.from(xml).toString('base64')), xml);
  assert.equal(decodeApplicationResponse(zipSingleBase64('ar.xml', xml)), xml);
  assert.equal(decodeApplicationResponse(null), null);
});

test('import-ranges through a client built from the company configuration', async () => {
  const server = new FakeDianServer({
    ranges: [
      {
        resolutionNumber: '18760000001',
        resolutionDate: '2019-01-19',
        prefix: 'SETP',
        fromNumber: '990000000',
        toNumber: '995000000',
        validDateFrom: '2019-01-19',
        validDateTo: '2030-01-19',
        technicalKey: 'fc8eac422eba16e22ffd8c6f94b3f40a6e38162c',
      },
    ],
  });
  await server.start();
  try {
    const client = dianClientFor({ endpoint: server.url, certificate: { p12: certificate.p12, password: certificate.password }, timeoutMs: 10_000 });
    const ranges = await fetchNumberingRanges(client, { accountCode: '900206480', accountCodeT: '900206480', softwareCode: 'soft-1' });
    assert.deepEqual(ranges, [
      {
        number: '18760000001',
        prefix: 'SETP',
        from: 990000000,
        to: 995000000,
        validFrom: '2019-01-19',
        validUntil: '2030-01-19',
        technicalKey: 'fc8eac422eba16e22ffd8c6f94b3f40a6e38162c',
      },
    ]);
  } finally {
    await server.stop();
  }
});
