import type { InstantKeyType } from '../../rails/index.ts';

/**
 * Instant-payment (rtkey) keys: how a key is recognised and normalised (docs/accounts.md). Who holds
 * a key is the key-directory rail's answer (src/rails/key-directory.ts; the sandbox table's entries).
 */
export type KeyType = InstantKeyType;

export interface ParsedKey {
  type: KeyType;
  value: string;
}

const ALPHANUM_RE = /^@[a-z0-9._-]{3,20}$/i;
const EMAIL_RE = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;
const PHONE_RE = /^(?:\+?57)?(3\d{9})$/;
const ID_RE = /^\d{5,15}$/;

/** Recognises a key: `@alias`, an e-mail, a Colombian mobile (3xxxxxxxxx, +57 optional) or a document number. */
export function parseInstantKey(raw: string): ParsedKey | null {
  const text = raw.trim();
  if (text.startsWith('@')) return ALPHANUM_RE.test(text) ? { type: 'ALPHANUM', value: text.toLowerCase() } : null;
  if (text.includes('@')) return EMAIL_RE.test(text) && text.length <= 100 ? { type: 'EMAIL', value: text.toLowerCase() } : null;
  const compact = text.replace(/[\s().-]/g, '');
  const phone = PHONE_RE.exec(compact);
  if (phone) return { type: 'PHONE', value: phone[1] };
  if (ID_RE.test(compact)) return { type: 'ID', value: compact };
  return null;
}
