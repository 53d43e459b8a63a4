import { createCipheriv, createDecipheriv, createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

/**
 * Secrets at rest (docs/operations.md "Secrets at rest"): every secret a merchant gives us or we
 * issue to it (webhook secrets and tokens, the DIAN certificate, its password and the software PIN,
 * connector keys, stored idempotent responses) is sealed with AES-256-GCM, a random 96-bit nonce
 * per value. A sealed value names the key that sealed it (the first 8 hex characters of the key's
 * SHA-256), so during a rotation values sealed under the previous key still open:
 *   v1.<key id>.<nonce base64url>.<tag base64url>.<ciphertext base64url>
 * A stored value that does not have this shape is a clear value written before sealing existed: it
 * is read as it is, and the seal pass (`recaudo secrets seal`, and at start for the small tables)
 * seals it.
 */

export function keyId(key: Buffer): string {
  return createHash('sha256').update(key).digest('hex').slice(0, 8);
}

export function seal(key: Buffer, plaintext: string): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  const data = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  return ['v1', keyId(key), iv.toString('base64url'), cipher.getAuthTag().toString('base64url'), data.toString('base64url')].join('.');
}

/** Thrown when no key given can open a sealed value (a lost or wrong SECRETS_KEY), or the value was altered. */
export class SecretUnreadable extends Error {
  constructor(
    readonly sealedBy: string,
    reason = 'no key given has that id (SECRETS_KEY, SECRETS_KEY_PREVIOUS or the key file)',
  ) {
    super(`a secret sealed under key ${sealedBy} cannot be opened: ${reason}`);
    this.name = 'SecretUnreadable';
  }
}

const SEALED = /^v1\.([0-9a-f]{8})\.([A-Za-z0-9_-]{16})\.([A-Za-z0-9_-]{22})\.([A-Za-z0-9_-]*)$/;

/** Whether a stored value is a sealed envelope (otherwise it is a clear value from before sealing). */
export function isSealed(value: string): boolean {
  return SEALED.test(value);
}

export function open(keys: readonly (Buffer | null)[], sealed: string): string {
  const m = SEALED.exec(sealed);
  if (!m) throw new SecretUnreadable('unknown', 'not a sealed value');
  const [, id, iv, tag, data] = m;
  const key = keys.find((k): k is Buffer => !!k && keyId(k) === id);
  if (!key) throw new SecretUnreadable(id);
  const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64url'));
  decipher.setAuthTag(Buffer.from(tag, 'base64url'));
  try {
    return Buffer.concat([decipher.update(Buffer.from(data, 'base64url')), decipher.final()]).toString('utf8');
  } catch {
    throw new SecretUnreadable(id, 'the value does not authenticate under that key (altered, or a different key with the same id)');
  }
}

/** Whether a value was sealed under `key` (false: it needs sealing again after a rotation). */
export function sealedWith(key: Buffer, sealed: string): boolean {
  return SEALED.exec(sealed)?.[1] === keyId(key);
}

/**
 * The keys of a process: `current` seals every new value; `opening` keys only open (the previous
 * key during a rotation, a key-file rotation's next key, the public development key outside
 * production so values sealed by older releases' development default still open).
 */
export interface Keyring {
  readonly current: Buffer;
  readonly opening: readonly Buffer[];
  /** Where `current` comes from: SECRETS_KEY, the data directory's key file, or the development key. */
  readonly source: 'env' | 'file' | 'development';
  /** The key file (source `file`). */
  readonly file?: string;
}

export function sealSecret(keyring: Keyring, plaintext: string): string {
  return seal(keyring.current, plaintext);
}

export function sealNullable(keyring: Keyring, plaintext: string | null): string | null {
  return plaintext === null ? null : seal(keyring.current, plaintext);
}

/**
 * A keyed digest of a short secret (a 6-digit login code has a million values: a plain hash of it
 * is reversed offline in a second by whoever reads the table). HMAC-SHA256 under a key derived
 * from the secrets key for `purpose`, so reading the database alone does not tell the value.
 */
export function keyedDigest(keyring: Keyring, purpose: string, value: string): string {
  return digestWith(keyring.current, purpose, value);
}

/** Whether `stored` is `value`'s keyed digest under the current key or one still opening (a rotation). */
export function keyedDigestMatches(keyring: Keyring, purpose: string, value: string, stored: string): boolean {
  const given = Buffer.from(stored);
  return [keyring.current, ...keyring.opening].some((key) => {
    const expected = Buffer.from(digestWith(key, purpose, value));
    return expected.length === given.length && timingSafeEqual(expected, given);
  });
}

function digestWith(key: Buffer, purpose: string, value: string): string {
  const derived = createHmac('sha256', key).update(`recaudo keyed digest: ${purpose}`).digest();
  return createHmac('sha256', derived).update(value).digest('base64url');
}

/** Opens a stored value: sealed → its plaintext (or SecretUnreadable); clear (from before sealing) → as it is. */
export function openSecret(keyring: Keyring, stored: string): string {
  return isSealed(stored) ? open([keyring.current, ...keyring.opening], stored) : stored;
}

export function openNullable(keyring: Keyring, stored: string | null): string | null {
  return stored === null ? null : openSecret(keyring, stored);
}

/** Parses a key given as 64 hex characters or base64 of 32 bytes; null when empty. */
export function parseKey(raw: string | undefined, name: string): Buffer | null {
  const text = (raw ?? '').trim();
  if (!text) return null;
  const key = /^[0-9a-f]{64}$/i.test(text) ? Buffer.from(text, 'hex') : Buffer.from(text, 'base64');
  if (key.length !== 32) throw new Error(`${name} must be 32 bytes: 64 hex characters or base64`);
  return key;
}

/** A new random key, as an operator would put it in SECRETS_KEY (base64). */
export function generateKeyText(): string {
  return randomBytes(32).toString('base64');
}

/** The embedded default's key file in the data directory, and the next key of a rotation in progress. */
export function keyFilePath(dataDir: string): string {
  return path.join(dataDir, 'secrets.key');
}
export function nextKeyFilePath(dataDir: string): string {
  return path.join(dataDir, 'secrets.key.next');
}

/** Reads a key file, refusing one that others may read (the key would be as exposed as the data). */
export function readKeyFile(file: string): Buffer {
  const mode = fs.statSync(file).mode & 0o777;
  if (mode & 0o077) throw new Error(`${file} is readable by others (mode ${mode.toString(8)}): chmod 600 it`);
  return parseKey(fs.readFileSync(file, 'utf8'), file)!;
}

/**
 * The key file, created once with mode 0600 (exclusive create: two processes racing get the same
 * key, the loser reads the winner's file) and reused on every later start.
 */
export function ensureKeyFile(file: string): { key: Buffer; created: boolean } {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  try {
    const fd = fs.openSync(file, 'wx', 0o600);
    try {
      fs.writeSync(fd, `${generateKeyText()}\n`);
      fs.fsyncSync(fd);
    } finally {
      fs.closeSync(fd);
    }
    return { key: readKeyFile(file), created: true };
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    return { key: readKeyFile(file), created: false };
  }
}

/** The development key: public (anyone can compute it), so never used with NODE_ENV=production. */
export const DEVELOPMENT_SECRETS_KEY = createHash('sha256').update('recaudo development secrets key').digest();

/** Refusal to start: PostgreSQL in production without SECRETS_KEY (docs/operations.md "Secrets at rest"). */
export class SecretsKeyMissing extends Error {
  constructor() {
    super(
      'SECRETS_KEY is not set: with DATABASE_URL and NODE_ENV=production every process must seal secrets with the same key. ' +
        'Generate one with `recaudo secrets generate-key` (or `openssl rand -base64 32`), set SECRETS_KEY on every process, and start again.',
    );
    this.name = 'SecretsKeyMissing';
  }
}

export interface KeyringSettings {
  secretsKey: Buffer | null;
  secretsKeyPrevious: Buffer | null;
  production: boolean;
}

/**
 * Which key seals secrets in this process:
 * - SECRETS_KEY when set (SECRETS_KEY_PREVIOUS also opens);
 * - else, with an embedded data directory this process owns (`dataDir`), the key file in it
 *   (created 0600 at the first start); `secrets.key.next` also opens while a rotation runs;
 * - else with NODE_ENV=production (PostgreSQL): SecretsKeyMissing — replicas on other hosts would
 *   each make their own key and could not open each other's secrets;
 * - else (development, tests on PostgreSQL): the public development key; the caller warns.
 */
export function resolveKeyring(settings: KeyringSettings, dataDir: string | null): Keyring & { created?: boolean } {
  const legacy = settings.production ? [] : [DEVELOPMENT_SECRETS_KEY];
  const extra = (keys: (Buffer | null)[], current: Buffer) =>
    keys.filter((k): k is Buffer => !!k && !k.equals(current)).filter((k, i, all) => all.findIndex((o) => o.equals(k)) === i);
  if (settings.secretsKey) {
    return { current: settings.secretsKey, opening: extra([settings.secretsKeyPrevious, ...legacy], settings.secretsKey), source: 'env' };
  }
  if (dataDir) {
    const file = keyFilePath(dataDir);
    const { key, created } = ensureKeyFile(file);
    const next = fs.existsSync(nextKeyFilePath(dataDir)) ? readKeyFile(nextKeyFilePath(dataDir)) : null;
    return { current: key, opening: extra([next, settings.secretsKeyPrevious, ...legacy], key), source: 'file', file, created };
  }
  if (settings.production) throw new SecretsKeyMissing();
  return { current: DEVELOPMENT_SECRETS_KEY, opening: extra([settings.secretsKeyPrevious], DEVELOPMENT_SECRETS_KEY), source: 'development' };
}
