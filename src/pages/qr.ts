import { encode } from 'uqr';

/**
 * The instant-key (rtkey) QR of the payer pages: the EMVCo merchant-presented payload
 * (src/rails/emvco.ts) drawn as inline SVG. In the sandbox the payload names the attempt; a real
 * rail would supply the key and the ids.
 */

// The payload lives with the rails (the rtkey charges use it too); the pages draw it as SVG.
export { crc16, emvcoPayload } from '../rails/emvco.ts';

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
