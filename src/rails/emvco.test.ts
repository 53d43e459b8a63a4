import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { inflateSync } from 'node:zlib';
import { crc16, emvcoPayload, parseEmvco, qrPng, qrPngDataUrl } from './emvco.ts';

describe('EMVCo merchant-presented QR', () => {
  test('CRC-16/CCITT-FALSE: the catalogue check value and a published EMVCo payload', () => {
    // The CRC catalogue's check value for CRC-16/CCITT-FALSE.
    assert.equal(crc16('123456789'), '29B1');
    // The Brazilian central bank's published Pix example (an EMVCo merchant-presented payload):
    // its tag 63 is 1D3D, computed over everything before it, "6304" included.
    const pix =
      '00020126580014br.gov.bcb.pix0136123e4567-e12b-12d1-a456-4266554400005204000053039865802BR5913Fulano de Tal6008BRASILIA62070503***6304';
    assert.equal(crc16(pix), '1D3D');
    assert.equal(parseEmvco(`${pix}1D3D`).crcValid, true);
    assert.equal(parseEmvco(`${pix}1D3E`).crcValid, false);
  });

  test('the payload has every tag, in order, with lengths, and a CRC over the whole string', () => {
    const payload = emvcoPayload({
      key: 'sbx_rtkey_ch_1',
      merchant: 'Café Ñandú SAS',
      amountMinor: 15_000_050n,
      currency: 'COP',
      reference: 'FAC-2025-0012',
    });
    const { tags, order, crcValid } = parseEmvco(payload);
    assert.ok(crcValid);
    assert.deepEqual(order, ['00', '01', '26', '52', '53', '54', '58', '59', '60', '62', '63']);
    assert.equal(tags['00'], '01');
    assert.equal(tags['01'], '12', 'dynamic: one payment');
    assert.equal(tags['26'], '0016CO.RECAUDO.RTKEY0114sbx_rtkey_ch_1');
    assert.match(tags['52'], /^\d{4}$/);
    assert.equal(tags['53'], '170', 'COP');
    assert.equal(tags['54'], '150000.50');
    assert.equal(tags['58'], 'CO');
    assert.equal(tags['59'], 'Cafe Nandu SAS', 'ASCII only');
    assert.equal(tags['60'], 'BOGOTA');
    assert.equal(tags['62'], '0513FAC-2025-0012');
    assert.equal(payload.slice(-8, -4), '6304');
    assert.equal(payload.slice(-4), crc16(payload.slice(0, -4)));
    assert.ok(payload.startsWith('000201010212'));
  });

  test('the PNG is a valid 1-bit image of the QR with a quiet zone', () => {
    const payload = emvcoPayload({ key: 'k', merchant: 'Tienda', amountMinor: 100_000n, currency: 'COP', reference: 'r' });
    const png = qrPng(payload, 4);
    assert.deepEqual([...png.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
    assert.equal(png.subarray(12, 16).toString('ascii'), 'IHDR');
    const width = png.readUInt32BE(16);
    assert.equal(width, png.readUInt32BE(20));
    assert.equal(width % 4, 0);
    assert.equal(png[24], 1, 'bit depth 1');
    assert.equal(png[25], 0, 'greyscale');
    const idatAt = png.indexOf('IDAT');
    const raw = inflateSync(png.subarray(idatAt + 4, idatAt + 4 + png.readUInt32BE(idatAt - 4)));
    const rowBytes = Math.ceil(width / 8) + 1;
    assert.equal(raw.length, rowBytes * width);
    // The quiet zone (4 modules = 16 px) is white: the first row is all ones after its filter byte.
    assert.ok(raw.subarray(1, rowBytes - 1).every((b) => b === 0xff));
    // The finder pattern's corner (module 4,4 → pixel 16,16) is black.
    assert.equal((raw[16 * rowBytes + 1 + 2] & 0x80) === 0, true);
    assert.match(qrPngDataUrl(payload), /^data:image\/png;base64,iVBORw0KGgo/);
  });
});
