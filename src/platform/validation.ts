import { z } from 'zod';
import { validationError } from './errors/api-error.ts';

/** Field schemas shared by every module (one definition of a phone, an e-mail, metadata...). */

export const E164_RE = /^\+[1-9]\d{6,14}$/;
export const phoneE164 = z.string().regex(E164_RE, 'must be an E.164 phone number such as +573001234567');
export const colombianPhone = z.string().regex(/^\+57\d{10}$/, 'must be a Colombian phone number (+57 and 10 digits)');
export const email = z.email('must be a valid e-mail address').max(255);
export const uuid = z.string().regex(/^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/, 'must be a UUID');
export const httpsUrl = (max: number) =>
  z
    .string()
    .max(max, `must be at most ${max} characters`)
    .refine((v) => {
      try {
        return new URL(v).protocol === 'https:';
      } catch {
        return false;
      }
    }, 'must be an https URL');

/** Accepts JSON booleans and the strings "true"/"false" (query strings, lenient clients). */
export const looseBoolean = z.union([z.boolean(), z.enum(['true', 'false']).transform((v) => v === 'true')]);

/**
 * PRODUCT.md: metadata is an object of string values; also accepted: an array of {key, value},
 * an object whose values are {key, value}, and number or boolean values (stored as strings).
 */
const metadataScalar = z.union([z.string().max(500), z.number(), z.boolean()]);
const metadataPair = z.object({ key: z.string().min(1).max(40), value: metadataScalar.nullable() });
export const metadata = z
  .union([z.record(z.string().max(40), z.union([metadataScalar, metadataPair, z.null()])), z.array(metadataPair).max(50)])
  .describe('key/value strings (at most 50 keys)');

export type MetadataInput = z.infer<typeof metadata>;

export function normalizeMetadata(input: MetadataInput | null | undefined): Record<string, string> | undefined {
  if (input === null || input === undefined) return undefined;
  const out: Record<string, string> = {};
  const put = (key: string, value: unknown) => {
    if (value === null || value === undefined) return;
    out[key] = String(value);
  };
  if (Array.isArray(input)) for (const pair of input) put(pair.key, pair.value);
  else
    for (const [key, value] of Object.entries(input)) {
      if (value !== null && typeof value === 'object') put(value.key, value.value);
      else put(key, value);
    }
  if (Object.keys(out).length > 50) throw validationError({ metadata: ['at most 50 keys'] });
  return out;
}

/** Text with a length range; trims nothing, counts characters as the client sent them. */
export const text = (min: number, max: number) =>
  z.string().min(min, `must be at least ${min} characters`).max(max, `must be at most ${max} characters`);
