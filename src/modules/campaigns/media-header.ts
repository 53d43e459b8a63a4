/**
 * What a media file really is, read from its first bytes (never from the URL's extension or the
 * server's Content-Type): JPEG (the frame size of its SOF segment), PNG (its IHDR chunk) or MP4
 * (the brand of its `ftyp` box). Pure and total: any input, however short or hostile, gives an
 * answer and never throws, and the walk over JPEG segments only ever moves forward.
 */

export type MediaHeader =
  | { kind: 'png'; width: number; height: number }
  | { kind: 'jpeg'; width: number; height: number }
  | { kind: 'mp4'; brand: string }
  | { kind: 'unknown'; reason: string };

const PNG_SIGNATURE = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];

/**
 * Brands of the ISO base media file format that mean an MP4 file (ISO/IEC 14496-12/14 and the
 * common MP4 profiles). QuickTime (`qt  `), audio-only (`M4A `) and 3GPP brands are not MP4 video.
 */
export const MP4_BRANDS: ReadonlySet<string> = new Set([
  'isom',
  'iso2',
  'iso3',
  'iso4',
  'iso5',
  'iso6',
  'iso7',
  'iso8',
  'iso9',
  'mp41',
  'mp42',
  'avc1',
  'M4V ',
  'mmp4',
  'dash',
  'msnv',
]);

const u16 = (b: Uint8Array, i: number) => (b[i] << 8) | b[i + 1];
const u32 = (b: Uint8Array, i: number) => ((b[i] << 24) | (b[i + 1] << 16) | (b[i + 2] << 8) | b[i + 3]) >>> 0;
const ascii = (b: Uint8Array, i: number, n: number) => String.fromCharCode(...b.subarray(i, i + n));

function png(b: Uint8Array): MediaHeader {
  // Signature (8), then the first chunk must be IHDR: length (4) = 13, type (4), width (4), height (4).
  if (b.length < 24) return { kind: 'unknown', reason: 'truncated PNG header' };
  if (ascii(b, 12, 4) !== 'IHDR' || u32(b, 8) !== 13) return { kind: 'unknown', reason: 'PNG without an IHDR chunk first' };
  const width = u32(b, 16);
  const height = u32(b, 20);
  // The PNG specification caps both at 2^31 − 1; 0 is invalid.
  if (width === 0 || height === 0 || width > 0x7fffffff || height > 0x7fffffff) return { kind: 'unknown', reason: 'PNG with invalid dimensions' };
  return { kind: 'png', width, height };
}

/** Start-of-frame markers: C0–CF except DHT (C4), JPG (C8) and DAC (CC). */
const isStartOfFrame = (marker: number) => marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc;

function jpeg(b: Uint8Array): MediaHeader {
  let i = 2; // after SOI (FF D8)
  while (i < b.length) {
    if (b[i] !== 0xff) return { kind: 'unknown', reason: 'JPEG segment without a marker' };
    // Any number of FF fill bytes may precede a marker.
    while (i < b.length && b[i] === 0xff) i++;
    if (i >= b.length) break;
    const marker = b[i++];
    // Markers without a length: TEM, RST0–7, SOI; EOI or SOS before any frame means no size.
    if (marker === 0x01 || (marker >= 0xd0 && marker <= 0xd8)) continue;
    if (marker === 0xd9 || marker === 0xda) return { kind: 'unknown', reason: 'JPEG without a frame header before its image data' };
    if (i + 2 > b.length) break;
    const length = u16(b, i);
    if (length < 2) return { kind: 'unknown', reason: 'JPEG segment with an invalid length' };
    if (isStartOfFrame(marker)) {
      // length (2), sample precision (1), height (2), width (2)
      if (length < 7 || i + 7 > b.length) break;
      const height = u16(b, i + 3);
      const width = u16(b, i + 5);
      // Height 0 means "defined later by a DNL segment": not a size we can judge.
      if (width === 0 || height === 0) return { kind: 'unknown', reason: 'JPEG with invalid dimensions' };
      return { kind: 'jpeg', width, height };
    }
    i += length; // forward only: length ≥ 2
  }
  return { kind: 'unknown', reason: 'truncated JPEG header' };
}

function mp4(b: Uint8Array): MediaHeader {
  // The first box: size (4), type 'ftyp' (4), major brand (4), minor version (4), compatible brands (4 each).
  // Size 0 means "to the end of the file"; 1 (a 64-bit size follows) never fits an ftyp box.
  const size = u32(b, 0);
  if ((size !== 0 && size < 16) || b.length < 16) return { kind: 'unknown', reason: 'truncated ftyp box' };
  const end = size === 0 ? b.length : Math.min(size, b.length);
  const brands = [ascii(b, 8, 4)];
  for (let i = 16; i + 4 <= end; i += 4) brands.push(ascii(b, i, 4));
  const brand = brands.find((x) => MP4_BRANDS.has(x));
  if (!brand) return { kind: 'unknown', reason: `ISO media file of brand "${brands[0].replace(/[^\x20-\x7e]/g, '?')}", not MP4` };
  return { kind: 'mp4', brand };
}

export function readMediaHeader(bytes: Uint8Array): MediaHeader {
  if (bytes.length >= 8 && PNG_SIGNATURE.every((v, i) => bytes[i] === v)) return png(bytes);
  if (bytes.length >= 3 && bytes[0] === 0xff && bytes[1] === 0xd8 && bytes[2] === 0xff) return jpeg(bytes);
  if (bytes.length >= 8 && ascii(bytes, 4, 4) === 'ftyp') return mp4(bytes);
  return { kind: 'unknown', reason: bytes.length === 0 ? 'empty file' : 'not a JPEG, PNG or MP4 file' };
}
