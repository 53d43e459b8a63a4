import { bankId } from '../banks/catalogue.ts';

/**
 * Instant-payment (rtkey) keys: how a key is recognised and normalised, and the sandbox key
 * directory that GET /accounts/rtkey/{key} answers from with a test key (docs/accounts.md).
 */
export type KeyType = 'ALPHANUM' | 'PHONE' | 'EMAIL' | 'ID';

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

export interface DirectoryEntry {
  key_type: KeyType;
  key_value: string;
  document_type: 'CC' | 'CE' | 'NIT' | 'PASSPORT';
  document_number: string;
  first_name: string;
  last_name: string;
  status: 'ACTIVE' | 'INACTIVE';
  bank_code: string;
}

/** The sandbox directory: fixed, documented entries (docs/accounts.md). */
export const SANDBOX_KEY_DIRECTORY: readonly DirectoryEntry[] = [
  { key_type: 'ALPHANUM', key_value: '@ana.gomez', document_type: 'CC', document_number: '1020304050', first_name: 'Ana', last_name: 'Gómez', status: 'ACTIVE', bank_code: '1007' },
  { key_type: 'ALPHANUM', key_value: '@luis.perez', document_type: 'CC', document_number: '79123456', first_name: 'Luis', last_name: 'Pérez', status: 'ACTIVE', bank_code: '1051' },
  { key_type: 'ALPHANUM', key_value: '@tienda.andina', document_type: 'NIT', document_number: '900123456', first_name: 'Tienda Andina SAS', last_name: '', status: 'ACTIVE', bank_code: '1001' },
  { key_type: 'ALPHANUM', key_value: '@cuenta.cerrada', document_type: 'CC', document_number: '52111222', first_name: 'Marta', last_name: 'Rojas', status: 'INACTIVE', bank_code: '1013' },
  { key_type: 'PHONE', key_value: '3001234567', document_type: 'CC', document_number: '1020304050', first_name: 'Ana', last_name: 'Gómez', status: 'ACTIVE', bank_code: '1507' },
  { key_type: 'PHONE', key_value: '3109876543', document_type: 'CC', document_number: '80222333', first_name: 'Carlos', last_name: 'Ruiz', status: 'ACTIVE', bank_code: '1551' },
  { key_type: 'EMAIL', key_value: 'maria.lopez@example.com', document_type: 'CC', document_number: '43555666', first_name: 'María', last_name: 'López', status: 'ACTIVE', bank_code: '1809' },
  { key_type: 'ID', key_value: '1032456789', document_type: 'CC', document_number: '1032456789', first_name: 'Juan', last_name: 'Martínez', status: 'ACTIVE', bank_code: '1052' },
];

export function findSandboxKey(key: ParsedKey): (DirectoryEntry & { bank_id: string }) | undefined {
  const entry = SANDBOX_KEY_DIRECTORY.find((e) => e.key_type === key.type && e.key_value === key.value);
  return entry ? { ...entry, bank_id: bankId(entry.bank_code) } : undefined;
}
