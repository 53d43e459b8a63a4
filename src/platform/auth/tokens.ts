import { createHash, timingSafeEqual } from 'node:crypto';

const digest = (value: string) => createHash('sha256').update(value, 'utf8').digest();

/**
 * Compares a secret in constant time: both sides are hashed first, so the comparison is over two
 * buffers of the same length whatever was sent, and its time says nothing about how much of the
 * secret a guess got right (nor about the secret's length).
 */
export function secretEquals(given: string, expected: string): boolean {
  return timingSafeEqual(digest(given), digest(expected));
}

/**
 * Does an `Authorization` header carry `Bearer <token>`? The scheme is case-insensitive (RFC 9110),
 * the token is compared with secretEquals. A missing or repeated header never matches.
 */
export function bearerTokenMatches(header: string | string[] | undefined, token: string): boolean {
  if (typeof header !== 'string') return false;
  const match = /^Bearer +(\S+) *$/i.exec(header);
  // Hash the given value even when the scheme is wrong: the time does not tell the two apart.
  return secretEquals(match ? match[1] : header, token) && match !== null;
}
