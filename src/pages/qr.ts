import { encode } from 'uqr';

/**
 * The instant-key (rtkey) QR: an EMVCo merchant-presented payload (the TLV format of the
 * interoperable QR codes Colombian instant payments use) and its QR as inline SVG.
 * In the sandbox the payload names the attempt; a real rail would supply the key and the ids.
 */

function tlv(id: string, value: string): string {
  return `${id}${String(value.length).padStart(2, '0')}${value}`;
}

/** CRC-16/CCITT-FALSE, as EMVCo's tag 63 requires. */
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

export function emvcoPayload(input: { key: string; merchant: string; amountMinor: bigint; currency: string; reference: string }): string {
  const amount = `${input.amountMinor / 100n}.${(input.amountMinor % 100n).toString().padStart(2, '0')}`;
  const body =
    tlv('00', '01') +
    tlv('01', '12') + // dynamic: one payment
    tlv('26', tlv('00', 'CO.RECAUDO.RTKEY') + tlv('01', input.key)) +
    tlv('52', '0000') +
    tlv('53', NUMERIC_CURRENCY[input.currency] ?? '170') +
    tlv('54', amount) +
    tlv('58', 'CO') +
    tlv('59', ascii(input.merchant, 25) || 'RECAUDO') +
    tlv('60', 'BOGOTA') +
    tlv('62', tlv('05', input.reference.slice(0, 25)));
  const withCrcTag = `${body}6304`;
  return withCrcTag + crc16(withCrcTag);
}

/** The QR of `text` as an SVG drawing in currentColor on white, with an accessible name. */
export function qrSvg(text: string, label: string): string {
  const qr = encode(text, { ecc: 'M', border: 2 });
  let path = '';
  qr.data.forEach((row, y) => {
    row.forEach((dark, x) => {
      if (dark) path += `M${x} ${y}h1v1h-1z`;
    });
  });
  const n = qr.size;
  const safeLabel = label.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
  return `<svg class="qr" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ${n} ${n}" role="img" aria-label="${safeLabel}" shape-rendering="crispEdges"><rect width="${n}" height="${n}" fill="#fff"/><path d="${path}" fill="#000"/></svg>`;
}
