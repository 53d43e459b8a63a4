import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import forge from 'node-forge';
import { createHarness, expectValidation, type Company, type Harness } from '../../../test/harness.ts';
import { makeTestPkcs12 } from '../../../test/support/fiscal.ts';
import { CertificateLimitError, loadSigningKey, MAX_PKCS12_ITERATIONS } from '../../documents/dian/certificate.ts';

/**
 * Issue 29 item 1: node-forge runs a PKCS#12's own iteration counts before it can check anything, so
 * a small file could freeze the API. The counts are read from the structure and refused first.
 * Files are made with forge's default count (fast) and their iteration INTEGERs patched afterwards.
 */

type Asn1 = forge.asn1.Asn1;
const PASSWORD = 's3cret';
const HUGE = 5_000_000;
const kids = (n: Asn1): Asn1[] => n.value as Asn1[];
const der = (n: Asn1): string => forge.asn1.toDer(n).getBytes();
const parse = (bytes: string): Asn1 => forge.asn1.fromDer(bytes);
const integer = (n: number) => forge.asn1.create(forge.asn1.Class.UNIVERSAL, forge.asn1.Type.INTEGER, false, forge.asn1.integerToDer(n).getBytes());
const toBuffer = (pfx: Asn1) => Buffer.from(der(pfx), 'binary');

/** The PFX and its AuthenticatedSafe (node-forge writes [data: the certificates, data: the shrouded key]). */
function open(p12: Buffer): { pfx: Asn1; authSafe: Asn1 } {
  const pfx = parse(p12.toString('binary'));
  return { pfx, authSafe: parse(kids(kids(kids(pfx)[1])[1])[0].value as string) };
}
function store(pfx: Asn1, authSafe: Asn1): void {
  kids(kids(kids(pfx)[1])[1])[0].value = der(authSafe);
}
/** Recomputes the MAC (SHA-1, its salt and count kept) so node-forge goes on past it. */
function remac(pfx: Asn1): void {
  const macData = kids(pfx)[2];
  const salt = forge.util.createBuffer(kids(macData)[1].value as string);
  const count = parseInt(forge.util.bytesToHex(kids(macData)[2].value as string), 16);
  const key = forge.pkcs12.generateKey(PASSWORD, salt, 3, count, 20);
  const mac = forge.hmac.create();
  mac.start('sha1', key);
  mac.update(kids(kids(kids(pfx)[1])[1])[0].value as string);
  kids(kids(macData)[0])[1].value = mac.digest().getBytes();
}

const shroudedKeyAlgorithm = (safeContents: Asn1): Asn1 => kids(kids(kids(kids(safeContents)[0])[1])[0])[0];

function hugeMac(p12: Buffer): Buffer {
  const { pfx } = open(p12);
  kids(kids(pfx)[2])[2].value = integer(HUGE).value;
  return toBuffer(pfx);
}
const { Class, Type } = forge.asn1;
const create = forge.asn1.create;
const oid = (o: string) => create(Class.UNIVERSAL, Type.OID, false, forge.asn1.oidToDer(o).getBytes());

/**
 * A SafeContents as a PKCS#7 EncryptedData ContentInfo (PKCS#12 PBE, 3DES, `count` iterations):
 * pki.encryptPrivateKeyInfo encrypts the DER of any object into {AlgorithmIdentifier, OCTET STRING}.
 */
function encryptedBag(safeContents: Asn1, count: number): Asn1 {
  const sealed = (forge.pki as unknown as { encryptPrivateKeyInfo(o: Asn1, p: string, opts: object): Asn1 }).encryptPrivateKeyInfo(
    safeContents,
    PASSWORD,
    { algorithm: '3des', count },
  );
  return create(Class.UNIVERSAL, Type.SEQUENCE, true, [
    oid(forge.pki.oids.encryptedData),
    create(Class.CONTEXT_SPECIFIC, 0, true, [
      create(Class.UNIVERSAL, Type.SEQUENCE, true, [
        integer(0),
        create(Class.UNIVERSAL, Type.SEQUENCE, true, [
          oid(forge.pki.oids.data),
          kids(sealed)[0],
          create(Class.CONTEXT_SPECIFIC, 0, false, kids(sealed)[1].value as string),
        ]),
      ]),
    ]),
  ]);
}
/** The SafeContents of a plain data ContentInfo. */
const plainBag = (contentInfo: Asn1): Asn1 => parse(kids(kids(contentInfo)[1])[0].value as string);

/** The certificates' bag encrypted (as OpenSSL and Windows do), its PBE count huge. */
function hugeEncryptedBag(p12: Buffer): Buffer {
  const { pfx, authSafe } = open(p12);
  const bag = encryptedBag(plainBag(kids(authSafe)[0]), 2048);
  // ContentInfo → [0] → EncryptedData → EncryptedContentInfo → algorithm → PBE-params → iterations
  const algorithm = kids(kids(kids(kids(bag)[1])[0])[1])[1];
  kids(kids(algorithm)[1])[1].value = integer(HUGE).value;
  kids(authSafe)[0] = bag;
  store(pfx, authSafe);
  remac(pfx);
  return toBuffer(pfx);
}
function hugeKeyBag(p12: Buffer): Buffer {
  const { pfx, authSafe } = open(p12);
  const data = kids(kids(authSafe)[1])[1];
  const safeContents = parse(kids(data)[0].value as string);
  kids(kids(shroudedKeyAlgorithm(safeContents))[1])[1].value = integer(HUGE).value;
  kids(data)[0].value = der(safeContents);
  store(pfx, authSafe);
  remac(pfx);
  return toBuffer(pfx);
}
/**
 * The shrouded key (huge count) inside an encrypted bag of ordinary count: its count cannot be read
 * before that bag is decrypted (the MAC is recomputed so node-forge gets there).
 */
function hugeKeyInsideEncryptedBag(p12: Buffer): Buffer {
  const { pfx, authSafe } = open(p12);
  const safeContents = plainBag(kids(authSafe)[1]);
  kids(kids(shroudedKeyAlgorithm(safeContents))[1])[1].value = integer(HUGE).value;
  kids(authSafe)[1] = encryptedBag(safeContents, 2048);
  store(pfx, authSafe);
  remac(pfx);
  return toBuffer(pfx);
}

describe('fiscal profile: a PKCS#12 asking for too much key-derivation work (issue 29)', () => {
  let h: Harness;
  let co: Company;
  const cert = makeTestPkcs12(PASSWORD);
  before(async () => {
    h = await createHarness();
    co = await h.company('Iterations SAS');
  });
  after(() => h.close());

  const put = (p12: Buffer) =>
    co.req({ method: 'PUT', url: '/v1/fiscal-profile', body: { certificate: p12.toString('base64'), certificate_password: PASSWORD } });

  test('a huge MAC iteration count answers 422 on certificate within 1 s; /health stays fast; nothing saved', async () => {
    const before = await co.req({ url: '/v1/fiscal-profile' });
    const file = hugeMac(cert.p12);
    assert.ok(file.length < 2_000, `a small file (${file.length} bytes)`);
    const start = performance.now();
    const timed = async <T>(p: Promise<T>) => {
      const r = await p;
      return { r, ms: performance.now() - start };
    };
    // /health asked while the PUT is being handled (a timer: it fires only once the event loop is free).
    const healthLater = new Promise<void>((r) => setTimeout(r, 20)).then(() => h.app.inject({ url: '/health' }));
    const [refused, health] = await Promise.all([timed(put(file)), timed(healthLater)]);
    assert.ok(refused.ms < 1_000, `refused in ${Math.round(refused.ms)} ms`);
    assert.ok(health.ms < 1_000, `/health in ${Math.round(health.ms)} ms`);
    assert.equal(health.r.statusCode, 200);
    expectValidation(refused.r, 'certificate');
    assert.match(refused.r.body.errors.certificate[0], /MAC uses 5000000 key-derivation iterations; at most 200000/);
    const after = await co.req({ url: '/v1/fiscal-profile' });
    assert.deepEqual(after.body, before.body, 'nothing saved');
  });

  test('a huge count on the encrypted bag or on the key bag is refused the same way, before any derivation', async () => {
    for (const [name, file] of [
      ['encrypted bag', hugeEncryptedBag(cert.p12)],
      ['key bag', hugeKeyBag(cert.p12)],
    ] as const) {
      const start = performance.now();
      const res = await put(file);
      const ms = performance.now() - start;
      expectValidation(res, 'certificate');
      assert.match(res.body.errors.certificate[0], new RegExp(`${name} uses 5000000`), res.raw);
      assert.ok(ms < 1_000, `${name}: refused in ${Math.round(ms)} ms`);
    }
    assert.equal((await co.req({ url: '/v1/fiscal-profile' })).body.certificate, null, 'nothing saved');
  });

  test('a key bag only readable after decrypting its bag is checked before its own derivation', () => {
    const file = hugeKeyInsideEncryptedBag(cert.p12);
    const start = performance.now();
    assert.throws(
      () => loadSigningKey({ p12: file, password: PASSWORD }),
      (err: unknown) => {
        assert.ok(err instanceof CertificateLimitError, String(err));
        assert.match(err.message, /bag uses 5000000/);
        return true;
      },
    );
    assert.ok(performance.now() - start < 1_000);
  });

  test('a file at the bound opens in a worker thread: /health keeps answering meanwhile', async () => {
    const { pfx } = open(cert.p12);
    kids(kids(pfx)[2])[2].value = integer(MAX_PKCS12_ITERATIONS).value;
    remac(pfx);
    const file = toBuffer(pfx);
    const start = performance.now();
    const putting = put(file).then((r) => ({ r, ms: performance.now() - start }));
    // Asked while node-forge derives the MAC key (about a second at the bound), each answered at
    // once: counted from when it was due, so a blocked event loop (its timer firing late) shows.
    const probe = (delay: number) =>
      new Promise<number>((resolve) => {
        const due = performance.now() + delay;
        setTimeout(async () => {
          assert.equal((await h.app.inject({ url: '/health' })).statusCode, 200);
          resolve(performance.now() - due);
        }, delay);
      });
    const lags = await Promise.all([100, 200, 300].map(probe));
    const { r, ms } = await putting;
    assert.equal(r.status, 200, r.raw);
    assert.ok(ms > 300, `the PUT (${Math.round(ms)} ms) was still running when /health was asked`);
    assert.ok(
      Math.max(...lags) < 150,
      `/health answered ${lags.map(Math.round).join(', ')} ms after it was due while the PUT took ${Math.round(ms)} ms`,
    );
  });

  test('ordinary files (and the limit itself) still open', async () => {
    const ok = await put(cert.p12);
    assert.equal(ok.status, 200, ok.raw);
    assert.equal(ok.body.certificate.serial, cert.serial);
    const { pfx } = open(cert.p12);
    kids(kids(pfx)[2])[2].value = integer(MAX_PKCS12_ITERATIONS).value;
    remac(pfx);
    assert.ok(loadSigningKey({ p12: toBuffer(pfx), password: PASSWORD }).serialHex);
  });
});
