import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { LightMyRequestResponse } from 'fastify';
import { createHarness, type Company, type Harness } from './harness.ts';
import { Errors, type ErrorDef } from '../src/platform/errors/registry.ts';
import { cardBody, createCard } from './support/cards.ts';
import { banklinkBody, BANCOLOMBIA, chargeBody, createAccount, DAVIPLATA, walletAccount } from './support/charges.ts';
import { drainJobs, invoiceableCustomer, LINES } from './support/invoices.ts';
import { insertCampaignFixture } from './support/campaigns.ts';
import { kybBody, onboardedCompany } from './support/companies.ts';

/**
 * Schema-driven fuzz of every operation of /v1/openapi.json (issue 11's acceptance): for each
 * path and method of the document, path parameters filled with the caller's own ids, another
 * company's ids and garbage; bodies built from the operation's request schema (a valid baseline,
 * then one property at a time given a wrong type, a huge string, extreme numbers, bad text,
 * prototype keys, deep nesting; whole raw bodies that are bad UTF-8, not objects, not JSON, too
 * deep, too big or of another content type); hostile query strings on every read.
 *
 * What must hold for every answer: no 5xx, an answer within REQUEST_BOUND_MS, every error in the
 * registry's envelope (src/platform/errors/registry.ts), no stack trace; another company's id
 * answers 404 exactly like a missing one and changes nothing; Object.prototype is never polluted
 * and the service serves normally afterwards. Failures are collected per phase and reported all
 * at once (operation, mutation, status, first 300 characters of the body).
 *
 * Deterministic: the only randomness is a PRNG seeded by FUZZ_SEED (default below).
 */

const SEED = Number(process.env.FUZZ_SEED ?? 0x5eed11);
const REQUEST_BOUND_MS = 10_000;
const TEST_TIMEOUT_MS = 300_000;
const KB100 = 'x'.repeat(100_000);
const KB900 = 'y'.repeat(900_000);

// ---------------------------------------------------------------------------------------------
// Deterministic randomness and raw JSON

function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A JSON fragment sent verbatim (numbers JSON.stringify cannot write: 2^63 exactly, 1e999, -0). */
class Raw {
  constructor(readonly text: string) {}
  toString() {
    return this.text;
  }
}
const raw = (text: string) => new Raw(text);

/** JSON text of a value that may contain Raw fragments and own "__proto__" keys. */
function toJson(value: unknown): string {
  if (value instanceof Raw) return value.text;
  if (value === undefined) return 'null';
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) return `[${value.map(toJson).join(',')}]`;
  return `{${Object.keys(value)
    .filter((k) => (value as Record<string, unknown>)[k] !== undefined)
    .map((k) => `${JSON.stringify(k)}:${toJson((value as Record<string, unknown>)[k])}`)
    .join(',')}}`;
}

/** An object with own keys named __proto__ / constructor / prototype (as JSON.parse would make them). */
function protoKeys(): Record<string, unknown> {
  const o: Record<string, unknown> = {};
  Object.defineProperty(o, '__proto__', { value: { polluted: 'yes', isAdmin: true }, enumerable: true, configurable: true, writable: true });
  Object.defineProperty(o, 'constructor', { value: { prototype: { polluted: 'yes' } }, enumerable: true, configurable: true, writable: true });
  o.prototype = { polluted: 'yes' };
  return o;
}

const nestedArrays = (depth: number) => raw('['.repeat(depth) + ']'.repeat(depth));
const nestedObjects = (depth: number) => raw('{"a":'.repeat(depth) + '1' + '}'.repeat(depth));

function describeValue(v: unknown): string {
  const text = v instanceof Raw ? v.text : typeof v === 'string' ? JSON.stringify(v) : toJson(v);
  return text.length > 40 ? `${text.slice(0, 30)}…(${text.length} chars)` : text;
}

// ---------------------------------------------------------------------------------------------
// The document

interface Schema {
  type?: string | string[];
  properties?: Record<string, Schema>;
  required?: string[];
  items?: Schema;
  anyOf?: Schema[];
  oneOf?: Schema[];
  allOf?: Schema[];
  enum?: unknown[];
  const?: unknown;
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  minItems?: number;
  pattern?: string;
  format?: string;
}

interface Operation {
  id: string; // "POST /v1/charges"
  method: string;
  path: string;
  pathParams: string[];
  queryParams: { name: string; schema: Schema }[];
  body: Schema | null;
  auth: 'secret' | 'publishable' | 'none';
}

function operations(doc: { paths: Record<string, Record<string, any>> }, h: Harness): Operation[] {
  const out: Operation[] = [];
  for (const [path, ops] of Object.entries(doc.paths)) {
    for (const [m, op] of Object.entries(ops)) {
      const method = m.toUpperCase();
      if (!['GET', 'POST', 'PUT', 'PATCH', 'DELETE'].includes(method)) continue;
      const routeUrl = path.replace(/\{([^}]+)\}/g, ':$1');
      const route = h.routes.find((r) => r.method === method && r.url === routeUrl);
      const params: { name: string; in: string; schema?: Schema }[] = op.parameters ?? [];
      out.push({
        id: `${method} ${path}`,
        method,
        path,
        pathParams: [...path.matchAll(/\{([^}]+)\}/g)].map((x) => x[1]),
        queryParams: params.filter((p) => p.in === 'query').map((p) => ({ name: p.name, schema: p.schema ?? {} })),
        body: op.requestBody?.content?.['application/json']?.schema ?? null,
        auth: route?.auth ?? (Array.isArray(op.security) && op.security.length === 0 ? 'none' : 'secret'),
      });
    }
  }
  return out;
}

/** The variants of a schema other than null (anyOf/oneOf flattened). */
function variants(s: Schema | undefined): Schema[] {
  if (!s) return [];
  const alts = s.anyOf ?? s.oneOf;
  if (alts) return alts.flatMap(variants);
  if (s.allOf?.length) return variants(Object.assign({}, ...s.allOf));
  return s.type === 'null' ? [] : [s];
}

/** JSON types a schema accepts. */
function acceptedTypes(s: Schema | undefined): Set<string> {
  const out = new Set<string>();
  const walk = (x: Schema | undefined) => {
    if (!x) return;
    for (const alt of x.anyOf ?? x.oneOf ?? []) walk(alt);
    const types = Array.isArray(x.type) ? x.type : x.type ? [x.type] : [];
    for (const t of types) out.add(t === 'integer' ? 'number' : t);
    if (x.enum) for (const e of x.enum) out.add(e === null ? 'null' : typeof e);
  };
  walk(s);
  return out;
}

const objectVariant = (s: Schema | undefined) => variants(s).find((v) => v.properties);
const arrayItemObject = (s: Schema | undefined) => variants(variants(s).find((v) => v.type === 'array')?.items).find((v) => v.properties);

/** A plausible value for a schema: required properties only, names hinting at ids, e-mails, phones... */
function example(s: Schema | undefined, name: string, hints: Record<string, unknown>, depth = 0): unknown {
  if (name in hints) return hints[name];
  const v = variants(s)[0];
  if (!v || depth > 6) return null;
  if (v.const !== undefined) return v.const;
  if (v.enum?.length) return v.enum.find((e) => e !== null && e !== 'persistence_lost');
  const type = Array.isArray(v.type) ? v.type[0] : (v.type ?? (v.properties ? 'object' : undefined));
  switch (type) {
    case 'object': {
      const out: Record<string, unknown> = {};
      for (const key of v.required ?? []) out[key] = example(v.properties?.[key], key, hints, depth + 1);
      return out;
    }
    case 'array':
      return v.minItems ? Array.from({ length: v.minItems }, () => example(v.items, name, hints, depth + 1)) : [];
    case 'integer':
    case 'number': {
      let n = Math.max(v.minimum ?? 1000, v.exclusiveMinimum !== undefined ? v.exclusiveMinimum + 1 : -Infinity);
      if (v.maximum !== undefined) n = Math.min(n, v.maximum);
      return n;
    }
    case 'boolean':
      return true;
    default: {
      let text = 'Texto de prueba';
      if (v.format === 'email' || /email/.test(name)) text = 'ana@example.com';
      else if (v.format === 'uri' || /url/.test(name)) text = 'https://tienda.example.com/gracias';
      else if (v.format === 'date' || /date|valid_/.test(name) || v.pattern?.includes('\\d{4}-')) text = '2030-12-31';
      else if (/phone/.test(name)) text = '+573001234567';
      else if (v.pattern && /\[0-9a-fA-F\]\{8\}/.test(v.pattern)) text = '00000000-0000-4000-8000-000000000000';
      else if (v.pattern === '^\\d$') text = '7';
      else if (v.pattern && /^\^\\d\{\d/.test(v.pattern)) text = '123456789012345'.slice(0, Number(/\{(\d+)/.exec(v.pattern)![1]));
      if (v.minLength && text.length < v.minLength) text = text.padEnd(v.minLength, 'x');
      if (v.maxLength && text.length > v.maxLength) text = text.slice(0, v.maxLength);
      return text;
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Fixtures: one small set of resources per company

interface Fixtures {
  customer: string;
  card: string;
  account: string;
  pendingWallet: string;
  webhook: string;
  delivery: string;
  charge: string;
  pendingCharge: string;
  pendingCharge2: string;
  walleta: string;
  walletb: string;
  payment: string;
  intent: string;
  event: string;
  connectLink: string;
  price: string;
  resolution: string;
  invoice: string;
  creditNote: string;
  token: string;
  cashout: string;
  cashoutToCancel: string;
  cashoutToApprove: string;
  cashoutToReject: string;
  plan: string;
  subscription: string;
  subscriptionToCancel: string;
  subscriptionToFreeze: string;
  subscriptionFrozen: string;
  testClock: string;
  campaign: string;
  campaignToCancel: string;
  /** A dispute (open) of a paid charge of its own. */
  dispute: string;
  /** Issued cards (issuing): to read and spend with, to block, blocked (to unblock), to cancel. */
  issuingCard: string;
  issuingCardToBlock: string;
  issuingCardBlocked: string;
  issuingCardToCancel: string;
  /** A paid bill payment (utilities). */
  utility: string;
  /** A flow (call_url), and a company this (platform) company onboarded (pending). */
  flow: string;
  onboardedCompany: string;
  /** X-Customer-Token of the fixture customer (the session routes), and a card token for them. */
  sessionToken: string;
  sessionCardToken: string;
}

const RESOLUTION = {
  number: '18764000001234',
  prefix: 'FZ',
  document_type: 'invoice',
  from: 1,
  to: 1000,
  valid_from: '2024-01-01',
  valid_until: '2099-12-31',
  technical_key: 'abc123def456',
};
const WALLET_PHONE = '+573991111111';

async function makeFixtures(h: Harness, co: Company, tag: string): Promise<Fixtures> {
  const ok = async (req: Parameters<Company['req']>[0]) => {
    const res = await co.req(req);
    assert.ok(res.status >= 200 && res.status < 300, `fixture ${req.method ?? 'POST'} ${req.url}: ${res.status} ${res.raw.slice(0, 300)}`);
    return res.body;
  };
  const webhook = (
    await ok({ url: '/v1/webhooks', body: { name: `Fuzz ${tag}`, url: 'http://localhost:9/hook', events: ['charge.created', 'charge.paid'] } })
  ).data.id;
  const fixtureCustomer = await invoiceableCustomer(co, { first_name: tag, email: `${tag.toLowerCase()}.fuzz@example.com` });
  const customer = fixtureCustomer.id as string;
  const customerPhone = fixtureCustomer.phone as string;
  const card = (await createCard(co, customer)).id;
  const account = await createAccount(h, co, customer);
  await walletAccount(co, customer, WALLET_PHONE.slice(3)); // ACTIVE Nequi account: walletb needs one
  const pendingWallet = await walletAccount(co, customer, '3005556677', DAVIPLATA, { validate: false });
  const charge = (await ok({ url: '/v1/charges', body: chargeBody(customer, { card_id: card }) })).id;
  const pendingCharge = (await ok({ url: '/v1/charges', body: chargeBody(customer, { card_id: card }, { test_scenario: 'pending' }) })).id;
  const pendingCharge2 = (await ok({ url: '/v1/charges', body: chargeBody(customer, { card_id: card }, { test_scenario: 'pending' }) })).id;
  const walleta = (
    await ok({ url: '/v1/request-to-pay/walleta', body: { amount: 25000, customer_id: customer, phone: WALLET_PHONE, external_id: `fuzz-${tag}` } })
  ).id;
  const walletb = (
    await ok({
      url: '/v1/request-to-pay/walletb',
      body: { amount: 42000, document: '1020304050', document_type: 'CC', customer_id: customer, phone: WALLET_PHONE },
    })
  ).id;
  const payment = (await ok({ url: '/v1/payments', body: { title: `Factura ${tag}`, amount: 150000 } })).id;
  const connectLink = (
    await ok({ url: '/v1/connect-links', body: { customer_id: customer, single_use: true, redirect_url: 'https://tienda.example.com/vuelta' } })
  ).id;
  const price = (await ok({ url: '/v1/prices', body: { name: `Producto ${tag}`, unit_amount: 12345 } })).id;
  const resolution = (await ok({ url: '/v1/fiscal-resolutions', body: RESOLUTION })).id;
  const invoice = (await ok({ url: '/v1/invoices', body: { customer_id: customer, items: LINES, stamp_policy: 'on_issue' } })).id;
  await drainJobs(h, co);
  const creditNote = (await ok({ url: `/v1/invoices/${invoice}/credit-notes`, body: { amount: 1000, reason: `Nota ${tag}` } })).id;
  await drainJobs(h, co);
  const token = (await ok({ url: '/v1/tokens', body: cardBody('', { customer_id: undefined }), key: co.publishable_keys.test })).id;
  const disputedCharge = (await ok({ url: '/v1/charges', body: chargeBody(customer, { card_id: card }) })).id;
  const dispute = (await ok({ url: `/v1/charges/${disputedCharge}/dispute`, body: {} })).id;
  // Cash-outs of the collected charge: one processing until resolved, three waiting for approval.
  const cashoutOf = async (scenario: string) =>
    (await ok({ url: '/v1/cashouts', body: { amount: 1000, customer_id: customer, account_id: account, test_scenario: scenario } })).id as string;
  const cashout = await cashoutOf('pending');
  const cashoutToCancel = await cashoutOf('require_approval');
  const cashoutToApprove = await cashoutOf('require_approval');
  const cashoutToReject = await cashoutOf('require_approval');
  const issueCard = async () => (await ok({ url: '/v1/issuing/cards', body: { customer_id: customer, nickname: `Fuzz ${tag}` } })).id as string;
  const [issuingCard, issuingCardToBlock, issuingCardBlocked, issuingCardToCancel] = [
    await issueCard(),
    await issueCard(),
    await issueCard(),
    await issueCard(),
  ];
  await ok({ url: `/v1/issuing/cards/${issuingCardBlocked}/block`, body: {} });
  await ok({ url: `/v1/customers/${customer}/transactions`, body: { amount: 1000, concept: 'Fuzz' } }); // the cards spend from it
  const utility = (await ok({ url: '/v1/utilities', body: { provider_id: '7701001', reference: '55550001' } })).id as string;
  const plan = (await ok({ url: '/v1/plans', body: { name: `Plan ${tag}`, amount_in_cents: 500_000, cicle_frequency: 'monthly' } })).id;
  const subscribe = async () => (await ok({ url: '/v1/subscriptions', body: { customer_id: customer, plan_id: plan } })).id as string;
  const subscription = await subscribe();
  const subscriptionToCancel = await subscribe();
  const subscriptionToFreeze = await subscribe();
  const subscriptionFrozen = await subscribe();
  await ok({ url: `/v1/subscriptions/${subscriptionFrozen}/freeze`, body: {} });
  const testClock = (await ok({ url: '/v1/test-clocks', body: { frozen_time: Math.floor(h.clock.now().getTime() / 1000), name: `Reloj ${tag}` } }))
    .id;
  const delivery = (await ok({ url: `/v1/webhooks/${webhook}/deliveries` })).data[0]?.id;
  const event = (await ok({ url: '/v1/events' })).data[0]?.id;
  const intent = (await ok({ url: '/v1/payment-intents' })).data[0]?.id ?? charge;
  const fx: Fixtures = {
    customer,
    card,
    account,
    pendingWallet,
    webhook,
    delivery,
    charge,
    pendingCharge,
    pendingCharge2,
    walleta,
    walletb,
    payment,
    intent,
    event,
    connectLink,
    price,
    resolution,
    invoice,
    creditNote,
    token,
    cashout,
    cashoutToCancel,
    cashoutToApprove,
    cashoutToReject,
    plan,
    subscription,
    subscriptionToCancel,
    subscriptionToFreeze,
    subscriptionFrozen,
    testClock,
    issuingCard,
    issuingCardToBlock,
    issuingCardBlocked,
    issuingCardToCancel,
    utility,
    flow: (
      await ok({
        url: '/v1/flows',
        idem: false,
        body: { name: `Fuzz ${tag}`, event: 'charge.paid', action: { type: 'call_url', url: 'http://localhost:9/flow' } },
      })
    ).id,
    onboardedCompany: await onboardedCompany(h, co, `Hija ${tag}`),
    sessionToken: await sessionTokenOf(co, customerPhone),
    sessionCardToken: (await ok({ url: '/v1/tokens', body: cardBody('', { customer_id: undefined }), key: co.publishable_keys.test })).id,
    campaign: await insertCampaignFixture(h, co, tag),
    campaignToCancel: await insertCampaignFixture(h, co, `${tag}-cancel`),
    dispute,
  };
  for (const [k, v] of Object.entries(fx)) assert.ok(typeof v === 'string' && v, `fixture ${k} of ${tag}`);
  return fx;
}

/** A payer session of the customer with that phone (test code 000000). */
async function sessionTokenOf(co: Company, phone: string): Promise<string> {
  const asked = await co.req({ url: '/v1/customers/login/request', body: { phone } });
  assert.equal(asked.status, 200, asked.raw);
  const verified = await co.req({ url: '/v1/customers/login/verify', body: { phone, otp: '000000' } });
  assert.equal(verified.status, 200, verified.raw);
  return verified.body.token;
}

/** The payer-session routes: X-Customer-Token authenticates them, bound to the key that made it. */
const isSessionRoute = (path: string) => path.startsWith('/v1/customers/session');

/** Operations whose path ids are global catalogue entries, not a company's resources. */
const isGlobal = (path: string) =>
  path.startsWith('/v1/banks/') ||
  path.startsWith('/v1/accounts/rtkey/') ||
  path.startsWith('/v1/connectors/') ||
  path.startsWith('/v1/utilities/providers/') ||
  // The provider's events URLs: no API key; the token itself names the company (events.test.ts).
  path.startsWith('/v1/rails/');

/** The company's resource ids for an operation's path parameters, or undefined when none fits. */
function pathIds(path: string, fx: Fixtures): Record<string, string> | undefined {
  if (path.startsWith('/v1/banks/')) return { id: BANCOLOMBIA };
  if (path.startsWith('/v1/accounts/rtkey/')) return { key: '@ana.gomez' };
  if (path.startsWith('/v1/connectors/')) return { name: 'wompi' };
  // The provider's events URLs (auth by checksum): an events token no connector has.
  if (path.startsWith('/v1/rails/wompi/')) return { token: `cet_${'A'.repeat(32)}` };
  if (path.startsWith('/v1/utilities/providers/')) return { id: '7701001', reference: '111100005555' };
  if (path === '/v1/issuing/cards/{id}/block') return { id: fx.issuingCardToBlock };
  if (path === '/v1/issuing/cards/{id}/unblock') return { id: fx.issuingCardBlocked };
  if (path === '/v1/issuing/cards/{id}/cancel') return { id: fx.issuingCardToCancel };
  if (path.startsWith('/v1/issuing/cards/')) return { id: fx.issuingCard };
  if (path === '/v1/accounts/{id}/validate') return { id: fx.pendingWallet };
  if (path === '/v1/charges/{id}/cancel') return { id: fx.pendingCharge };
  if (path === '/v1/charges/{id}/resolve') return { id: fx.pendingCharge2 };
  if (path === '/v1/cashouts/{id}/cancel') return { id: fx.cashoutToCancel };
  if (path === '/v1/cashouts/{id}/approve') return { id: fx.cashoutToApprove };
  if (path === '/v1/cashouts/{id}/reject') return { id: fx.cashoutToReject };
  if (path === '/v1/subscriptions/{id}/cancel') return { id: fx.subscriptionToCancel };
  if (path === '/v1/subscriptions/{id}/freeze') return { id: fx.subscriptionToFreeze };
  if (path === '/v1/subscriptions/{id}/unfreeze') return { id: fx.subscriptionFrozen };
  if (path === '/v1/campaigns/{id}/cancel') return { id: fx.campaignToCancel };
  if (path === '/v1/customers/session/charges/{chargeId}') return { chargeId: fx.charge };
  if (path.startsWith('/v1/request-to-pay/walleta/')) return { id: fx.walleta };
  if (path.startsWith('/v1/request-to-pay/walletb/')) return { id: fx.walletb };
  if (path.startsWith('/v1/webhooks/{id}/deliveries/{delivery_id}')) return { id: fx.webhook, delivery_id: fx.delivery };
  if (path.startsWith('/v1/invoices/{id}/credit-notes/{credit_note_id}')) return { id: fx.invoice, credit_note_id: fx.creditNote };
  const byCollection: Record<string, string> = {
    customers: fx.customer,
    accounts: fx.account,
    'connect-links': fx.connectLink,
    webhooks: fx.webhook,
    events: fx.event,
    payments: fx.payment,
    'payment-intents': fx.intent,
    cards: fx.card,
    charges: fx.charge,
    prices: fx.price,
    'fiscal-resolutions': fx.resolution,
    invoices: fx.invoice,
    cashouts: fx.cashout,
    plans: fx.plan,
    subscriptions: fx.subscription,
    'test-clocks': fx.testClock,
    campaigns: fx.campaign,
    disputes: fx.dispute,
    utilities: fx.utility,
    flows: fx.flow,
    companies: fx.onboardedCompany,
  };
  const id = byCollection[path.split('/')[2]];
  const names = [...path.matchAll(/\{([^}]+)\}/g)].map((x) => x[1]);
  return id && names.length === 1 ? { [names[0]]: id } : undefined;
}

const fillPath = (path: string, ids: Record<string, string>) =>
  path.replace(/\{([^}]+)\}/g, (_, name: string) => encodeURIComponent(ids[name] ?? 'sin-id'));
/** The same id with its last character changed: well formed, certainly missing. */
const missingId = (id: string) => id.slice(0, -1) + (id.endsWith('0') ? '1' : '0');

/** Known-good bodies (SPEC.md and the modules' tests), merged over what the schema gives. */
function baselineOverrides(fx: Fixtures): Record<string, Record<string, unknown>> {
  return {
    'POST /v1/customers': { first_name: 'Ana', last_name: 'Gómez', email: 'ana@example.com' },
    'PUT /v1/customers/{id}': { first_name: 'Ana' },
    'POST /v1/accounts': { subtype: 'SAVINGS', bank_id: BANCOLOMBIA, account_number: '1234567890', authorization: true, customer_id: fx.customer },
    'POST /v1/accounts/{id}/validate': { otp: '123456' },
    'POST /v1/connect-links': { customer_id: fx.customer, single_use: true, redirect_url: 'https://tienda.example.com/vuelta' },
    'POST /v1/webhooks': { name: 'Fuzz', url: 'http://localhost:9/hook', events: ['charge.paid'] },
    'PUT /v1/webhooks/{id}': { name: 'Fuzz renombrado' },
    'POST /v1/payments': { title: 'Factura de prueba', amount: 150000 },
    'PUT /v1/payments/{id}': { title: 'Factura cambiada' },
    'POST /v1/payments/{id}/resolve': { action: 'approve' },
    'POST /v1/cards': cardBody(fx.customer),
    'POST /v1/cards/tokenized': { card_token: fx.token, customer_id: fx.customer, authorization: true },
    'POST /v1/tokens': cardBody('', { customer_id: undefined, authorization: undefined }),
    'POST /v1/charges': chargeBody(fx.customer, { card_id: fx.card }),
    'POST /v1/charges/{id}/resolve': { action: 'approve' },
    'POST /v1/disputes/{id}/resolve': { outcome: 'won' },
    'POST /v1/customers/session/payment-methods': { token: fx.sessionCardToken },
    'POST /v1/customers/session/charges': { payment_method_id: fx.card, amount: 1000, description: 'Fuzz', approve: true },
    'POST /v1/charges/banklink': banklinkBody(fx.customer),
    'POST /v1/charges/rtkey': { amount: 25000, customer_id: fx.customer, expires_in: 30 },
    'POST /v1/request-to-pay/walleta': { amount: 25000, customer_id: fx.customer, phone: WALLET_PHONE, external_id: 'fuzz-pedido' },
    'POST /v1/request-to-pay/walletb': { amount: 42000, document: '1020304050', document_type: 'CC', customer_id: fx.customer, phone: WALLET_PHONE },
    'POST /v1/request-to-pay/walletb/{id}/confirm': { otp: '123456' },
    'POST /v1/prices': { name: 'Producto de prueba', unit_amount: 12345 },
    'PUT /v1/prices/{id}': { name: 'Producto cambiado' },
    'POST /v1/invoices/preview': { items: LINES },
    'POST /v1/fiscal-resolutions': RESOLUTION,
    'POST /v1/invoices': { customer_id: fx.customer, items: LINES },
    'POST /v1/invoices/{id}/credit-notes': { amount: 100, reason: 'Descuento' },
    'POST /v1/plans': { name: 'Plan de prueba', amount_in_cents: 500_000, cicle_frequency: 'monthly' },
    'PUT /v1/plans/{id}': { name: 'Plan cambiado' },
    'POST /v1/subscriptions': { customer_id: fx.customer, plan_id: fx.plan },
    'PUT /v1/subscriptions/{id}': { name: 'Suscripción cambiada' },
    'POST /v1/test-clocks': { frozen_time: '2030-01-01T00:00:00Z', name: 'Reloj' },
    'POST /v1/issuing/cards': { customer_id: fx.customer, nickname: 'Fuzz' },
    'POST /v1/issuing/cards/{id}/test-authorizations': { amount: 1 },
    'POST /v1/utilities': { provider_id: '7701001', reference: '99990002' },
    'POST /v1/utilities/payment-links': { provider_id: '7701001', reference: '99990003', phone: '+573001234567' },
    'POST /v1/test-clocks/{id}/advance': { frozen_time: Math.floor(Date.now() / 1000) + 10 * 86_400 },
    'POST /v1/flows': { name: 'Fuzz', event: 'charge.paid', action: { type: 'call_url', url: 'http://localhost:9/flow' } },
    'POST /v1/companies': kybBody(),
  };
}

// ---------------------------------------------------------------------------------------------
// Mutations

const WRONG_TYPE: Record<string, unknown> = {
  number: 12345,
  string: 'texto',
  boolean: true,
  null: null,
  array: [1, 'a', null],
  object: { a: { b: ['c'] } },
};
const NUMBER_EXTREMES: unknown[] = [
  raw('9223372036854775808'),
  raw('-9223372036854775809'),
  -1,
  0,
  1e308,
  raw('1e999'),
  raw('-0'),
  0.001,
  '9223372036854775808',
  'NaN',
  'Infinity',
  '1e308',
  ' 1000 ',
];
const STRING_TRICKS: unknown[] = ['\uD800', 'a\uDC00b', 'ñ😀\u202E\u200B\u0301', "' OR '1'='1' --", '\u0000'];

function randomJson(rand: () => number, depth = 0): unknown {
  const pick = Math.floor(rand() * (depth > 3 ? 5 : 7));
  const chars = ['a', 'ñ', '😀', '\uD83D', '"', '\\', '\u2028', '%', '{', '\u0001', '\uFFFF', ' '];
  switch (pick) {
    case 0:
      return null;
    case 1:
      return rand() < 0.5;
    case 2:
      return [Math.floor(rand() * 2 ** 53), -rand() * 1e300, rand(), -Math.floor(rand() * 1000)][Math.floor(rand() * 4)];
    case 3:
    case 4:
      return Array.from({ length: Math.floor(rand() * 30) }, () => chars[Math.floor(rand() * chars.length)]).join('');
    case 5:
      return Array.from({ length: Math.floor(rand() * 4) }, () => randomJson(rand, depth + 1));
    default: {
      const o: Record<string, unknown> = {};
      for (let i = Math.floor(rand() * 4); i > 0; i--)
        o[['a', 'id', 'amount', '__proto__', 'constructor', '0', ''][Math.floor(rand() * 7)]] = randomJson(rand, depth + 1);
      return o;
    }
  }
}

/** The values one property is given, each with everything else of the baseline left valid. */
function propertyMutations(schema: Schema | undefined, rand: () => number): unknown[] {
  const accepted = acceptedTypes(schema);
  const out: unknown[] = Object.entries(WRONG_TYPE)
    .filter(([t]) => !accepted.has(t))
    .map(([, v]) => v);
  out.push(KB100, protoKeys(), randomJson(rand));
  if (accepted.has('number')) out.push(...NUMBER_EXTREMES);
  if (accepted.has('string')) out.push(...STRING_TRICKS);
  return out;
}

/** Mutations of a nested property (inside an object or the first element of an array). */
function childMutations(schema: Schema | undefined): unknown[] {
  const accepted = acceptedTypes(schema);
  return [accepted.has('string') ? 12345 : 'texto', [], KB100, protoKeys(), accepted.has('number') ? raw('1e999') : '\uD800'];
}

// ---------------------------------------------------------------------------------------------
// The registry's envelope

const REGISTRY: ErrorDef[] = Object.values(Errors);
function envelopeProblem(status: number, body: any): string | null {
  if (!body || typeof body !== 'object' || Array.isArray(body)) return 'error body is not a JSON object';
  if (typeof body.message !== 'string' || !body.message) return 'error body without a message';
  const known = REGISTRY.some((d) => d.status === status && (d.codeName ?? undefined) === body.code_name && (d.code ?? undefined) === body.code);
  if (!known) return `(status ${status}, code ${body.code}, code_name ${body.code_name}) is not in the registry`;
  if (body.errors !== undefined) {
    if (typeof body.errors !== 'object' || body.errors === null || Array.isArray(body.errors)) return '`errors` is not an object';
    for (const [k, v] of Object.entries(body.errors))
      if (!Array.isArray(v) || !v.every((m) => typeof m === 'string')) return `errors.${k} is not a list of messages`;
  }
  return null;
}

// ---------------------------------------------------------------------------------------------

interface Answer {
  status: number; // 0: no answer within the bound
  body: any;
  raw: string;
}

describe('schema-driven fuzz of every operation of /v1/openapi.json', () => {
  let h: Harness;
  let own: Company; // the caller
  let other: Company; // the company whose ids the caller tries
  let ops: Operation[];
  let fxOwn: Fixtures;
  let fxOther: Fixtures;
  const rand = mulberry32(SEED);
  const prototypeKeys = Object.getOwnPropertyNames(Object.prototype).sort();
  const stats = {
    requests: 0,
    byPhase: {} as Record<string, number>,
    statuses: {} as Record<string, number>,
    slowestMs: 0,
    slowest: '',
    started: Date.now(),
  };
  const baselineStatus: Record<string, number> = {};
  let idem = 0;

  before(async () => {
    h = await createHarness({ SANDBOX_STAMP_DELAY_MS: '0', SESSION_READS_PER_MINUTE: '100000', SESSION_WRITES_PER_MINUTE: '100000' });
    own = await h.company('Fuzz Propia SAS');
    other = await h.company('Fuzz Ajena SAS');
    const doc = await h.app.inject({ method: 'GET', url: '/v1/openapi.json' });
    assert.equal(doc.statusCode, 200);
    ops = operations(JSON.parse(doc.body), h);
    fxOwn = await makeFixtures(h, own, 'Propia');
    fxOther = await makeFixtures(h, other, 'Ajena');
  });
  after(() => h?.close());

  const keyOf = (op: Operation, co: Company, env: 'test' | 'live' = 'test') =>
    op.auth === 'none' ? null : op.auth === 'publishable' ? co.publishable_keys[env] : co.keys[env];

  /**
   * One request, bounded by REQUEST_BOUND_MS; a 5xx, a hang, an error outside the registry's
   * envelope or a leaked stack trace goes to `failures` with the label.
   */
  async function probe(
    failures: string[],
    phase: string,
    label: string,
    req: {
      method: string;
      url: string;
      key: string | null;
      body?: unknown;
      payload?: string | Buffer;
      contentType?: string | null;
      idem?: string | null;
    },
  ): Promise<Answer> {
    stats.requests++;
    stats.byPhase[phase] = (stats.byPhase[phase] ?? 0) + 1;
    const headers: Record<string, string> = {};
    if (req.key) headers.authorization = `Bearer ${req.key}`;
    // The session routes with the session of the key's company (made by its test key: 401 with the live key).
    if (req.key && isSessionRoute(req.url)) {
      const fx = [own.keys.test, own.keys.live].includes(req.key) ? fxOwn : [other.keys.test, other.keys.live].includes(req.key) ? fxOther : null;
      if (fx) headers['x-customer-token'] = fx.sessionToken;
    }
    if (req.method === 'POST' && req.idem !== null) headers['x-idempotency'] = req.idem ?? `fuzz-${SEED}-${++idem}`;
    const payload = req.payload ?? (req.body !== undefined ? toJson(req.body) : undefined);
    if (payload !== undefined && req.contentType !== null) headers['content-type'] = req.contentType ?? 'application/json';
    let timer: NodeJS.Timeout | undefined;
    const hang = new Promise<null>((resolve) => (timer = setTimeout(() => resolve(null), REQUEST_BOUND_MS)));
    const started = Date.now();
    let res: LightMyRequestResponse | null;
    try {
      res = await Promise.race([h.app.inject({ method: req.method as 'GET', url: req.url, headers, payload }), hang]);
    } catch (error) {
      failures.push(`${label}: inject threw ${(error as Error).message}`);
      return { status: -1, body: undefined, raw: '' };
    } finally {
      clearTimeout(timer);
    }
    const ms = Date.now() - started;
    if (ms > stats.slowestMs) Object.assign(stats, { slowestMs: ms, slowest: label });
    if (!res) {
      failures.push(`${label}: no answer within ${REQUEST_BOUND_MS} ms (hang)`);
      return { status: 0, body: undefined, raw: '' };
    }
    const cls = `${Math.floor(res.statusCode / 100)}xx`;
    stats.statuses[cls] = (stats.statuses[cls] ?? 0) + 1;
    let body: any = undefined;
    const isJson = String(res.headers['content-type'] ?? '').includes('json');
    if (isJson && res.body) {
      try {
        body = JSON.parse(res.body);
      } catch {
        failures.push(`${label}: ${res.statusCode} with a JSON content type that does not parse: ${res.body.slice(0, 300)}`);
      }
    }
    if (res.statusCode >= 500) failures.push(`${label}: ${res.statusCode} ${res.body.slice(0, 300)}`);
    else if (res.statusCode >= 400) {
      const problem = isJson ? envelopeProblem(res.statusCode, body) : `error answered as ${res.headers['content-type']}`;
      if (problem) failures.push(`${label}: ${res.statusCode} ${problem}: ${res.body.slice(0, 300)}`);
    }
    if (/\bat .+\.(ts|js|mjs):\d+:\d+/.test(res.body)) failures.push(`${label}: ${res.statusCode} leaks a stack trace: ${res.body.slice(0, 300)}`);
    return { status: res.statusCode, body, raw: res.body };
  }

  const report = (failures: string[], what: string) => {
    if (failures.length)
      assert.fail(
        `${failures.length} problem(s) in ${what}:\n  ${failures.slice(0, 80).join('\n  ')}${failures.length > 80 ? `\n  … and ${failures.length - 80} more` : ''}`,
      );
  };

  /** Operations sent a body: those with a request schema, and every POST, PUT or PATCH. */
  const withBody = (op: Operation) => op.body !== null || ['POST', 'PUT', 'PATCH'].includes(op.method);
  const baseline = (op: Operation, fx: Fixtures): Record<string, unknown> => {
    const hints = { customer_id: fx.customer, card_id: fx.card, account_id: fx.account, bank_id: BANCOLOMBIA, price_id: fx.price };
    const generated = op.body ? (example(op.body, '', hints) as Record<string, unknown>) : {};
    return { ...(generated && typeof generated === 'object' ? generated : {}), ...(baselineOverrides(fx)[op.id] ?? {}) };
  };
  /** Destructive operations last, so the fixtures they remove serve the others first. */
  const ordered = () => [...ops.filter((o) => o.method !== 'DELETE'), ...ops.filter((o) => o.method === 'DELETE')];

  test('the document lists the operations; each answers its baseline without a 5xx', { timeout: TEST_TIMEOUT_MS }, async () => {
    const failures: string[] = [];
    assert.ok(ops.length >= 80, `${ops.length} operations in the document`);
    const unmapped = ops.filter((o) => o.pathParams.length && !pathIds(o.path, fxOwn)).map((o) => o.id);
    assert.deepEqual(unmapped, [], 'every operation with path parameters has a fixture (add one to pathIds)');
    for (const op of ordered().filter((o) => o.method !== 'DELETE')) {
      const url = fillPath(op.path, pathIds(op.path, fxOwn) ?? {});
      const res = await probe(failures, 'baseline', `${op.id} baseline`, {
        method: op.method,
        url,
        key: keyOf(op, own),
        body: withBody(op) ? baseline(op, fxOwn) : undefined,
      });
      baselineStatus[op.id] = res.status;
    }
    report(failures, 'the baselines');
  });

  test(
    "another company's ids answer 404 like missing ones and change nothing; the other environment's too",
    { timeout: TEST_TIMEOUT_MS },
    async () => {
      const failures: string[] = [];
      const leaks: string[] = [];
      const readable = ops.filter((o) => o.method === 'GET' && o.pathParams.length && !isGlobal(o.path) && !/\/(xml|pdf)$/.test(o.path));
      const snapshot = async () => {
        const out: Record<string, string> = {};
        for (const op of readable) out[op.id] = (await other.req({ url: fillPath(op.path, pathIds(op.path, fxOther)!) })).raw;
        return out;
      };
      const before = await snapshot();
      const markers = ['Ajena', 'ajena.fuzz@example.com', other.company.id];
      for (const op of ordered()) {
        if (!op.pathParams.length || isGlobal(op.path)) continue;
        const theirs = pathIds(op.path, fxOther)!;
        const mine = pathIds(op.path, fxOwn)!;
        const body = withBody(op) ? baseline(op, fxOwn) : undefined;
        // All of the other company's ids, then each one alone next to the caller's own; each compared
        // with the same path where the other company's ids are replaced by ids that exist nowhere.
        const combos = [theirs, ...(op.pathParams.length > 1 ? op.pathParams.map((p) => ({ ...mine, [p]: theirs[p] })) : [])];
        for (const ids of combos) {
          const foreign = Object.keys(ids).filter((k) => ids[k] === theirs[k]);
          const label = `${op.id} with the other company's ${foreign.join('+')}`;
          const missingIds = Object.fromEntries(Object.entries(ids).map(([k, v]) => [k, foreign.includes(k) ? missingId(v) : v]));
          const missing = await probe(failures, 'other-company', `${label} (missing instead)`, {
            method: op.method,
            url: fillPath(op.path, missingIds),
            key: keyOf(op, own),
            body,
          });
          const res = await probe(failures, 'other-company', label, { method: op.method, url: fillPath(op.path, ids), key: keyOf(op, own), body });
          if (res.status >= 200 && res.status < 300) leaks.push(`${label}: answered ${res.status} ${res.raw.slice(0, 300)}`);
          else if (res.status !== 404 || res.body?.code_name !== missing.body?.code_name) {
            failures.push(
              `${label}: ${res.status} ${res.body?.code_name}, a missing id answers ${missing.status} ${missing.body?.code_name}: ${res.raw.slice(0, 300)}`,
            );
          }
          const marker = markers.find((m) => res.raw.includes(m));
          if (marker) leaks.push(`${label}: the answer contains the other company's "${marker}": ${res.raw.slice(0, 300)}`);
        }
        // The caller's own resource with the caller's live key: another environment, as missing.
        if (op.method === 'GET') {
          const label = `${op.id} own test id with the live key`;
          const res = await probe(failures, 'other-company', label, { method: op.method, url: fillPath(op.path, mine), key: keyOf(op, own, 'live') });
          // A session token is bound to the test key that made it: with the live key it is invalid (401).
          const expected = isSessionRoute(op.path) ? 401 : 404;
          if (res.status !== expected) failures.push(`${label}: ${res.status}, expected ${expected}: ${res.raw.slice(0, 300)}`);
        }
      }
      const afterwards = await snapshot();
      for (const id of Object.keys(before))
        if (before[id] !== afterwards[id])
          leaks.push(
            `${id}: the other company's resource changed:\n    before ${before[id].slice(0, 300)}\n    after  ${afterwards[id].slice(0, 300)}`,
          );
      assert.deepEqual(leaks, [], `another company's data was read or changed:\n  ${leaks.join('\n  ')}`);
      report(failures, "another company's ids");
    },
  );

  test('hostile bodies on every operation that takes one: no 5xx, no hang, the envelope', { timeout: TEST_TIMEOUT_MS }, async () => {
    const failures: string[] = [];
    for (const op of ordered().filter(withBody)) {
      const url = fillPath(op.path, pathIds(op.path, fxOwn)!);
      const key = keyOf(op, own);
      const base = baseline(op, fxOwn);
      const send = (label: string, req: { body?: unknown; payload?: string | Buffer; contentType?: string | null; idem?: string | null }) =>
        probe(failures, 'bodies', `${op.id} ${label}`, { method: op.method, url, key, ...req });
      const baseJson = toJson(base);
      // A string value of the baseline to put bad bytes into (or a new field).
      const [textField] = Object.entries(base).find(([, v]) => typeof v === 'string') ?? ['fuzz_text'];
      const withBytes = (bytes: number[]) => {
        const marker = 'FUZZMARK';
        const [head, tail] = toJson({ ...base, [textField]: marker }).split(marker);
        return Buffer.concat([Buffer.from(head), Buffer.from(bytes), Buffer.from(tail)]);
      };

      // Whole bodies.
      for (const depth of [10_000, 65]) {
        for (const [shape, nested] of [
          ['arrays', nestedArrays(depth)],
          ['objects', nestedObjects(depth)],
        ] as const) {
          for (const [where, body] of [
            ['whole body', nested],
            ['in a property', { ...base, [textField]: nested }],
          ] as const) {
            const res = await send(`${depth}-deep ${shape} as ${where}`, { body });
            if (res.status !== 400 || res.body?.code !== 10011 || res.body?.code_name !== 'body_too_deep')
              failures.push(`${op.id} ${depth}-deep ${shape} as ${where}: ${res.status}, expected 400 body_too_deep 10011: ${res.raw.slice(0, 300)}`);
          }
        }
      }
      await send('60-deep arrays in a property', { body: { ...base, [textField]: nestedArrays(60) } });
      const RAW_BODIES: [string, string | Buffer, string | null][] = [
        ['invalid UTF-8 in a value (C3 28, FF)', withBytes([0xc3, 0x28, 0xff]), 'application/json'],
        ['CESU-8 lone surrogate (ED A0 80)', withBytes([0xed, 0xa0, 0x80]), 'application/json'],
        ['overlong "/" (C0 AF)', withBytes([0xc0, 0xaf]), 'application/json'],
        ['truncated sequence (E2 82)', withBytes([0xe2, 0x82]), 'application/json'],
        ['invalid UTF-8 outside strings', Buffer.concat([Buffer.from(baseJson.slice(0, -1)), Buffer.from([0xff, 0xfe, 0x7d])]), 'application/json'],
        ['UTF-8 BOM', Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(baseJson)]), 'application/json'],
        ['UTF-16LE body', Buffer.from(baseJson, 'utf16le'), 'application/json; charset=utf-16'],
        [
          'lone surrogate escapes in keys and values',
          baseJson.slice(0, -1) + `${baseJson.length > 2 ? ',' : ''}"\\ud800":"\\udfff\\ud83d"}`,
          'application/json',
        ],
        ['NUL escape', baseJson.slice(0, -1) + `${baseJson.length > 2 ? ',' : ''}"n":"a\\u0000b"}`, 'application/json'],
        [
          'raw NUL byte',
          Buffer.concat([
            Buffer.from(baseJson.slice(0, -1)),
            Buffer.from(`${baseJson.length > 2 ? ',' : ''}"n":"a`),
            Buffer.from([0]),
            Buffer.from('b"}'),
          ]),
          'application/json',
        ],
        ['empty', '', 'application/json'],
        ['whitespace only', ' \n\t ', 'application/json'],
        ['array', `[${baseJson}]`, 'application/json'],
        ['string', '"texto"', 'application/json'],
        ['number', '12', 'application/json'],
        ['null', 'null', 'application/json'],
        ['true', 'true', 'application/json'],
        ['truncated JSON', baseJson.slice(0, Math.max(1, baseJson.length - 3)), 'application/json'],
        ['duplicate keys', baseJson.slice(0, -1) + `${baseJson.length > 2 ? ',' : ''}"__proto__":1,"__proto__":{"x":1}}`, 'application/json'],
        [
          'prototype keys at the top',
          baseJson.slice(0, -1) +
            `${baseJson.length > 2 ? ',' : ''}"__proto__":{"polluted":"yes"},"constructor":{"prototype":{"polluted":"yes"}},"prototype":{"polluted":"yes"}}`,
          'application/json',
        ],
        ['900 KB extra field', toJson({ ...base, fuzz_padding: KB900 }), 'application/json'],
        ['900 KB string in a field', toJson({ ...base, [textField]: KB900 }), 'application/json'],
        ['over 1 MB', toJson({ ...base, fuzz_padding: KB900 + KB900 }), 'application/json'],
        ['text/plain', baseJson, 'text/plain'],
        ['form', 'a=1&b=2&__proto__[polluted]=yes', 'application/x-www-form-urlencoded'],
        ['multipart', '--x\r\nContent-Disposition: form-data; name="a"\r\n\r\n1\r\n--x--', 'multipart/form-data; boundary=x'],
        ['upper-case media type', baseJson, 'APPLICATION/JSON'],
        ['json with latin1 charset', Buffer.from(baseJson, 'latin1'), 'application/json; charset=latin1'],
        ['vendor json type', baseJson, 'application/vnd.api+json'],
        ['no content type', baseJson, null],
      ];
      for (const [label, payload, contentType] of RAW_BODIES) await send(`raw ${label}`, { payload, contentType });

      // The x-idempotency header.
      if (op.method === 'POST') {
        await send('without x-idempotency', { body: base, idem: null });
        await send('x-idempotency of 300 characters', { body: base, idem: 'k'.repeat(300) });
        await send('x-idempotency with spaces and latin1', { body: base, idem: 'clé con espacio' });
        const reused = `fuzz-${SEED}-reused-${++idem}`;
        await send('x-idempotency first use', { body: base, idem: reused });
        await send('x-idempotency reused with another body', { body: { ...base, fuzz_other: 1 }, idem: reused });
      }

      // One property at a time, the rest of the baseline valid.
      const objectSchema = objectVariant(op.body ?? undefined);
      for (const [prop, propSchema] of Object.entries(objectSchema?.properties ?? {})) {
        for (const value of propertyMutations(propSchema, rand))
          await send(`body.${prop}=${describeValue(value)}`, { body: { ...base, [prop]: value } });
        // One level down: an object's properties, or those of an array's first element.
        const child = objectVariant(propSchema);
        const item = arrayItemObject(propSchema);
        const nested = child ?? item;
        if (!nested) continue;
        const start = (item ? (Array.isArray(base[prop]) ? (base[prop] as unknown[])[0] : undefined) : base[prop]) ?? example(nested, prop, {});
        for (const [childProp, childSchema] of Object.entries(nested.properties ?? {})) {
          for (const value of childMutations(childSchema)) {
            const inner = { ...(start as Record<string, unknown>), [childProp]: value };
            await send(`body.${prop}${item ? '[0]' : ''}.${childProp}=${describeValue(value)}`, {
              body: { ...base, [prop]: item ? [inner] : inner },
            });
          }
        }
      }
      // Properties the schema does not have: prototype keys as names, an empty name, a huge name.
      await send('unknown properties', {
        body: { ...base, ...protoKeys(), '': 1, [KB100.slice(0, 10_000)]: 1, hasOwnProperty: 'x', toString: 'x', valueOf: {} },
      });
    }
    report(failures, 'hostile bodies');
  });

  test('garbage path ids and hostile query strings on every operation: no 5xx, no hang, the envelope', { timeout: TEST_TIMEOUT_MS }, async () => {
    const failures: string[] = [];
    const GARBAGE_IDS = [
      'x'.repeat(600),
      encodeURIComponent('ñ😀'.repeat(100)),
      '%00',
      '..%2f..%2fetc%2fpasswd',
      '..%2F',
      '__proto__',
      'constructor',
      'hasOwnProperty',
      '%C3%28',
      '%FF%FE',
      '%',
      '-1',
      '9223372036854775808',
      '00000000-0000-0000-0000-000000000000',
      encodeURIComponent('ñandú\u202E😀'),
      "1'%20OR%20'1'%3D'1",
    ];
    for (const op of ordered()) {
      const mine = pathIds(op.path, fxOwn)!;
      const body = withBody(op) ? baseline(op, fxOwn) : undefined;
      // Each path parameter in turn gets garbage; the others keep the caller's real ids.
      for (const param of op.pathParams) {
        for (const garbage of GARBAGE_IDS) {
          const url = op.path.replace(/\{([^}]+)\}/g, (_, name: string) => (name === param ? garbage : encodeURIComponent(mine[name])));
          const label = `${op.id} ${param}=${garbage.slice(0, 24)}${garbage.length > 24 ? '…' : ''}`;
          const res = await probe(failures, 'ids-and-queries', label, { method: op.method, url, key: keyOf(op, own), body });
          if (res.status >= 200 && res.status < 300) failures.push(`${label}: a garbage id answered ${res.status}: ${res.raw.slice(0, 300)}`);
        }
      }
      if (op.method !== 'GET' && op.method !== 'DELETE') continue;
      const base = fillPath(op.path, mine);
      const get = (label: string, query: string) =>
        probe(failures, 'ids-and-queries', `${op.id}?${label}`, { method: op.method, url: `${base}?${query}`, key: keyOf(op, own), body });
      for (const { name, schema } of op.queryParams) {
        const q = encodeURIComponent(name).replace(/%5B/g, '[').replace(/%5D/g, ']');
        const numeric = acceptedTypes(schema).has('number') || /page|limit|amount/.test(name);
        const values = numeric
          ? ['-1', '0', '1e308', '9223372036854775808', 'NaN', 'x'.repeat(5000)]
          : ['', 'x'.repeat(5000), '%FF%FE', '__proto__', "';drop table customers;--", '%E2%80%AE%F0%9F%98%80'];
        if (/created_at|_at\]|date/.test(name)) values.push('2026-13-45', '1e308');
        for (const value of values) await get(`${name}=${value.slice(0, 20)}`, `${q}=${value}`);
        await get(`${name} repeated`, `${q}=1&${q}=2&${q}[]=3`);
      }
      const allParams = op.queryParams.map((p) => `${encodeURIComponent(p.name)}=1`).join('&');
      for (const [label, query] of [
        ['every parameter at once', allParams],
        ['__proto__ nesting', '__proto__[polluted]=yes&constructor[prototype][polluted]=yes&__proto__.polluted=yes'],
        ['unknown filter and sort', 'filter[zzz]=1&sort=-zzz&filter[__proto__]=1'],
        ['1000 parameters', Array.from({ length: 1000 }, (_, i) => `p${i}=${i}`).join('&')],
        ['lone percent', 'a=%&b=%E0%A4%A'],
        ['far page', 'page=99999999&per_page=100&limit=100'],
        ['per_page out of range', 'per_page=1000000&limit=-1'],
      ] as const) {
        await get(label, query);
      }
    }
    report(failures, 'garbage ids and query strings');
  });

  test('afterwards: Object.prototype is not polluted and the service serves as before', async () => {
    const plain = {} as Record<string, unknown>;
    for (const key of ['polluted', 'isAdmin', 'x']) {
      assert.equal(plain[key], undefined, `({}).${key} is polluted`);
      assert.equal(([] as unknown as Record<string, unknown>)[key], undefined, `[].${key} is polluted`);
    }
    assert.deepEqual(Object.getOwnPropertyNames(Object.prototype).sort(), prototypeKeys, 'Object.prototype gained properties');
    const customer = await own.req({ url: '/v1/customers', body: { first_name: 'Luis', email: 'luis@example.com' } });
    assert.equal(customer.status, 200, customer.raw);
    assert.equal(customer.body.polluted, undefined);
    const read = await own.req({ url: `/v1/customers/${customer.body.id}` });
    assert.equal(read.status, 200, read.raw);
    const charge = await own.req({
      url: '/v1/charges',
      body: chargeBody(customer.body.id, { card_id: (await createCard(own, customer.body.id)).id }),
    });
    assert.equal(charge.status, 200, charge.raw);
    assert.equal(charge.body.status, 'paid');
    const notOk = Object.entries(baselineStatus).filter(([, s]) => s < 200 || s >= 300);
    console.log(
      `FUZZ-SUMMARY ${JSON.stringify({
        seed: SEED,
        operations: ops.length,
        requests: stats.requests,
        byPhase: stats.byPhase,
        statuses: stats.statuses,
        seconds: Math.round((Date.now() - stats.started) / 100) / 10,
        slowest: `${stats.slowest} (${stats.slowestMs} ms)`,
        baselinesNot2xx: Object.fromEntries(notOk),
      })}`,
    );
    assert.ok(stats.requests > 2000, `${stats.requests} requests sent`);
  });
});
