import { createHarness } from '../test/harness.ts';
import { FakeWompi } from '../test/fakes/wompi-server.ts';
import { cardBody, createCustomer } from '../test/support/cards.ts';
import { bankId } from '../src/modules/banks/catalogue.ts';

/**
 * Latency of a live card charge through the Wompi connector against the local fake (in process,
 * embedded engine): POST /v1/charges → provider transaction (PENDING) → answer, then the signed
 * event settling it. Prints p50/p95 of each over N charges (default 200).
 */
const n = Number(process.argv[2] ?? 200);
const fake = await new FakeWompi({
  publicKey: 'pub_prod_bench',
  privateKey: 'prv_prod_bench',
  eventsSecret: 'prod_events_bench',
  integritySecret: 'prod_integrity_bench',
}).start();
const h = await createHarness({ WOMPI_PRODUCTION_URL: fake.url });
const co = await h.company('Bench SAS');
await co.req({
  method: 'PUT',
  url: '/v1/connectors/wompi',
  env: 'live',
  body: { public_key: fake.publicKey, private_key: fake.privateKey, events_secret: fake.eventsSecret, integrity_secret: fake.integritySecret },
});
const customer = await createCustomer(co, 'live', 'Bench');
const card = (await co.req({ url: '/v1/cards', env: 'live', body: cardBody(customer) })).body.id;
const create: number[] = [];
const settle: number[] = [];
for (let i = 0; i < n; i++) {
  let t = performance.now();
  const res = await co.req({
    url: '/v1/charges',
    env: 'live',
    body: { amount: 150000, title: 'Bench charge', customer_id: customer, card_id: card },
  });
  create.push(performance.now() - t);
  const tx = [...fake.transactions.values()].find((x) => x.reference === res.body.id)!;
  await fake.finalize(tx.id, { event: false });
  t = performance.now();
  const event = fake.eventOf(tx);
  await co.req({ method: 'POST', url: '/v1/rails/wompi/events', body: event, idem: false, key: null });
  settle.push(performance.now() - t);
}
// PSE: the charge's answer waits for the provider's bank-session URL (create, then a read).
const payer = (
  await co.req({
    url: '/v1/customers',
    env: 'live',
    body: { first_name: 'Bench', last_name: 'PSE', email: 'pse@example.com', document_type: 'CC', document_number: '1020304050' },
  })
).body.id;
const pse: number[] = [];
for (let i = 0; i < n; i++) {
  const t = performance.now();
  const res = await co.req({
    url: '/v1/charges/banklink',
    env: 'live',
    body: { amount: 50000 + i, bank_id: bankId('1007'), customer_id: payer, redirect_url: 'https://bench.example/back' },
  });
  if (res.status !== 200) throw new Error(res.raw);
  pse.push(performance.now() - t);
}
const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))].toFixed(1);
console.log(
  `card charge through the fake, ${n} charges: create p50 ${pct(create, 0.5)} ms p95 ${pct(create, 0.95)} ms; event settle p50 ${pct(settle, 0.5)} ms p95 ${pct(settle, 0.95)} ms`,
);
console.log(`PSE charge through the fake (bank URL included), ${n} charges: create p50 ${pct(pse, 0.5)} ms p95 ${pct(pse, 0.95)} ms`);
await h.close();
await fake.close();
