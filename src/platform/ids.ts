import { randomBytes, createHash } from 'node:crypto';

const CROCKFORD = '0123456789abcdefghjkmnpqrstvwxyz';

/** Time-sortable opaque id: 10 chars of millisecond time + 16 chars of randomness (base32). */
export function prefixedId(prefix: string, at: number = Date.now()): string {
  let time = '';
  let t = at;
  for (let i = 0; i < 10; i++) {
    time = CROCKFORD[t % 32] + time;
    t = Math.floor(t / 32);
  }
  const bytes = randomBytes(10);
  let rand = '';
  for (let i = 0; i < 16; i++) {
    // 10 bytes = 80 bits = 16 base32 chars
    const bit = i * 5;
    const byte = bit >> 3;
    const shift = bit & 7;
    const word = (bytes[byte] << 8) | (bytes[byte + 1] ?? 0);
    rand += CROCKFORD[(word >> (11 - shift)) & 31];
  }
  return `${prefix}_${time}${rand}`;
}

/** UUID version 7 (time-ordered), generated here because PostgreSQL 15 has no uuidv7(). */
export function uuidv7(at: number = Date.now()): string {
  const bytes = randomBytes(16);
  const ms = BigInt(at);
  for (let i = 0; i < 6; i++) bytes[i] = Number((ms >> BigInt(8 * (5 - i))) & 0xffn);
  bytes[6] = (bytes[6] & 0x0f) | 0x70;
  bytes[8] = (bytes[8] & 0x3f) | 0x80;
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** Stable UUID derived from a name (for seeded catalogue rows that must keep their id everywhere). */
export function nameUuid(namespace: string, name: string): string {
  const hash = createHash('sha256').update(`${namespace}:${name}`).digest();
  hash[6] = (hash[6] & 0x0f) | 0x50;
  hash[8] = (hash[8] & 0x3f) | 0x80;
  const hex = hash.subarray(0, 16).toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
export function isUuid(value: string): boolean {
  return UUID_RE.test(value);
}

/** Random token of base62 characters with the given number of characters (~5.95 bits each). */
export function randomToken(length: number): string {
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
  let out = '';
  while (out.length < length) {
    for (const b of randomBytes(length * 2)) {
      // reject bytes >= 248 to keep the distribution uniform over 62 symbols
      if (b < 248 && out.length < length) out += alphabet[b % 62];
    }
  }
  return out;
}
