import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';

/**
 * Secrets at rest (connector keys): AES-256-GCM under SECRETS_KEY. A sealed value names the key
 * that sealed it (the first 8 hex characters of its SHA-256), so after a rotation values sealed
 * under SECRETS_KEY_PREVIOUS still open while they are sealed again (docs/connectors.md).
 *   v1.<key id>.<iv base64url>.<tag base64url>.<ciphertext base64url>
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

/** Thrown when no key given can open a sealed value (a lost or wrong SECRETS_KEY). */
export class SecretUnreadable extends Error {
  constructor(readonly sealedBy: string) {
    super(`a secret sealed under key ${sealedBy} cannot be opened with SECRETS_KEY or SECRETS_KEY_PREVIOUS`);
    this.name = 'SecretUnreadable';
  }
}

export function open(keys: readonly (Buffer | null)[], sealed: string): string {
  const [version, id, iv, tag, data] = sealed.split('.');
  if (version !== 'v1' || !data) throw new SecretUnreadable('unknown');
  const key = keys.find((k): k is Buffer => !!k && keyId(k) === id);
  if (!key) throw new SecretUnreadable(id);
  const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64url'));
  decipher.setAuthTag(Buffer.from(tag, 'base64url'));
  try {
    return Buffer.concat([decipher.update(Buffer.from(data, 'base64url')), decipher.final()]).toString('utf8');
  } catch {
    throw new SecretUnreadable(id);
  }
}

/** Whether a value was sealed under `key` (false: it needs sealing again after a rotation). */
export function sealedWith(key: Buffer, sealed: string): boolean {
  return sealed.split('.')[1] === keyId(key);
}
