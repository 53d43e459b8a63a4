import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  DEVELOPMENT_SECRETS_KEY,
  isSealed,
  keyFilePath,
  keyId,
  open,
  openSecret,
  resolveKeyring,
  seal,
  sealSecret,
  SecretsKeyMissing,
  SecretUnreadable,
  type Keyring,
} from './secrets.ts';

/** The sealing primitives and the choice of key (docs/operations.md "Secrets at rest"). */

const K1 = randomBytes(32);
const K2 = randomBytes(32);
const ring = (current: Buffer, ...opening: Buffer[]): Keyring => ({ current, opening, source: 'env' });

test('round trip: any text (empty, unicode, a PKCS#12 as base64) seals and opens; a new nonce every time', () => {
  for (const plain of ['', 'wh_tok_abc', 'contraseña ñandú ✓', randomBytes(3000).toString('base64')]) {
    const a = seal(K1, plain);
    const b = seal(K1, plain);
    assert.ok(isSealed(a), a);
    assert.notEqual(a, b, 'a random nonce per value');
    assert.equal(a.split('.')[1], keyId(K1), 'the envelope names its key');
    assert.ok(!a.includes(plain) || plain === '', 'no clear text in the envelope');
    assert.equal(open([K1], a), plain);
    assert.equal(openSecret(ring(K2, K1), a), plain, 'an opening key (SECRETS_KEY_PREVIOUS) opens it');
  }
});

test('a wrong or missing key is a clear error naming the key, never garbage', () => {
  const sealed = seal(K1, 'prv_prod_secret');
  assert.throws(
    () => openSecret(ring(K2), sealed),
    (e: unknown) => e instanceof SecretUnreadable && e.sealedBy === keyId(K1) && /cannot be opened/.test(e.message),
  );
  // A value altered in the database (one ciphertext character changed) does not authenticate.
  const parts = sealed.split('.');
  parts[4] = (parts[4][0] === 'A' ? 'B' : 'A') + parts[4].slice(1);
  assert.throws(() => open([K1], parts.join('.')), /does not authenticate/);
  // A different key that happens to claim the same id (forged envelope) fails the same way.
  const forged = ['v1', keyId(K2), ...sealed.split('.').slice(2)].join('.');
  assert.throws(() => open([K2], forged), SecretUnreadable);
});

test('a clear value from before sealing reads as it is (read both ways)', () => {
  assert.equal(isSealed('wh_tok_plain'), false);
  assert.equal(openSecret(ring(K1), 'wh_tok_plain'), 'wh_tok_plain');
  assert.equal(openSecret(ring(K1), 'v1.notanenvelope'), 'v1.notanenvelope');
  assert.equal(openSecret(ring(K1), sealSecret(ring(K1), 'x')), 'x');
});

test('the key: SECRETS_KEY, else the data directory key file (0600, created once, reused), else refusal in production', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'recaudo-keyring-'));
  try {
    const env = resolveKeyring({ secretsKey: K1, secretsKeyPrevious: K2, production: true }, dir);
    assert.equal(env.source, 'env');
    assert.ok(env.current.equals(K1));
    assert.deepEqual(env.opening.map(keyId), [keyId(K2)], 'in production the public development key opens nothing');
    assert.equal(fs.existsSync(keyFilePath(dir)), false, 'no key file when SECRETS_KEY is set');

    const first = resolveKeyring({ secretsKey: null, secretsKeyPrevious: null, production: true }, dir);
    assert.equal(first.source, 'file');
    assert.equal(first.created, true);
    assert.equal(fs.statSync(keyFilePath(dir)).mode & 0o777, 0o600);
    const again = resolveKeyring({ secretsKey: null, secretsKeyPrevious: null, production: true }, dir);
    assert.equal(again.created, false);
    assert.ok(again.current.equals(first.current), 'the same key at every start');
    assert.ok(!first.current.equals(DEVELOPMENT_SECRETS_KEY));

    // A key file others may read is refused (the key would be as exposed as the data).
    fs.chmodSync(keyFilePath(dir), 0o644);
    assert.throws(() => resolveKeyring({ secretsKey: null, secretsKeyPrevious: null, production: false }, dir), /readable by others/);

    assert.throws(() => resolveKeyring({ secretsKey: null, secretsKeyPrevious: null, production: true }, null), SecretsKeyMissing);
    const dev = resolveKeyring({ secretsKey: null, secretsKeyPrevious: null, production: false }, null);
    assert.equal(dev.source, 'development');
    assert.ok(dev.current.equals(DEVELOPMENT_SECRETS_KEY));
    // Outside production values sealed by earlier releases' development default still open.
    const legacy = seal(DEVELOPMENT_SECRETS_KEY, 'old');
    assert.equal(openSecret(resolveKeyring({ secretsKey: K1, secretsKeyPrevious: null, production: false }, null), legacy), 'old');
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
