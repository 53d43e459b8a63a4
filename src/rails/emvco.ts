import { deflateSync } from 'node:zlib';
import { encode } from 'uqr';

/**
 * The instant-key (rtkey) QR: an EMVCo merchant-presented payload (the TLV format of the
 * interoperable QR codes Colombian instant payments use) and its QR image as a PNG data URL.
 * Shared by the payer pages (payment attempts) and the rtkey charges (docs/charges.md).
 */

function tlv(id: string, value: string): string {
  return `${id}${String(value.length).padStart(2, '0')}${value}`;
}

/** CRC-16/CCITT-FALSE (poly 0x1021, init 0xFFFF, no reflection, no final XOR), as EMVCo's tag 63 requires. */
export function crc16(text: string): string {
  let crc = 0xffff;
  for (const byte of Buffer.from(text, 'utf8')) {
    crc ^= byte << 8;
    for (let i = 0; i < 8; i++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
  }
  return crc.toString(16).toUpperCase().padStart(4, '0');
}

const NUMERIC_CURRENCY: Record<string, string> = { COP: '170', USD: '840', MXN: '484' };

/** ASCII only, as EMVCo's name and city fields expect, cut to `max`. */
function ascii(value: string, max: number): string {
  return value
    .normalize('NFD')
    .replace(/[\u0300-\u036f]/g, '')
    .replace(/[^\x20-\x7e]/g, '')
    .trim()
    .slice(0, max);
}

/**
 * 00 payload format "01", 01 point of initiation "12" (dynamic: one payment), 26 merchant account
 * information (globally unique id CO.RECAUDO.RTKEY and the rail's key or registration id), 52
 * merchant category code, 53 currency (ISO 4217 numeric: 170 for COP), 54 amount, 58 country CO,
 * 59 merchant name, 60 city, 62 additional data (05 reference label), 63 CRC over everything
 * before it, "6304" included.
 */
export function emvcoPayload(input: {
  key: string;
  merchant: string;
  amountMinor: bigint;
  currency: string;
  reference: string;
  mcc?: string;
  city?: string;
}): string {
  const amount = `${input.amountMinor / 100n}.${(input.amountMinor % 100n).toString().padStart(2, '0')}`;
  const body =
    tlv('00', '01') +
    tlv('01', '12') +
    tlv('26', tlv('00', 'CO.RECAUDO.RTKEY') + tlv('01', input.key)) +
    tlv('52', input.mcc ?? '0000') +
    tlv('53', NUMERIC_CURRENCY[input.currency] ?? '170') +
    tlv('54', amount) +
    tlv('58', 'CO') +
    tlv('59', ascii(input.merchant, 25) || 'RECAUDO') +
    tlv('60', ascii(input.city ?? 'BOGOTA', 15) || 'BOGOTA') +
    tlv('62', tlv('05', ascii(input.reference, 25)));
  const withCrcTag = `${body}6304`;
  return withCrcTag + crc16(withCrcTag);
}

/** Reads a payload back into its top-level tags (and checks the CRC): for tests and diagnostics. */
export function parseEmvco(payload: string): { tags: Record<string, string>; order: string[]; crcValid: boolean } {
  const tags: Record<string, string> = {};
  const order: string[] = [];
  let i = 0;
  while (i + 4 <= payload.length) {
    const id = payload.slice(i, i + 2);
    const len = Number(payload.slice(i + 2, i + 4));
    if (!Number.isInteger(len)) break;
    tags[id] = payload.slice(i + 4, i + 4 + len);
    order.push(id);
    i += 4 + len;
  }
  const crcValid = payload.length > 8 && payload.slice(-8, -4) === '6304' && crc16(payload.slice(0, -4)) === payload.slice(-4);
  return { tags, order, crcValid };
}

// ---------------------------------------------------------------------------------------------
// PNG: a 1-bit greyscale image of the QR, each module `scale` pixels, with a 4-module quiet zone.

const CRC_TABLE = (() => {
  const table = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    table[n] = c >>> 0;
  }
  return table;
})();

function crc32(bytes: Buffer): number {
  let c = 0xffffffff;
  for (const b of bytes) c = CRC_TABLE[(c ^ b) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

function chunk(type: string, data: Buffer): Buffer {
  const length = Buffer.alloc(4);
  length.writeUInt32BE(data.length);
  const typed = Buffer.concat([Buffer.from(type, 'ascii'), data]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(typed));
  return Buffer.concat([length, typed, crc]);
}

/** The QR of `text` as a PNG (black modules on white). */
export function qrPng(text: string, scale = 8): Buffer {
  const qr = encode(text, { ecc: 'M', border: 4 });
  const width = qr.size * scale;
  const rowBytes = Math.ceil(width / 8);
  const raw = Buffer.alloc((rowBytes + 1) * width, 0);
  for (let y = 0; y < width; y++) {
    const row = qr.data[Math.floor(y / scale)];
    const offset = y * (rowBytes + 1); // filter byte 0 (None) at offset
    for (let x = 0; x < width; x++) {
      // Greyscale 1-bit: 1 is white.
      if (!row[Math.floor(x / scale)]) raw[offset + 1 + (x >> 3)] |= 0x80 >> (x & 7);
    }
  }
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(width, 4);
  ihdr[8] = 1; // bit depth
  ihdr[9] = 0; // greyscale
  ihdr[10] = 0; // deflate
  ihdr[11] = 0; // adaptive filtering
  ihdr[12] = 0; // no interlace
  const signature = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
  return Buffer.concat([signature, chunk('IHDR', ihdr), chunk('IDAT', deflateSync(raw, { level: 9 })), chunk('IEND', Buffer.alloc(0))]);
}

export function qrPngDataUrl(text: string): string {
  return `data:image/png;base64,${qrPng(text).toString('base64')}`;
}
