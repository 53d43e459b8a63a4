import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { XMLParser } from 'fast-xml-parser';
import { excC14n, FakeDianServer, makeTestCertificate, transportTestXml, verifySecuredEnvelope, WSU } from '../../../test/fakes/dian-server.ts';
import { DIAN_ENDPOINTS, DianCallError, DianSoapClient, resolveEndpoint } from './soap-client.ts';
import { isAlreadyProcessed, operationResult, parseDianResponse, rejectionReason, ruleCodes, soapBody } from './soap-response.ts';
import { buildSecuredEnvelope, loadWsCredentials, signedInfoElement, toElement } from './ws-security.ts';
import { dianFileNames, unzipTexts, zipSingle, zipSingleBase64 } from '../../documents/dian/zip.ts';
import { fetchNumberingRanges, NumberingRangeError } from './import-ranges.ts';

const cert = makeTestCertificate();
const credentials = loadWsCredentials({ p12: cert.p12, password: cert.password });
const KEY = 'ab'.repeat(48);
const otherCertificateDer = loadWsCredentials({ p12: makeTestCertificate().p12, password: 'test-password' }).certificateDer;

const ordered = new XMLParser({
  preserveOrder: true,
  ignoreAttributes: false,
  attributeNamePrefix: '',
  parseTagValue: false,
  trimValues: false,
  processEntities: false,
});

describe('WS-Security header', () => {
  const to = 'https://vpfe-hab.dian.gov.co/WcfDianCustomerServices.svc';
  const envelope = buildSecuredEnvelope({
    action: 'http://wcf.dian.colombia/IWcfDianCustomerServices/GetStatus',
    to,
    body: `<wcf:GetStatus><wcf:trackId>${KEY}</wcf:trackId></wcf:GetStatus>`,
    credentials,
    now: new Date('2026-11-21T12:00:00.000Z'),
    idSuffix: 'FIXED',
  });

  test('the written wsa:To and SignedInfo are byte-identical to their exclusive C14N in the envelope', () => {
    const tree = ordered.parse(envelope);
    // Envelope > Header > [Security, Action, To]; the Header declares wsa, the Envelope soap and wcf.
    const env = tree[0];
    const header = env['soap:Envelope'][0];
    const scopeHeader = new Map([
      ['soap', 'http://www.w3.org/2003/05/soap-envelope'],
      ['wcf', 'http://wcf.dian.colombia'],
      ['wsa', 'http://www.w3.org/2005/08/addressing'],
    ]);
    const toNode = header['soap:Header'].find((n: Record<string, unknown>) => 'wsa:To' in n);
    assert.equal(excC14n(toNode, scopeHeader), toElement(to, 'ID-FIXED'));
    const security = header['soap:Header'].find((n: Record<string, unknown>) => 'wsse:Security' in n);
    const signature = security['wsse:Security'].find((n: Record<string, unknown>) => 'ds:Signature' in n);
    const signedInfo = signature['ds:Signature'].find((n: Record<string, unknown>) => 'ds:SignedInfo' in n);
    const scopeSig = new Map([...scopeHeader, ['wsse', 'x'], ['wsu', WSU], ['ds', 'http://www.w3.org/2000/09/xmldsig#']]);
    const canonical = excC14n(signedInfo, scopeSig);
    assert.ok(envelope.includes(canonical));
    assert.match(
      canonical,
      /^<ds:SignedInfo xmlns:ds="http:\/\/www.w3.org\/2000\/09\/xmldsig#"><ds:CanonicalizationMethod Algorithm="http:\/\/www.w3.org\/2001\/10\/xml-exc-c14n#">/,
    );
    assert.equal(signedInfoElement('ID-FIXED', 'x').startsWith('<ds:SignedInfo xmlns:ds='), true);
  });

  test('timestamp, token, signature and addressing are where DIAN expects them', () => {
    assert.match(
      envelope,
      /<wsu:Timestamp wsu:Id="TS-FIXED"><wsu:Created>2026-11-21T12:00:00.000Z<\/wsu:Created><wsu:Expires>2026-11-21T12:01:00.000Z<\/wsu:Expires>/,
    );
    assert.ok(envelope.includes(`>${credentials.certificateDer.toString('base64')}</wsse:BinarySecurityToken>`));
    assert.match(
      envelope,
      /<ds:KeyInfo Id="KI-FIXED"><wsse:SecurityTokenReference wsu:Id="STR-FIXED"><wsse:Reference URI="#X509-FIXED" ValueType="[^"]+#X509v3">/,
    );
    assert.match(envelope, /<wsa:Action>http:\/\/wcf.dian.colombia\/IWcfDianCustomerServices\/GetStatus<\/wsa:Action>/);
    assert.match(envelope, /<ds:Reference URI="#ID-FIXED">/);
    // The fake server's verifier (independent C14N) accepts it within its validity...
    assert.equal(verifySecuredEnvelope(envelope, { to, now: new Date('2026-11-21T12:00:30Z') }).operation, 'GetStatus');
    // ...and refuses it after wsu:Expires.
    assert.throws(() => verifySecuredEnvelope(envelope, { to, now: new Date('2026-11-21T12:01:01Z') }), /expired/);
    assert.throws(
      () => verifySecuredEnvelope(envelope, { to: 'https://elsewhere.example/x.svc', now: new Date('2026-11-21T12:00:30Z') }),
      /not this endpoint/,
    );
  });

  test(
    'xmlsec1 (independent implementation) verifies the signature over wsa:To',
    { skip: spawnSync('xmlsec1', ['--version']).error !== undefined && 'xmlsec1 not installed' },
    () => {
      const dir = mkdtempSync(path.join(tmpdir(), 'recaudo-wss-'));
      try {
        writeFileSync(path.join(dir, 'env.xml'), envelope);
        writeFileSync(path.join(dir, 'cert.pem'), cert.certificatePem);
        const ok = spawnSync(
          'xmlsec1',
          [
            '--verify',
            '--id-attr:Id',
            'http://www.w3.org/2005/08/addressing:To',
            '--pubkey-cert-pem',
            path.join(dir, 'cert.pem'),
            path.join(dir, 'env.xml'),
          ],
          { encoding: 'utf8' },
        );
        assert.equal(ok.status, 0, ok.stderr);
        writeFileSync(path.join(dir, 'bad.xml'), envelope.replace('WcfDianCustomerServices.svc</wsa:To>', 'WcfDianCustomerServices.svc?x</wsa:To>'));
        const bad = spawnSync(
          'xmlsec1',
          [
            '--verify',
            '--id-attr:Id',
            'http://www.w3.org/2005/08/addressing:To',
            '--pubkey-cert-pem',
            path.join(dir, 'cert.pem'),
            path.join(dir, 'bad.xml'),
          ],
          { encoding: 'utf8' },
        );
        assert.notEqual(bad.status, 0);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  );

  test('PKCS#12: the leaf is picked by its public key; a wrong password is an error', () => {
    assert.ok(credentials.certificateDer.length > 300);
    assert.throws(() => loadWsCredentials({ p12: cert.p12, password: 'wrong' }));
  });
});

describe('DIAN SOAP client against the fake DIAN server', () => {
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
      {
        resolutionNumber: '18764000000002',
        resolutionDate: '2026-01-02T00:00:00',
        prefix: 'FE',
        fromNumber: '1',
        toNumber: '5000',
        validDateFrom: '2026-01-02T00:00:00',
        validDateTo: '2027-01-02T00:00:00',
        technicalKey: '0123456789abcdef0123456789abcdef01234567',
      },
    ],
  });
  let client: DianSoapClient;
  before(async () => {
    await server.start();
    client = new DianSoapClient({ endpoint: server.url, credentials, timeoutMs: 10_000 });
  });
  after(() => server.stop());

  const content = (key: string) => zipSingleBase64(`fv${key.slice(0, 8)}.xml`, transportTestXml(key));

  test('SendBillSync accepted: DianResponse parsed, ApplicationResponse returned', async () => {
    const key = '01'.repeat(48);
    const res = await client.sendBillSync('z0900206480000260000002a.zip', content(key));
    assert.equal(res.isValid, true);
    assert.equal(res.statusCode, '00');
    assert.equal(res.xmlDocumentKey, key);
    assert.match(Buffer.from(res.xmlBase64Bytes ?? '', 'base64').toString(), /<ApplicationResponse/);
    // Sending it again: rule 90.
    const again = await client.sendBillSync('z0900206480000260000002a.zip', content(key));
    assert.equal(again.statusCode, '99');
    assert.ok(isAlreadyProcessed(again));
    assert.equal((await client.getStatus(key)).statusCode, '00');
    assert.equal((await client.getStatus('ff'.repeat(48))).statusCode, '66');
  });

  test('SendBillAsync / SendTestSetAsync answer a ZipKey; GetStatusZip lists the documents', async () => {
    const key = '02'.repeat(48);
    const upload = await client.sendBillAsync('z1.zip', content(key));
    assert.match(upload.zipKey ?? '', /^[0-9a-f-]{36}$/);
    const statuses = await client.getStatusZip(upload.zipKey!);
    assert.equal(statuses.length, 1);
    assert.equal(statuses[0].xmlDocumentKey, key);
    assert.equal(statuses[0].statusCode, '00');
    const testSet = await client.sendTestSetAsync('z2.zip', content('03'.repeat(48)), 'test-set-id');
    assert.ok(testSet.zipKey);
    assert.equal(server.callsOf('SendTestSetAsync')[0].params.testSetId, 'test-set-id');
  });

  test('GetNumberingRange parsed, and fetchNumberingRanges normalizes it for import-ranges', async () => {
    const raw = await client.getNumberingRange('900206480', '900206480', 'soft-1');
    assert.equal(raw.operationCode, '100');
    assert.equal(raw.ranges.length, 2);
    assert.deepEqual(server.callsOf('GetNumberingRange')[0].params, { accountCode: '900206480', accountCodeT: '900206480', softwareCode: 'soft-1' });
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
      {
        number: '18764000000002',
        prefix: 'FE',
        from: 1,
        to: 5000,
        validFrom: '2026-01-02',
        validUntil: '2027-01-02',
        technicalKey: '0123456789abcdef0123456789abcdef01234567',
      },
    ]);
    const saved = server.ranges;
    server.ranges = [];
    try {
      await assert.rejects(
        fetchNumberingRanges(client, { accountCode: '1', accountCodeT: '1', softwareCode: 'x' }),
        (e: unknown) => e instanceof NumberingRangeError && e.operationCode === '301',
      );
    } finally {
      server.ranges = saved;
    }
  });

  /** A client whose requests are altered on the way out. */
  const tampered = (alter: (body: string) => string, extra: Partial<ConstructorParameters<typeof DianSoapClient>[0]> = {}) =>
    new DianSoapClient({
      endpoint: server.url,
      credentials,
      timeoutMs: 10_000,
      fetch: (url, init) => fetch(url, { ...init, body: alter(String(init?.body)) }),
      ...extra,
    });

  for (const [name, alter, reason] of [
    [
      'a flipped signature value',
      (b: string) => b.replace(/<ds:SignatureValue>(.)/, (_m, c: string) => `<ds:SignatureValue>${c === 'A' ? 'B' : 'A'}`),
      /signature value/,
    ],
    ['a changed digest', (b: string) => b.replace(/<ds:DigestValue>(.)/, (_m, c: string) => `<ds:DigestValue>${c === 'A' ? 'B' : 'A'}`), /digest/],
    ['a wsa:To altered after signing', (b: string) => b.replace('<wsa:To ', '<wsa:To soap:mustUnderstand="false" '), /digest/],
    [
      'another certificate in the token',
      (b: string) => b.replace(/(<wsse:BinarySecurityToken[^>]*>)[^<]+/, (_m, open: string) => `${open}${otherCertificateDer.toString('base64')}`),
      /signature value/,
    ],
    ['a signature that does not cover wsa:To', (b: string) => b.replace(/<ds:Reference URI="#ID-/, '<ds:Reference URI="#TS-'), /does not cover/],
  ] as const) {
    test(`a tampered request is refused by the fake server: ${name}`, async () => {
      const before = server.refused.length;
      await assert.rejects(
        tampered(alter).getStatus(KEY),
        (e: unknown) => e instanceof DianCallError && e.kind === 'fault' && /InvalidSecurity/.test(e.fault?.subcode ?? '') && !e.outcomeUnknown,
      );
      assert.equal(server.refused.length, before + 1);
      assert.match(server.refused.at(-1)!, reason);
    });
  }

  test('an expired timestamp is refused', async () => {
    const late = { now: () => new Date(Date.now() - 10 * 60_000) };
    await assert.rejects(tampered((b) => b, { clock: late }).getStatus(KEY), (e: unknown) => e instanceof DianCallError && e.kind === 'fault');
    assert.match(server.refused.at(-1)!, /expired/);
  });

  test('no answer within the timeout → DianCallError timeout, outcome unknown', async () => {
    const key = '04'.repeat(48);
    server.script(key, { verdict: { status: 'accepted' }, submit: 'hang' });
    const quick = new DianSoapClient({ endpoint: server.url, credentials, timeoutMs: 150 });
    const started = Date.now();
    await assert.rejects(
      quick.sendBillSync('z.zip', content(key)),
      (e: unknown) => e instanceof DianCallError && e.kind === 'timeout' && e.outcomeUnknown,
    );
    assert.ok(Date.now() - started < 2000);
    assert.equal((await client.getStatus(key)).statusCode, '00');
  });

  test('a closed port is a network error (outcome unknown)', async () => {
    const dead = new DianSoapClient({ endpoint: 'http://127.0.0.1:9/WcfDianCustomerServices.svc', credentials, timeoutMs: 1000 });
    await assert.rejects(
      dead.getStatus(KEY),
      (e: unknown) => e instanceof DianCallError && (e.kind === 'network' || e.kind === 'timeout') && e.outcomeUnknown,
    );
  });

  test('the request is SOAP 1.2 with the action in the content type', async () => {
    let seen: Headers | null = null;
    const spy = new DianSoapClient({
      endpoint: server.url,
      credentials,
      fetch: (url, init) => {
        seen = new Headers(init?.headers);
        return fetch(url, init);
      },
    });
    await spy.getStatus(KEY);
    assert.equal(
      seen!.get('content-type'),
      'application/soap+xml; charset=utf-8; action="http://wcf.dian.colombia/IWcfDianCustomerServices/GetStatus"',
    );
  });
});

describe('response parsing', () => {
  const sample =
    `<s:Envelope xmlns:s="http://www.w3.org/2003/05/soap-envelope" xmlns:a="http://www.w3.org/2005/08/addressing"><s:Header/><s:Body>` +
    `<SendBillSyncResponse xmlns="http://wcf.dian.colombia"><SendBillSyncResult xmlns:b="http://schemas.datacontract.org/2004/07/DianResponse" xmlns:i="http://www.w3.org/2001/XMLSchema-instance">` +
    `<b:ErrorMessage xmlns:c="http://schemas.microsoft.com/2003/10/Serialization/Arrays"><c:string>Regla: FAJ44b, Notificación: Nit o Documento de Identificación informado No se encuentra autorizado</c:string>` +
    `<c:string>Regla: FAD06, Rechazo: Valor del CUFE no está calculado correctamente.</c:string><c:string>Regla: FAU04, Rechazo: Valor total &amp; impuestos no cuadran</c:string></b:ErrorMessage>` +
    `<b:IsValid>false</b:IsValid><b:StatusCode>99</b:StatusCode><b:StatusDescription>Validación contiene errores en campos mandatorios.</b:StatusDescription>` +
    `<b:StatusMessage>La Factura electrónica SETP990000001, ha sido rechazada.</b:StatusMessage><b:XmlBase64Bytes i:nil="true"/><b:XmlBytes i:nil="true"/>` +
    `<b:XmlDocumentKey>${KEY}</b:XmlDocumentKey><b:XmlFileName>fv09002064800002600000001</b:XmlFileName></SendBillSyncResult></SendBillSyncResponse></s:Body></s:Envelope>`;

  test('a rejected DianResponse: rule codes, rejection reason without notifications', () => {
    const r = parseDianResponse(operationResult(soapBody(sample), 'SendBillSync'));
    assert.equal(r.isValid, false);
    assert.equal(r.statusCode, '99');
    assert.equal(r.errorMessages.length, 3);
    assert.equal(r.xmlBase64Bytes, null);
    assert.equal(r.xmlDocumentKey, KEY);
    assert.deepEqual(ruleCodes(r.errorMessages), ['FAJ44b', 'FAD06', 'FAU04']);
    assert.equal(
      rejectionReason(r),
      'Regla: FAD06, Rechazo: Valor del CUFE no está calculado correctamente.; Regla: FAU04, Rechazo: Valor total & impuestos no cuadran',
    );
    assert.equal(isAlreadyProcessed(r), false);
  });

  test('a single ErrorMessage string is still a list; no messages → the status description', () => {
    const one = sample.replace(
      /<c:string>Regla: FAJ44b[^]*?<\/b:ErrorMessage>/,
      '<c:string>Regla: 90, Rechazo: Documento procesado anteriormente.</c:string></b:ErrorMessage>',
    );
    const r = parseDianResponse(operationResult(soapBody(one), 'SendBillSync'));
    assert.deepEqual(r.errorMessages, ['Regla: 90, Rechazo: Documento procesado anteriormente.']);
    assert.equal(isAlreadyProcessed(r), true);
    const none = sample.replace(/<b:ErrorMessage [^]*?<\/b:ErrorMessage>/, '<b:ErrorMessage xmlns:c="x"/>');
    assert.equal(
      rejectionReason(parseDianResponse(operationResult(soapBody(none), 'SendBillSync'))),
      'Validación contiene errores en campos mandatorios.',
    );
  });
});

describe('zip packaging and names', () => {
  test('names per the annex convention: type + NIT(10) + provider(3) + year(2) + hex consecutive(8)', () => {
    assert.deepEqual(dianFileNames({ kind: 'invoice', nit: '900206480', year: '2026-11-20', sequence: 990000042 }), {
      body: '0900206480000263b0233aa',
      xml: 'fv0900206480000263b0233aa.xml',
      zip: 'z0900206480000263b0233aa.zip',
    });
    assert.equal(dianFileNames({ kind: 'credit_note', nit: '900206480', year: 2026, sequence: 1 }).xml, 'nc09002064800002600000001.xml');
    assert.equal(
      dianFileNames({ kind: 'attached_document', nit: '800197268', year: 2026, sequence: 255, providerCode: '123' }).xml,
      'ad080019726812326000000ff.xml',
    );
  });

  test('one XML per zip, deterministic bytes, round-trips', () => {
    const xml = transportTestXml(KEY, '<cbc:Note>Año ñandú €</cbc:Note>');
    const a = zipSingle('fv1.xml', xml);
    assert.deepEqual(a, zipSingle('fv1.xml', xml));
    assert.deepEqual(unzipTexts(a), [{ name: 'fv1.xml', text: xml }]);
  });

  test('endpoints', () => {
    assert.equal(resolveEndpoint('test'), DIAN_ENDPOINTS.test);
    assert.equal(resolveEndpoint('production'), 'https://vpfe.dian.gov.co/WcfDianCustomerServices.svc');
    assert.throws(() => resolveEndpoint('not a url'));
  });
});
