import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { jpegBytes, mp4Bytes, pngBytes } from '../../../test/support/campaigns.ts';
import { readMediaHeader } from './media-header.ts';
import { judgeMedia, ratioOf } from './media-rules.ts';
import { nextTokenAt, phoneFreeAt, takeTokens, tokensAvailable } from './pacing.ts';
import { campaignText, orderedOptionals, splitPhones } from './recipients.ts';

describe('readMediaHeader', () => {
  test('PNG: the size from IHDR', () => {
    assert.deepEqual(readMediaHeader(pngBytes(800, 600)), { kind: 'png', width: 800, height: 600 });
  });

  test('JPEG: the size from SOF0, after APP0 and DQT; SOF2 (progressive) too; fill bytes before a marker', () => {
    assert.deepEqual(readMediaHeader(jpegBytes(1200, 900)), { kind: 'jpeg', width: 1200, height: 900 });
    const progressive = jpegBytes(640, 640);
    progressive[progressive.indexOf(0xc0, 2)] = 0xc2;
    assert.deepEqual(readMediaHeader(progressive), { kind: 'jpeg', width: 640, height: 640 });
    const filled = Buffer.concat([Buffer.from([0xff, 0xd8, 0xff, 0xff, 0xff]), jpegBytes(700, 700).subarray(3)]);
    assert.deepEqual(readMediaHeader(filled), { kind: 'jpeg', width: 700, height: 700 });
  });

  test('JPEG: DHT (C4) is not a frame; image data before a frame, or a truncated header, has no size', () => {
    const b = jpegBytes(1000, 750);
    const sof = b.indexOf(Buffer.from([0xff, 0xc0]));
    const dht = Buffer.from(b);
    dht[sof + 1] = 0xc4;
    assert.equal(readMediaHeader(dht).kind, 'unknown');
    assert.equal(readMediaHeader(b.subarray(0, sof + 6)).kind, 'unknown');
  });

  test('MP4: an ftyp box whose major or compatible brand is MP4; QuickTime is not', () => {
    assert.deepEqual(readMediaHeader(mp4Bytes()), { kind: 'mp4', brand: 'isom' });
    const qt = Buffer.alloc(20);
    qt.writeUInt32BE(20, 0);
    qt.write('ftypqt  ', 4, 'latin1');
    qt.write('qt  ', 16, 'latin1');
    const header = readMediaHeader(qt);
    assert.equal(header.kind, 'unknown');
    assert.match((header as { reason: string }).reason, /qt/);
  });

  test('anything else is unknown: empty, text, a GIF', () => {
    assert.equal(readMediaHeader(Buffer.alloc(0)).kind, 'unknown');
    assert.equal(readMediaHeader(Buffer.from('<html>not an image</html>')).kind, 'unknown');
    assert.equal(readMediaHeader(Buffer.from('GIF89a\x01\x00\x01\x00', 'latin1')).kind, 'unknown');
  });

  test('property: never throws on arbitrary bytes, and any size it reports is positive', () => {
    const check = (bytes: Uint8Array) => {
      const h = readMediaHeader(bytes);
      if (h.kind === 'png' || h.kind === 'jpeg') assert.ok(h.width > 0 && h.height > 0);
    };
    fc.assert(fc.property(fc.uint8Array({ maxLength: 512 }), check), { numRuns: 3000 });
  });

  test('property: never throws on valid headers cut or corrupted anywhere', () => {
    const seeds = [pngBytes(600, 600), jpegBytes(800, 600), mp4Bytes()];
    fc.assert(
      fc.property(
        fc.constantFrom(...seeds),
        fc.nat(),
        fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })), { maxLength: 8 }),
        (seed, cut, edits) => {
          const b = Uint8Array.from(seed.subarray(0, Math.min(seed.length, 200)));
          for (const [at, value] of edits) b[at % b.length] = value;
          readMediaHeader(b.subarray(0, cut % (b.length + 1)));
        },
      ),
      { numRuns: 3000 },
    );
  });

  test('property: a JPEG-looking stream of segments with random lengths ends (the walk only moves forward)', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.integer({ min: 0xc0, max: 0xfe }), fc.integer({ min: 0, max: 0xffff })), { maxLength: 50 }), (segs) => {
        const bytes = [0xff, 0xd8];
        for (const [marker, length] of segs) bytes.push(0xff, marker, length >> 8, length & 255);
        readMediaHeader(Uint8Array.from(bytes));
      }),
    );
  });
});

describe('media rules', () => {
  test('ratios in either orientation, with one pixel of rounding', () => {
    assert.equal(ratioOf(800, 600), '4:3');
    assert.equal(ratioOf(600, 800), '3:4');
    assert.equal(ratioOf(1080, 1920), '9:16');
    assert.equal(ratioOf(1920, 1080), '16:9');
    assert.equal(ratioOf(800, 1200), '2:3');
    assert.equal(ratioOf(700, 700), '1:1');
    assert.equal(ratioOf(1366, 1025), '4:3'); // 1366 × 3/4 = 1024.5
    assert.equal(ratioOf(1366, 1024), '4:3');
    assert.equal(ratioOf(1366, 1027), null);
    assert.equal(ratioOf(701, 700), '1:1');
    assert.equal(ratioOf(702, 700), null);
    assert.equal(ratioOf(1000, 600), null); // 5:3
  });

  test('an image: type, size, short and long side, ratio; every broken rule reported', () => {
    const ok = judgeMedia('image', { kind: 'png', width: 800, height: 600 }, 1000);
    assert.deepEqual(ok, { media: { contentType: 'image/png', bytes: 1000, width: 800, height: 600, ratio: '4:3' } });
    const bad = judgeMedia('image', { kind: 'jpeg', width: 4000, height: 500 }, 3 * 1024 * 1024);
    assert.ok('problems' in bad);
    assert.equal(bad.problems.length, 4, bad.problems.join('; '));
    assert.ok('problems' in judgeMedia('image', { kind: 'mp4', brand: 'isom' }, 10));
    assert.ok('problems' in judgeMedia('video', { kind: 'png', width: 800, height: 600 }, 10));
    assert.ok('problems' in judgeMedia('video', { kind: 'mp4', brand: 'isom' }, 16 * 1024 * 1024 + 1));
    assert.ok('media' in judgeMedia('video', { kind: 'mp4', brand: 'isom' }, 16 * 1024 * 1024));
  });
});

describe('pacing', () => {
  const rate = { perSecond: 2, burst: 3 };
  const t0 = new Date('2026-03-02T15:00:00Z');
  const at = (ms: number) => new Date(t0.getTime() + ms);

  test('a full bucket gives its burst, then one token per interval', () => {
    let { granted, tat } = takeTokens(null, t0, rate, 10);
    assert.equal(granted, 3);
    assert.equal(tokensAvailable(tat, t0, rate), 0);
    assert.equal(nextTokenAt(tat, t0, rate).getTime(), at(500).getTime());
    assert.equal(tokensAvailable(tat, at(499), rate), 0);
    assert.equal(tokensAvailable(tat, at(500), rate), 1);
    ({ granted, tat } = takeTokens(tat, at(500), rate, 10));
    assert.equal(granted, 1);
    assert.equal(tokensAvailable(tat, at(1500), rate), 2);
    assert.equal(tokensAvailable(tat, at(60_000), rate), 3, 'never more than the burst');
  });

  test('property: over any window, no more than burst + elapsed × rate messages go', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 3000 }), { minLength: 1, maxLength: 60 }), (steps) => {
        let tat: Date | null = null;
        let now = t0.getTime();
        let sent = 0;
        for (const step of steps) {
          now += step;
          const r = takeTokens(tat, new Date(now), rate, 100);
          tat = r.tat;
          sent += r.granted;
        }
        const elapsed = now - t0.getTime();
        assert.ok(sent <= rate.burst + Math.floor(elapsed / 500), `${sent} in ${elapsed} ms`);
      }),
    );
  });

  test('a phone is free the gap after its last message', () => {
    assert.equal(phoneFreeAt(null, t0, 6000).getTime(), t0.getTime());
    assert.equal(phoneFreeAt(t0, at(1000), 6000).getTime(), at(6000).getTime());
    assert.equal(phoneFreeAt(t0, at(9000), 6000).getTime(), at(9000).getTime());
  });
});

describe('recipients and texts', () => {
  test('phones: E.164 kept in order, duplicates once, invalid ones listed once with a reason', () => {
    const { recipients, rejected } = splitPhones(['+573001112233', '3001112233', '+573001112233', '+57 300', '+573004445566', '3001112233']);
    assert.deepEqual(recipients, ['+573001112233', '+573004445566']);
    assert.deepEqual(
      rejected.map((r) => r.phone),
      ['3001112233', '+57 300'],
    );
    assert.match(rejected[0].reason, /E\.164/);
  });

  test('optionals: in order without gaps; blank counts as not filled', () => {
    assert.equal(orderedOptionals(['a', 'b', 'c']).errors, null);
    assert.equal(orderedOptionals(['a', null, undefined]).errors, null);
    assert.deepEqual(Object.keys(orderedOptionals([null, 'b', null]).errors ?? {}), ['optional_2']);
    assert.deepEqual(Object.keys(orderedOptionals(['a', '  ', 'c']).errors ?? {}), ['optional_3']);
    assert.deepEqual(orderedOptionals(['a', '', null]).optionals, ['a', null, null]);
  });

  test('text: variables filled, unknown ones left out, the media address last', () => {
    const text = campaignText(
      'Hola {{payer_name}}, {{company_name}}: {{optional_1}} {{payment_link}}',
      { company_name: 'Acme', optional_1: '¡Oferta!' },
      'https://cdn.example/a.png',
    );
    assert.equal(text, 'Hola, Acme: ¡Oferta!\nhttps://cdn.example/a.png');
  });
});
