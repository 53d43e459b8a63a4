import { test } from 'node:test';
import assert from 'node:assert/strict';
import { dianAmount, identityCode, softwareSecurityCode } from './cufe.ts';

const worked = {
  number: '323200000129',
  issueDate: '2019-01-16',
  issueTime: '10:53:10-05:00',
  lineExtension: 150_000_000n,
  taxByCode: { '01': 28_500_000n, '04': 0n, '03': 0n },
  payable: 178_500_000n,
  issuerNit: '700085371',
  receiverNumber: '800199436',
  key: '693ff6f2a553c3646a063436fd4dd9ded0311471',
  environment: '1' as const,
};

test('CUFE: the published worked example of the technical annex (FEV §11.2.1) is reproduced exactly', () => {
  assert.equal(identityCode(worked), '8bb918b19ba22a694f1da11c643b5e9de39adf60311cf179179e9b33381030bcd4c3c3f156c506ed5908f9276f5bd9b4');
});

test('CUDE: the same composition with the software PIN in place of the technical key', () => {
  const cude = identityCode({ ...worked, key: '12345' });
  assert.match(cude, /^[0-9a-f]{96}$/);
  assert.notEqual(cude, identityCode(worked));
  // Any one input changes the code.
  assert.notEqual(identityCode({ ...worked, payable: worked.payable + 1n }), identityCode(worked));
});

test('amounts: two decimals with a dot, from integer cents', () => {
  assert.equal(dianAmount(0n), '0.00');
  assert.equal(dianAmount(5n), '0.05');
  assert.equal(dianAmount(150_000_000n), '1500000.00');
  assert.equal(dianAmount(-1234n), '-12.34');
});

test('SoftwareSecurityCode is SHA-384 hex of SoftwareID + PIN + NumFac', () => {
  assert.match(softwareSecurityCode('abc', '12345', 'SETP990000001'), /^[0-9a-f]{96}$/);
});
