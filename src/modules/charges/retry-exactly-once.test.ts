import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHarness, expectError, type Company, type Harness } from '../../../test/harness.ts';
import type { DebitOutcome, DebitPort, DebitRequest, RefundRequest, RtkeyPort } from '../../rails/index.ts';
import { chargeBody, payer } from '../../../test/support/charges.ts';

const HOLD = 30_000;

/** Counts every rail call; `gate` (when set) holds debits and refunds until it is opened. */
class CountingRail implements DebitPort {
  readonly name = 'counting';
  debits: string[] = [];
  refunds: string[] = [];
  gate: Promise<void> | null = null;
  reached: (() => void) | null = null;
  constructor(private inner: DebitPort) {}
  async debit(request: DebitRequest): Promise<DebitOutcome> {
    this.debits.push(request.reference);
    this.reached?.();
    if (this.gate) await this.gate;
    return this.inner.debit(request);
  }
  status(request: DebitRequest) {
    return this.inner.status(request);
  }
  void(reference: string) {
    return this.inner.void(reference);
  }
  async refund(request: RefundRequest) {
    this.refunds.push(request.reference);
    this.reached?.();
    if (this.gate) await this.gate;
    return this.inner.refund(request);
  }
  /** Holds the next calls; resolves `arrived` when one reaches the rail. */
  hold(): { arrived: Promise<void>; open: () => void } {
    let open!: () => void;
    this.gate = new Promise<void>((resolve) => (open = resolve));
    const arrived = new Promise<void>((resolve) => (this.reached = resolve));
    return {
      arrived,
      open: () => {
        this.gate = null;
        this.reached = null;
        open();
      },
    };
  }
}

/**
 * Issue 11 "Exactly once per key, whatever fails": once a request committed its charge (or refund,
 * or registration) before the rail call, a retry with the same key answers that resource and never
 * calls the rail again — after a 503 90005, after the run died, and while it is still running.
 */
describe('a retried key never charges twice', () => {
  let h: Harness;
  let co: Company;
  let p: { customer: string; card: string; account: string };
  let rail: CountingRail;

  before(async () => {
    h = await createHarness({ IDEMPOTENCY_HOLD_MS: String(HOLD) });
    co = await h.company('Reintentos SAS');
    p = await payer(h, co);
    rail = new CountingRail(h.runtime.deps.rails.sandbox.card);
    h.runtime.deps.rails.sandbox.card = rail;
    h.runtime.deps.rails.sandbox.account_debit = rail;
  });
  after(() => h.close());

  const byKey = async (key: string) =>
    (await co.req({ url: `/v1/charges?filter[key]=${encodeURIComponent(key)}` })).body.data as { id: string; status: string }[];

  test('after 503 90005 the same key answers the one charge, and the rail is not called again', async () => {
    const body = chargeBody(p.customer, { card_id: p.card }, { external_id: 'retry-503', test_scenario: 'persistence_lost' });
    const lost = await co.req({ url: '/v1/charges', body, idem: 'retry-503' });
    expectError(lost, 503, 'charge_persistence_lost', 90005);
    const [charge] = await byKey('retry-503');
    assert.ok(charge, 'the charge exists');
    const calls = rail.debits.length;

    const retry = await co.req({ url: '/v1/charges', body, idem: 'retry-503' });
    assert.equal(retry.status, 200, retry.raw);
    assert.equal(retry.body.id, charge.id, 'the retry answers the charge the first run recorded');
    assert.equal(retry.headers['idempotent-replayed'], 'true');
    const again = await co.req({ url: '/v1/charges', body, idem: 'retry-503' });
    assert.equal(again.raw, retry.raw, 'and that answer replays like any success');
    assert.equal(rail.debits.length, calls, 'no second debit');
    assert.equal((await byKey('retry-503')).length, 1);
    // Another body with the key is still a reuse.
    expectError(await co.req({ url: '/v1/charges', body: { ...body, amount: 999 }, idem: 'retry-503' }), 409, 'idempotency_error', 10003);
  });

  test('a duplicate while the first run is at the rail waits for its answer; one debit', async () => {
    const body = chargeBody(p.customer, { card_id: p.card }, { external_id: 'retry-wait' });
    const held = rail.hold();
    const calls = rail.debits.length;
    const first = co.req({ url: '/v1/charges', body, idem: 'retry-wait' });
    await held.arrived;
    let secondDone = false;
    const second = co.req({ url: '/v1/charges', body, idem: 'retry-wait' }).then((r) => {
      secondDone = true;
      return r;
    });
    await new Promise((resolve) => setTimeout(resolve, 200));
    assert.equal(secondDone, false, 'the duplicate waits while the first run holds the key');
    held.open();
    const [a, b] = await Promise.all([first, second]);
    assert.equal(a.status, 200, a.raw);
    assert.equal(b.raw, a.raw, 'the duplicate gets the first answer');
    assert.equal(a.body.status, 'paid');
    assert.equal(rail.debits.length, calls + 1);
  });

  test('a run that never answered (it died at the rail): after its hold the retry answers the charge as it is, never the rail', async () => {
    const body = chargeBody(p.customer, { card_id: p.card }, { external_id: 'retry-dead' });
    const held = rail.hold();
    const calls = rail.debits.length;
    const dying = co.req({ url: '/v1/charges', body, idem: 'retry-dead' });
    await held.arrived;
    h.clock.advance(HOLD + 1);
    const retry = await co.req({ url: '/v1/charges', body, idem: 'retry-dead' });
    assert.equal(retry.status, 200, retry.raw);
    assert.equal(retry.body.status, 'created', 'the outcome is unknown: the charge as recorded, for the reconciler to settle');
    assert.equal(rail.debits.length, calls + 1, 'the retry did not call the rail');
    // The first run's late answer neither overwrites the key's answer nor makes a second charge.
    held.open();
    assert.equal((await dying).status, 200);
    assert.equal((await co.req({ url: '/v1/charges', body, idem: 'retry-dead' })).raw, retry.raw);
    const charges = await byKey('retry-dead');
    assert.deepEqual(
      charges.map((c) => c.id),
      [retry.body.id],
    );
    assert.equal(charges[0].status, 'paid', 'the first run saved the rail answer');
  });

  test('a refund that failed after it was recorded: the retry answers the charge, one refund at the rail', async () => {
    const paid = (
      await co.req({ url: '/v1/charges', body: chargeBody(p.customer, { card_id: p.card }, { amount: 20000, test_scenario: 'refundable' }) })
    ).body;
    const held = rail.hold();
    const calls = rail.refunds.length;
    const dying = co.req({ url: `/v1/charges/${paid.id}/refund`, body: {}, idem: 'refund-dead' });
    await held.arrived;
    h.clock.advance(HOLD + 1);
    const retry = await co.req({ url: `/v1/charges/${paid.id}/refund`, body: {}, idem: 'refund-dead' });
    assert.equal(retry.status, 200, retry.raw);
    assert.equal(retry.body.id, paid.id);
    assert.equal(rail.refunds.length, calls + 1, 'the retry did not refund again');
    held.open();
    assert.equal((await dying).body.status, 'refunded');
  });

  test('the database refuses a second open charge for one key (the last line of defence)', async () => {
    const body = chargeBody(p.customer, { account_id: p.account }, { external_id: 'twin' });
    const first = await co.req({ url: '/v1/charges', body, idem: 'twin-key' });
    assert.equal(first.body.status, 'processing');
    const row = await h.runtime.deps.database.db.selectFrom('charges').selectAll().where('id', '=', first.body.id).executeTakeFirstOrThrow();
    await assert.rejects(
      h.runtime.deps.database.db
        .insertInto('charges')
        .values({
          ...row,
          id: `${row.id.slice(0, -4)}zzzz`,
          intent_id: `${row.intent_id.slice(0, -4)}zzzz`,
          splits: JSON.stringify(row.splits),
          metadata: null,
        })
        .execute(),
      /charges_open_idempotency_key|unique/i,
    );
  });
});

describe('a retried rtkey key registers the same reference', () => {
  let h: Harness;
  let co: Company;
  let customer: string;

  before(async () => {
    h = await createHarness({ IDEMPOTENCY_HOLD_MS: String(HOLD) });
    co = await h.company('QR Reintentos SAS');
    customer = (await payer(h, co)).customer;
  });
  after(() => h.close());

  test('the run died while registering the QR: the retry registers the same charge id, and one charge exists', async () => {
    const inner = h.runtime.deps.rails.sandbox.rtkey;
    const references: string[] = [];
    let open!: () => void;
    let arrived!: () => void;
    const gate = new Promise<void>((resolve) => (open = resolve));
    const reached = new Promise<void>((resolve) => (arrived = resolve));
    let holdFirst = true;
    const spy: RtkeyPort = Object.assign(Object.create(inner) as RtkeyPort, {
      registerQr: async (r: Parameters<RtkeyPort['registerQr']>[0]) => {
        references.push(r.reference);
        if (holdFirst) {
          holdFirst = false;
          arrived();
          await gate;
          throw new Error('the process died here');
        }
        return inner.registerQr(r);
      },
    });
    h.runtime.deps.rails.sandbox.rtkey = spy;
    const body = { amount: 25000, customer_id: customer, external_id: 'qr-retry' };
    const dying = co.req({ url: '/v1/charges/rtkey', body, idem: 'qr-dead' });
    await reached;
    h.clock.advance(HOLD + 1);
    const retry = await co.req({ url: '/v1/charges/rtkey', body, idem: 'qr-dead' });
    assert.equal(retry.status, 200, retry.raw);
    assert.equal(references.length, 2);
    assert.equal(references[1], references[0], 'the same reference: the scheme answers the same QR');
    assert.equal(retry.body.id, references[0]);
    open();
    await dying;
    const list = (await co.req({ url: '/v1/charges?filter[key]=qr-dead' })).body.data as { id: string }[];
    assert.deepEqual(
      list.map((c) => c.id),
      [retry.body.id],
    );
  });
});
