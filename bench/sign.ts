// Documents signed per second on one core (issue 7 closing note; goal ≥ 100/s).
// `node --import tsx bench/sign.ts` — one process, one JavaScript thread. For each shape it builds
// complete legal documents (UBL XML + CUFE + QR text + XAdES-EPES signature, PKCS#12 already
// opened and cached as in the service), measures for BENCH_SECONDS (default 3) after a warm-up, and
// reports documents/s of build+sign, of signing alone (splice + C14N + RSA-SHA256 on a ready XML),
// and of verify.ts: per wall-clock second and per CPU second of this process (the two agree when
// the core is ours alone; on a shared machine the CPU-second figure is the one-core rate).
import { performance } from 'node:perf_hooks';
import { buildDianDocument, issueInstant } from '../src/documents/dian/builder.ts';
import { loadSigningKey } from '../src/documents/dian/certificate.ts';
import { documentIdentityCode, softwareSecurityCode } from '../src/documents/dian/cufe.ts';
import { qrText } from '../src/documents/dian/qr.ts';
import { makeInvoice, rng, testCertificate, testIssuer, TEST_RESOLUTION } from '../test/support/dian.ts';
import { buildUnsignedUbl } from '../src/documents/dian/ubl.ts';
import { verifyDianDocument } from '../src/documents/dian/verify.ts';
import { signUblDocument } from '../src/documents/dian/xades.ts';

const seconds = Number(process.env.BENCH_SECONDS ?? 3);
const issuer = testIssuer(testCertificate());
const key = loadSigningKey(issuer.certificate!);

function measure(label: string, run: (i: number) => void): { label: string; perSecond: number; perCpuSecond: number; cpuPercent: number } {
  for (let i = 0; i < 20; i++) run(i); // warm-up
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  let n = 0;
  while (performance.now() - t0 < seconds * 1000) run(n++);
  const wall = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  const cpuSeconds = (cpu.user + cpu.system) / 1e6;
  return { label, perSecond: Math.round(n / wall), perCpuSecond: Math.round(n / cpuSeconds), cpuPercent: Math.round((cpuSeconds / wall) * 100) };
}

const results = [];
for (const lines of [1, 5, 20]) {
  const random = rng(lines);
  const docs = Array.from({ length: 50 }, (_, i) => makeInvoice(i + 1, random, issuer, { lines }));
  const unsigned = docs.map((d) => {
    const cufe = documentIdentityCode(d);
    return buildUnsignedUbl(d, {
      identityCode: cufe,
      qrText: qrText(d, cufe),
      softwareSecurityCode: softwareSecurityCode(issuer.softwareId, issuer.softwarePin, d.number),
    });
  });
  const signed = docs.map((d) => buildDianDocument(d).xml);
  results.push(measure(`build+sign, ${lines} line(s)`, (i) => buildDianDocument(docs[i % docs.length])));
  results.push(
    measure(`sign only, ${lines} line(s)`, (i) =>
      signUblDocument(unsigned[i % docs.length], { key, signingTime: issueInstant(docs[i % docs.length]) }),
    ),
  );
  results.push(
    measure(`verify.ts, ${lines} line(s)`, (i) =>
      verifyDianDocument(signed[i % docs.length], { key: TEST_RESOLUTION.technicalKey, environment: 'test' }),
    ),
  );
}
console.log(`${'shape'.padEnd(28)} ${'docs/s'.padStart(7)} ${'docs/CPU-s'.padStart(11)}  process CPU`);
for (const r of results)
  console.log(`${r.label.padEnd(28)} ${String(r.perSecond).padStart(7)} ${String(r.perCpuSecond).padStart(11)}  ${r.cpuPercent} % of one core`);
