import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { createHarness, ENGINE, expectError, expectValidation, send, type Company, type Harness } from '../../../test/harness.ts';
import { FakeWompi } from '../../../test/fakes/wompi-server.ts';
import { FakeWompiPayouts, type StoredPayoutTransaction } from '../../../test/fakes/wompi-payouts-server.ts';
import { cardBody, createCustomer } from '../../../test/support/cards.ts';
import { balance, createAccount, chargeBody, chargeEvents, payer } from '../../../test/support/charges.ts';
import { auditLedger } from '../ledger/service.ts';
import { CASHOUT_RECONCILE_JOB, runCashoutReconcile } from '../cashouts/service.ts';
import { eventChecksum, type WompiEvent } from '../../rails/connectors/wompi/contract.ts';
import { PAYOUT_BATCH_STATUSES, PAYOUT_TRANSACTION_STATUSES, payoutStanding } from '../../rails/connectors/wompi/payouts-contract.ts';

/**
 * Cash-outs through Wompi's Third-Party Payments (docs/connectors.md "Payouts") against the local
 * fake of its public API: settings (all payouts keys or none, write-only), a live cash-out sent as
 * a batch of one whose references and idempotency key are the cash-out id in the provider's
 * charset, settled by the provider's word (read back after an event, or by the reconciler), once;
 * every documented batch and transaction status mapped (the anti-fraud review AFE_ON_HOLD and
 * AFE_REJECTED included); a failure releases the held money; a refused batch is rejected at once;
 * a lost answer retried with the same key never makes a second batch; events are hints (each
 * company's own URL and secret, stale ones refused, the payout read back and matched before
 * anything settles); sandbox balances never feed a provider payout (issue 28).
 */

const POLL_MS = 60_000;

describe(`wompi payouts connector (${ENGINE})`, () => {
  let pay: FakeWompi;
  let fake: FakeWompiPayouts;
  let sandboxFake: FakeWompiPayouts;
  let h: Harness;
  let co: Company;
  let customer: string;
  let account: string;
  /** The path of the company's payouts events URL (its token). */
  let eventsPath: string;

  before(async () => {
    pay = await new FakeWompi({
      publicKey: 'pub_prod_payout01',
      privateKey: 'prv_prod_payout01',
      eventsSecret: 'prod_events_payout01',
      integritySecret: 'prod_integrity_payout01',
    }).start();
    fake = await new FakeWompiPayouts('production').start();
    sandboxFake = await new FakeWompiPayouts('sandbox').start();
    h = await createHarness({
      WOMPI_PRODUCTION_URL: pay.url,
      WOMPI_PAYOUTS_PRODUCTION_URL: fake.url,
      WOMPI_PAYOUTS_SANDBOX_URL: sandboxFake.url,
      CONNECTOR_POLL_AFTER_MS: String(POLL_MS),
      CONNECTOR_SETTINGS_TTL_MS: '0',
    });
    // The providers' clocks are the test clock (event timestamps).
    pay.now = () => h.clock.now();
    fake.now = () => h.clock.now();
    sandboxFake.now = () => h.clock.now();
    pay.deliver = async (event) => (await send(h.app, { method: 'POST', url: '/v1/rails/wompi/events', body: event, idem: false })).status;
    co = await h.company('Dispersiones Reales SAS');
    const res = await co.req({ method: 'PUT', url: '/v1/connectors/wompi', env: 'live', body: { ...paymentKeys(), ...payoutKeys() } });
    assert.equal(res.status, 200, res.raw);
    eventsPath = new URL(res.body.payouts_events_url).pathname;
    fake.deliver = async (event, checksum) => (await post(eventsPath, event, checksum)).status;
    customer = await liveCustomer(co, 'Marta');
    account = await createAccount(h, co, customer, { authorization: false, account_number: '5500112233' }, { env: 'live' });
    await fund(co, 2_000_000);
  });
  after(async () => {
    await h.close();
    await fake.close();
    await sandboxFake.close();
    await pay.close();
  });

  const post = (url: string, body: unknown, checksum?: string) =>
    send(h.app, { method: 'POST', url, body, idem: false, headers: checksum ? { 'x-event-checksum': checksum } : {} });

  const paymentKeys = () => ({
    public_key: pay.publicKey,
    private_key: pay.privateKey,
    events_secret: pay.eventsSecret,
    integrity_secret: pay.integritySecret,
  });
  const payoutKeys = (provider: FakeWompiPayouts = fake) => ({
    payouts_api_key: provider.apiKey,
    payouts_user_principal_id: provider.principalId,
    payouts_events_secret: provider.eventsSecret,
    payouts_account_id: provider.originAccountId,
  });

  async function liveCustomer(target: Company, name: string, extra: Record<string, unknown> = {}, env: 'test' | 'live' = 'live') {
    const res = await target.req({
      url: '/v1/customers',
      env,
      body: {
        first_name: name,
        last_name: 'Rojas',
        email: `${name.toLowerCase()}@example.com`,
        document_type: 'CC',
        document_number: '1020304050',
        ...extra,
      },
    });
    assert.equal(res.status, 200, res.raw);
    return res.body.id as string;
  }

  /** Collects `pesos` into the live balance: a card charge through the payments fake, paid by its event. */
  async function fund(target: Company, pesos: number) {
    const payerId = await createCustomer(target, 'live', 'Pagador');
    const card = await target.req({ url: '/v1/cards', env: 'live', body: { ...cardBody(payerId), accept_terms: true } });
    assert.equal(card.status, 200, card.raw);
    const charge = await target.req({
      url: '/v1/charges',
      env: 'live',
      body: { amount: pesos, title: 'Venta', customer_id: payerId, card_id: card.body.id },
    });
    assert.equal(charge.status, 200, charge.raw);
    const tx = [...pay.transactions.values()].find((t) => t.reference === charge.body.id)!;
    await pay.finalize(tx.id);
    assert.equal((await target.req({ url: `/v1/charges/${charge.body.id}`, env: 'live' })).body.status, 'paid');
  }

  const cashout = (body: Record<string, unknown> = {}, idem?: string) =>
    co.req({ url: '/v1/cashouts', env: 'live', idem, body: { amount: 100000.5, customer_id: customer, account_id: account, ...body } });
  const read = async (id: string) => (await co.req({ url: `/v1/cashouts/${id}`, env: 'live' })).body;
  /** A processing live cash-out of `pesos` and its one provider transaction. */
  async function processing(pesos: number): Promise<{ id: string; tx: StoredPayoutTransaction }> {
    const res = await cashout({ amount: pesos });
    assert.equal(res.status, 200, res.raw);
    assert.equal(res.body.status, 'processing', res.raw);
    const [tx] = fake.byReference(res.body.id);
    assert.ok(tx, 'one provider transaction');
    return { id: res.body.id, tx };
  }

  /** The types of the events of one resource (its `data.id`), oldest first. */
  const events = async (id: string) => (await chargeEvents(h, co, id)).map((e) => e.type);

  /** What was recorded of the events naming this provider id, oldest first. */
  const recorded = (providerId: string) =>
    h.runtime.deps.database.db
      .selectFrom('connector_events')
      .select(['verified', 'problem', 'company_id'])
      .where('provider_id', '=', providerId)
      .orderBy('received_at')
      .execute();

  /** Signs an event again (after a change) as someone holding `secret` would. */
  const resign = (event: WompiEvent, secret = fake.eventsSecret) => {
    event.signature.checksum = eventChecksum(event, secret);
    return event;
  };

  /** Runs the due reconcile jobs of these cash-outs (the queue on PostgreSQL holds other files' jobs too). */
  async function reconcile(ids: string[]) {
    const db = h.runtime.deps.database.db;
    const jobs = await db
      .selectFrom('jobs')
      .select(['id', 'payload'])
      .where('kind', '=', CASHOUT_RECONCILE_JOB)
      .where(sql<string>`payload->>'cashout_id'`, 'in', ids)
      .where('run_at', '<=', h.clock.now())
      .execute();
    for (const job of jobs) {
      await runCashoutReconcile(h.runtime.deps, job.payload);
      await db.deleteFrom('jobs').where('id', '=', job.id).execute();
    }
  }

  test('settings: the payouts keys all or none, write-only; payout is served only with them', async () => {
    const other = await h.company('Sin Dispersiones SAS');
    const partial = await other.req({
      method: 'PUT',
      url: '/v1/connectors/wompi',
      env: 'live',
      body: { ...paymentKeys(), payouts_api_key: fake.apiKey },
    });
    expectValidation(partial, 'payouts_user_principal_id');
    const noKeys = await other.req({
      method: 'PUT',
      url: '/v1/connectors/wompi',
      env: 'live',
      body: { ...paymentKeys(), rails: ['card', 'payout'] },
    });
    expectValidation(noKeys, 'rails');
    const payments = await other.req({ method: 'PUT', url: '/v1/connectors/wompi', env: 'live', body: paymentKeys() });
    assert.deepEqual(payments.body.rails, ['card', 'banklink', 'walleta'], 'without payouts keys the default leaves payout out');
    assert.deepEqual(payments.body.payouts_api_key, { set: false, last4: null });
    // Live cash-outs of that company are still refused: no payout connector.
    expectError(
      await other.req({ url: '/v1/cashouts', env: 'live', body: { amount: 5000, customer_id: customer, account_id: account } }),
      422,
      'rail_not_configured',
    );
    // Adding the keys later adds the rail.
    const added = await other.req({ method: 'PUT', url: '/v1/connectors/wompi', env: 'live', body: payoutKeys() });
    assert.equal(added.status, 200, added.raw);
    assert.deepEqual(added.body.rails, ['card', 'banklink', 'walleta', 'payout']);
    assert.deepEqual(added.body.payouts_api_key, { set: true, last4: fake.apiKey.slice(-4) });
    assert.equal(added.body.payouts_account_id, fake.originAccountId);
    assert.match(added.body.payouts_events_url, /^http:\/\/recaudo\.test\/v1\/rails\/wompi\/payout-events\/cet_[A-Za-z0-9_-]{32}$/);
    const raw = JSON.stringify(added.body);
    for (const secret of [fake.apiKey, fake.principalId, fake.eventsSecret]) assert.ok(!raw.includes(secret), 'no secret is answered');
    const row = await h.runtime.deps.database.db
      .selectFrom('connector_settings')
      .selectAll()
      .where('company_id', '=', other.company.id)
      .executeTakeFirstOrThrow();
    assert.ok(!JSON.stringify(row).includes(fake.apiKey), 'sealed at rest');
  });

  test('health: the payouts keys are checked and the origin balance shown', async () => {
    const res = await co.req({ url: '/v1/connectors/wompi/health', env: 'live' });
    assert.equal(res.status, 200, res.raw);
    assert.equal(res.body.payouts.authenticated, true);
    assert.equal(res.body.payouts.problem, null);
    assert.equal(res.body.payouts.origin_balance, fake.balanceInCents / 100);
  });

  test('every documented batch and transaction status is mapped (AFE_ON_HOLD on the way, AFE_REJECTED a rejection)', () => {
    assert.deepEqual([...PAYOUT_BATCH_STATUSES].sort(), [
      'AFE_ON_HOLD',
      'AFE_REJECTED',
      'NOT_APPROVED',
      'PARTIAL_PAYMENT',
      'PENDING',
      'PENDING_APPROVAL',
      'REJECTED',
      'TOTAL_PAYMENT',
    ]);
    assert.deepEqual([...PAYOUT_TRANSACTION_STATUSES].sort(), [
      'ADDED_TO_FILE',
      'APPROVED',
      'CANCELLED',
      'FAILED',
      'PENDING',
      'PROCESSING',
      'READY_TO_FILE',
      'REJECTED',
    ]);
    const pending = { status: 'PENDING', failureReason: null };
    const batches: Record<string, string> = {
      PENDING_APPROVAL: 'on_the_way',
      PENDING: 'on_the_way',
      AFE_ON_HOLD: 'on_the_way',
      NOT_APPROVED: 'failed NOT_APPROVED: motivo',
      REJECTED: 'failed REJECTED: motivo',
      AFE_REJECTED: 'failed AFE_REJECTED: motivo',
      PARTIAL_PAYMENT: 'on_the_way',
      TOTAL_PAYMENT: 'on_the_way',
    };
    const shown = (s: ReturnType<typeof payoutStanding>) => (s.status === 'failed' ? `failed ${s.remarks}` : s.status);
    for (const status of PAYOUT_BATCH_STATUSES) {
      assert.equal(shown(payoutStanding({ status, statusMessage: 'motivo' }, pending)), batches[status], `batch ${status}, its transaction PENDING`);
      assert.equal(shown(payoutStanding({ status, statusMessage: 'motivo' }, null)), batches[status], `batch ${status}, no transaction`);
    }
    const transactions: Record<string, string> = {
      PENDING: 'on_the_way',
      PROCESSING: 'on_the_way',
      READY_TO_FILE: 'on_the_way',
      ADDED_TO_FILE: 'on_the_way',
      APPROVED: 'paid',
      FAILED: 'failed FAILED: R04 Cuenta inexistente',
      REJECTED: 'failed REJECTED: R04 Cuenta inexistente',
      CANCELLED: 'failed CANCELLED: R04 Cuenta inexistente',
    };
    for (const status of PAYOUT_TRANSACTION_STATUSES) {
      const tx = { status, failureReason: { code: 'R04', message: 'Cuenta inexistente' } };
      assert.equal(shown(payoutStanding({ status: 'PENDING' }, tx)), transactions[status], `transaction ${status}`);
    }
    // A batch refused as a whole names its own status; a credited transaction is paid whatever the batch says.
    assert.equal(
      shown(payoutStanding({ status: 'AFE_REJECTED', statusMessage: null }, { status: 'CANCELLED', failureReason: 'X1 Antifraude' })),
      'failed AFE_REJECTED: X1 Antifraude',
    );
    assert.equal(shown(payoutStanding({ status: 'AFE_REJECTED' }, { status: 'APPROVED', failureReason: null })), 'paid');
    // A status the documentation does not list is never a settlement: asked again.
    assert.equal(shown(payoutStanding({ status: 'SOMETHING_NEW' }, { status: 'ALSO_NEW', failureReason: null })), 'on_the_way');
  });

  test('a live ACH cash-out is one batch at the provider, held, then completed by the signed event, once', async () => {
    const before = await balance(co, 'COP', 'live');
    const idem = `payout-${Date.now()}`;
    const res = await cashout({ external_id: `ext-${Date.now()}` }, idem);
    assert.equal(res.status, 200, res.raw);
    assert.equal(res.body.status, 'processing', 'the provider took it (PENDING)');
    const [tx] = fake.byReference(res.body.id);
    assert.ok(tx, 'one provider transaction under the cash-out’s payout reference');
    assert.equal(res.body.network_id, tx.id);
    assert.equal(tx.amountInCents, 10000050, 'pesos × 100, exactly');
    assert.equal(tx.accountNumber, '5500112233');
    assert.equal(tx.bankId, fake.banks[0].id, 'the catalogue bank mapped to the provider’s bank id');
    assert.deepEqual([tx.legalIdType, tx.legalId, tx.personType], ['CC', '1020304050', 'NATURAL']);
    const held = await balance(co, 'COP', 'live');
    assert.equal(held.available, before.available - 100000.5);
    // The same key again: the same cash-out, no second batch.
    const again = await cashout({ external_id: res.body.external_id }, idem);
    assert.equal(again.body.id, res.body.id);
    assert.equal(fake.byReference(res.body.id).length, 1);
    // The event settles it (the provider is asked first); the same event again changes nothing.
    await fake.finalize(tx.id);
    assert.equal(await fake.postEvent(tx), 200);
    const done = await read(res.body.id);
    assert.equal(done.status, 'completed');
    assert.deepEqual(
      (await events(res.body.id)).filter((t) => t === 'cashout.completed'),
      ['cashout.completed'],
    );
    const after = await balance(co, 'COP', 'live');
    assert.equal(after.available, before.available - 100000.5, 'paid out: the held money left');
    assert.deepEqual(await auditLedger(h.runtime.deps.database.db), { unbalanced: [], mismatched: [], negative: [] });
  });

  test('references and the idempotency key: letters, digits and "-" only, the same transform everywhere', async () => {
    // The provider refuses another character in a reference (422), as its contract says.
    const refused = await fetch(`${fake.url}/payouts`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': fake.apiKey, 'user-principal-id': fake.principalId, 'idempotency-key': 'k-1' },
      body: JSON.stringify({ reference: 'co_abc', accountId: fake.originAccountId, paymentType: 'OTHER', transactions: [] }),
    });
    assert.equal(refused.status, 422);
    const from = fake.calls.length;
    const { id } = await processing(4000);
    const reference = id.replace('_', '-');
    assert.match(reference, /^co-[0-9a-z]+$/);
    const create = fake.calls.filter((c) => c.operation === 'create_payout' && c.reference === reference);
    assert.deepEqual(
      create.map((c) => [c.status, c.idempotencyKey]),
      [[201, reference]],
      'one batch: its reference and its idempotency key are the cash-out id with "-" for "_"',
    );
    const [batch] = [...fake.batches.values()].filter((b) => b.reference === reference);
    assert.ok(batch, 'the batch reference');
    assert.equal(fake.byReference(id)[0].reference, reference, 'the transaction reference');
    const lookups = fake.calls.slice(from).filter((c) => c.operation === 'find_payout');
    assert.ok(lookups.length > 0 && lookups.every((c) => c.reference === reference), 'the lookup by reference uses the same transform');
    assert.ok(
      fake.calls.slice(from).every((c) => !c.reference?.includes('_') && !c.idempotencyKey?.includes('_')),
      'nothing sent with "_"',
    );
  });

  test('a failed payout rejects the cash-out with the provider reason and releases the money', async () => {
    const before = await balance(co, 'COP', 'live');
    const { id, tx } = await processing(5000);
    await fake.finalize(tx.id, { status: 'FAILED', reason: { code: 'D07', message: 'El número de cuenta no existe' } });
    const rejected = await read(id);
    assert.equal(rejected.status, 'rejected');
    assert.equal(rejected.remarks, 'FAILED: D07 El número de cuenta no existe');
    assert.equal((await balance(co, 'COP', 'live')).available, before.available, 'released');
  });

  test('AFE_ON_HOLD (anti-fraud review) is still on the way: nothing settles, by event or reconciler; then paid', async () => {
    const { id, tx } = await processing(6000);
    const batch = fake.batchOf(tx);
    await fake.setBatchStatus(batch.id, 'AFE_ON_HOLD', { statusMessage: 'En revisión antifraude' });
    assert.equal((await read(id)).status, 'processing', 'on hold is not a rejection');
    h.clock.advance(5 * 86_400_000);
    await reconcile([id]);
    assert.equal((await read(id)).status, 'processing', 'the reconciler reads AFE_ON_HOLD as still on the way');
    // The review clears it and the bank credits it.
    await fake.setBatchStatus(batch.id, 'PENDING');
    await fake.finalize(tx.id);
    assert.equal((await read(id)).status, 'completed');
  });

  test('a batch on hold for days: the reconciler stops asking by itself (job dead, a person looks), the money still held', async () => {
    const { id, tx } = await processing(6100);
    await fake.setBatchStatus(fake.batchOf(tx).id, 'AFE_ON_HOLD', { statusMessage: 'En revisión antifraude' });
    h.clock.advance(12 * 86_400_000);
    await assert.rejects(reconcile([id]), /no final word/);
    assert.equal((await read(id)).status, 'processing', 'nothing settled by a guess');
    await fake.setBatchStatus(fake.batchOf(tx).id, 'PENDING');
    await fake.finalize(tx.id);
    assert.equal((await read(id)).status, 'completed', 'the provider’s word still settles it');
  });

  test('AFE_REJECTED (anti-fraud rejection) rejects the cash-out with remarks and releases the money: by event', async () => {
    const before = await balance(co, 'COP', 'live');
    const { id, tx } = await processing(7000);
    assert.equal((await balance(co, 'COP', 'live')).available, before.available - 7000);
    await fake.setBatchStatus(fake.batchOf(tx).id, 'AFE_REJECTED', { statusMessage: 'Rechazado por el sistema antifraude' });
    const rejected = await read(id);
    assert.equal(rejected.status, 'rejected');
    assert.equal(rejected.remarks, 'AFE_REJECTED: Rechazado por el sistema antifraude');
    assert.equal((await balance(co, 'COP', 'live')).available, before.available, 'released');
    assert.deepEqual(await auditLedger(h.runtime.deps.database.db), { unbalanced: [], mismatched: [], negative: [] });
  });

  test('AFE_REJECTED without any event: the reconciler rejects the cash-out and releases the money', async () => {
    const before = await balance(co, 'COP', 'live');
    const { id, tx } = await processing(7500);
    await fake.setBatchStatus(fake.batchOf(tx).id, 'AFE_REJECTED', { statusMessage: 'Beneficiario en lista restrictiva', event: false });
    h.clock.advance(5 * 86_400_000);
    await reconcile([id]);
    const rejected = await read(id);
    assert.equal(rejected.status, 'rejected');
    assert.equal(rejected.remarks, 'AFE_REJECTED: Beneficiario en lista restrictiva');
    assert.equal((await balance(co, 'COP', 'live')).available, before.available, 'released');
  });

  test('a batch not approved (NOT_APPROVED, its transactions CANCELLED) rejects the cash-out', async () => {
    const { id, tx } = await processing(3500);
    await fake.setBatchStatus(fake.batchOf(tx).id, 'NOT_APPROVED', { statusMessage: 'El aprobador no aprobó el lote', transactions: 'CANCELLED' });
    const rejected = await read(id);
    assert.equal(rejected.status, 'rejected');
    assert.equal(rejected.remarks, 'NOT_APPROVED: El aprobador no aprobó el lote');
  });

  test('without an event the reconciler asks the provider; a forged event changes nothing', async () => {
    const { id, tx } = await processing(8000);
    await fake.finalize(tx.id, { event: false });
    const forged = fake.eventOf(tx, (e) => {
      (e.data.transaction as { status: string }).status = 'FAILED';
    });
    expectError(await post(eventsPath, forged), 401, 'unauthenticated');
    // Signed with another secret (the payments events secret): refused too.
    const wrongSecret = resign(fake.eventOf(tx), pay.eventsSecret);
    expectError(await post(eventsPath, wrongSecret), 401);
    assert.equal((await read(id)).status, 'processing');
    assert.deepEqual(
      (await recorded(tx.id)).map((r) => [r.verified, r.problem]),
      [
        [false, 'bad checksum'],
        [false, 'bad checksum'],
      ],
    );
    // An event for a payout Recaudo does not know: acknowledged, recorded, nothing else.
    const stranger = fake.eventOf({ ...tx, id: '00000000-0000-4000-8000-000000000000', payoutId: 'x' });
    assert.equal((await post(eventsPath, stranger)).status, 200);
    assert.equal((await recorded('00000000-0000-4000-8000-000000000000'))[0]?.problem, 'unknown payout');
    // Past the expected arrival the reconciler finds it paid.
    h.clock.advance(5 * 86_400_000);
    await reconcile([id]);
    assert.equal((await read(id)).status, 'completed');
  });

  test('a lost answer, a retry with the same key and the reconciler: one batch, found by its reference', async () => {
    fake.failNext('create_payout', 'lose_answer');
    const idem = `lost-payout-${Date.now()}`;
    const first = await cashout({ amount: 9000 }, idem);
    assert.equal(first.status, 200, first.raw);
    assert.equal(first.body.status, 'created', 'the outcome is unknown: nothing guessed, the money stays held');
    const retry = await cashout({ amount: 9000 }, idem);
    assert.equal(retry.body.id, first.body.id);
    h.clock.advance(h.config.chargeReconcileDelayMs + 1);
    await reconcile([first.body.id]);
    assert.equal(fake.byReference(first.body.id).length, 1, 'the batch of the reference was found, not sent again');
    assert.equal((await read(first.body.id)).status, 'processing');
    await fake.finalize(fake.byReference(first.body.id)[0].id);
    assert.equal((await read(first.body.id)).status, 'completed');
  });

  test('a batch the provider refuses (no balance at the origin account) is rejected at once and released', async () => {
    const before = await balance(co, 'COP', 'live');
    const kept = fake.balanceInCents;
    fake.balanceInCents = 0;
    try {
      const res = await cashout({ amount: 3000 });
      assert.equal(res.status, 200, res.raw);
      assert.equal(res.body.status, 'rejected');
      assert.match(res.body.remarks, /^REFUSED: EXC_008/);
      assert.equal((await balance(co, 'COP', 'live')).available, before.available);
      assert.equal(fake.byReference(res.body.id).length, 0);
    } finally {
      fake.balanceInCents = kept;
    }
  });

  test('what the provider does not offer is refused before anything is recorded', async () => {
    const count = async () =>
      Number(
        (
          await h.runtime.deps.database.db
            .selectFrom('cashouts')
            .select((eb) => eb.fn.countAll<string>().as('n'))
            .where('company_id', '=', co.company.id)
            .executeTakeFirstOrThrow()
        ).n,
      );
    const n = await count();
    expectValidation(await cashout({ method: 'TURBO' }), 'method');
    const noEmail = await liveCustomer(co, 'Sinmail', { email: null });
    const itsAccount = await createAccount(h, co, noEmail, { authorization: false, account_number: '5500998877' }, { env: 'live' });
    expectValidation(await cashout({ customer_id: noEmail, account_id: itsAccount }), 'customer_id');
    // A sandbox trigger with a live key is bad input, whatever the rails.
    expectValidation(await cashout({ test_scenario: 'rejected' }), 'test_scenario');
    assert.equal(await count(), n);
  });

  describe('payout events are hints', () => {
    test('an event is never settled from its own status: the provider is asked (read back) first', async () => {
      const { id, tx } = await processing(11000);
      // Signed with the company's secret (a leaked secret, or the provider's own event of another
      // moment), but the provider still has the transaction PENDING.
      const approved = resign(
        fake.eventOf(tx, (e) => {
          (e.data.transaction as { status: string }).status = 'APPROVED';
        }),
      );
      assert.equal((await post(eventsPath, approved)).status, 200);
      assert.equal((await read(id)).status, 'processing', 'the provider says PENDING: nothing paid out');
      const failed = resign(
        fake.eventOf(tx, (e) => {
          (e.data.transaction as { status: string }).status = 'FAILED';
        }),
      );
      assert.equal((await post(eventsPath, failed)).status, 200);
      assert.equal((await read(id)).status, 'processing', 'nor rejected');
      await fake.finalize(tx.id);
      assert.equal((await read(id)).status, 'completed', 'the provider’s own word settles it');
    });

    test('the read-back must match: the provider’s amount other than the cash-out’s settles nothing (recorded)', async () => {
      const { id, tx } = await processing(12000);
      tx.amountInCents = 100; // what the provider holds under that transaction is not our amount
      await fake.finalize(tx.id);
      assert.equal((await read(id)).status, 'processing');
      assert.match((await recorded(tx.id)).at(-1)!.problem ?? '', /amount 100 is not the recorded 1200000/);
      tx.amountInCents = 1_200_000;
      assert.equal(await fake.postEvent(tx), 200);
      assert.equal((await read(id)).status, 'completed');
    });

    test('the read-back must match: a transaction other than the one recorded on the cash-out settles nothing', async () => {
      const { id, tx } = await processing(12500);
      // The provider's batch of this reference now holds another transaction id.
      const other = { ...tx, id: '11111111-1111-4111-8111-111111111111' };
      fake.transactions.delete(tx.id);
      fake.transactions.set(other.id, other);
      await fake.finalize(other.id, { event: false });
      assert.equal(await fake.postBatchEvent(fake.batchOf(other)), 200);
      assert.equal((await read(id)).status, 'processing');
      assert.match((await recorded(fake.batchOf(other).id)).at(-1)!.problem ?? '', /is not the one recorded/);
    });

    test('stale and future events are refused (401) and recorded; the timestamp is in milliseconds', async () => {
      const { id, tx } = await processing(13000);
      await fake.finalize(tx.id, { event: false });
      const now = h.clock.now().getTime();
      const at = (timestamp: number) => resign({ ...fake.eventOf(tx), timestamp });
      expectError(await post(eventsPath, at(now - 3_601_000)), 401, 'unauthenticated');
      expectError(await post(eventsPath, at(now + 3_600_000)), 401, 'unauthenticated');
      expectError(await post(eventsPath, at(Math.floor(now / 1000))), 401, 'unauthenticated'); // seconds: 1970 in ms
      assert.equal((await read(id)).status, 'processing');
      assert.deepEqual(
        (await recorded(tx.id)).map((r) => r.problem),
        ['refused: older than an hour', 'refused: from the future', 'refused: older than an hour'],
      );
      assert.equal((await post(eventsPath, at(now - 60_000))).status, 200, 'a minute old: accepted');
      assert.equal((await read(id)).status, 'completed');
    });

    test('an event type the connector does not use is acknowledged (200), recorded and ignored', async () => {
      const event = fake.otherEventOf('account.updated', { account: { id: fake.originAccountId, status: 'ACTIVE' } }, [
        'account.id',
        'account.status',
      ]);
      const res = await post(eventsPath, event);
      assert.equal(res.status, 200, res.raw);
      const rows = await h.runtime.deps.database.db
        .selectFrom('connector_events')
        .select(['verified', 'problem', 'company_id'])
        .where('event', '=', 'account.updated')
        .execute();
      assert.deepEqual(rows, [{ verified: true, problem: 'ignored event type', company_id: co.company.id }]);
    });

    test('a read-back that fails is 503 (the provider sends the event again), recorded; the retry settles', async () => {
      const { id, tx } = await processing(14000);
      await fake.finalize(tx.id, { event: false });
      fake.failNext('find_payout', '5xx');
      const res = await post(eventsPath, fake.eventOf(tx), fake.eventOf(tx).signature.checksum);
      expectError(res, 503, 'service_unavailable');
      assert.equal((await read(id)).status, 'processing');
      assert.equal((await recorded(tx.id)).at(-1)!.problem, 'read back unavailable');
      assert.equal(await fake.postEvent(tx), 200);
      assert.equal((await read(id)).status, 'completed');
    });

    test('each company’s own URL and secret: another company’s URL cannot settle this company’s cash-out', async () => {
      const { id, tx } = await processing(15000);
      await fake.finalize(tx.id, { event: false });
      // Another company, on its own provider account (its own payouts events secret).
      const mallory = await h.company('Otra Dispersora SAS');
      const theirs = await mallory.req({
        method: 'PUT',
        url: '/v1/connectors/wompi',
        env: 'live',
        body: { ...paymentKeys(), ...payoutKeys(), payouts_events_secret: 'prod_events_mallory' },
      });
      assert.equal(theirs.status, 200, theirs.raw);
      const theirPath = new URL(theirs.body.payouts_events_url).pathname;
      assert.notEqual(theirPath, eventsPath);
      // This company's genuine event on the other URL: that company's secret does not verify it.
      expectError(await post(theirPath, fake.eventOf(tx)), 401);
      // Signed with the other company's own secret, naming this company's transaction: not theirs.
      assert.equal((await post(theirPath, resign(fake.eventOf(tx), 'prod_events_mallory'))).status, 200);
      assert.equal((await read(id)).status, 'processing');
      assert.deepEqual(
        (await recorded(tx.id)).map((r) => [r.company_id, r.verified, r.problem]),
        [
          [mallory.company.id, false, 'bad checksum'],
          [mallory.company.id, true, 'unknown payout'],
        ],
      );
      // An events URL that belongs to no connector.
      expectError(await post('/v1/rails/wompi/payout-events/cet_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA', fake.eventOf(tx)), 401);
      assert.equal(await fake.postEvent(tx), 200);
      assert.equal((await read(id)).status, 'completed');
    });

    test('the deprecated URL: the cash-out found by network id names the company, whose secret verifies; then read back', async () => {
      const { id, tx } = await processing(16000);
      const legacy = '/v1/rails/wompi/payout-events';
      const approved = resign(
        fake.eventOf(tx, (e) => {
          (e.data.transaction as { status: string }).status = 'APPROVED';
        }),
      );
      assert.equal((await post(legacy, approved)).status, 200);
      assert.equal((await read(id)).status, 'processing', 'read back: still PENDING at the provider');
      expectError(await post(legacy, resign(fake.eventOf(tx), 'prod_events_mallory')), 401);
      await fake.finalize(tx.id, { event: false });
      // The checksum in the X-Event-Checksum header only.
      const event = fake.eventOf(tx);
      const checksum = event.signature.checksum;
      event.signature.checksum = '';
      assert.equal((await post(legacy, event, checksum)).status, 200);
      assert.equal((await read(id)).status, 'completed');
    });
  });

  describe('sandbox balances never feed a provider payout', () => {
    test('a test environment cannot connect to the provider’s production (422)', async () => {
      const res = await co.req({
        method: 'PUT',
        url: '/v1/connectors/wompi',
        env: 'test',
        body: { ...paymentKeys(), ...payoutKeys(), provider_environment: 'production' },
      });
      expectValidation(res, 'provider_environment');
      assert.equal((await co.req({ url: '/v1/connectors/wompi', env: 'test' })).status, 404, 'nothing saved');
    });

    test('a live cash-out never draws on the test balance; a test cash-out reaches only the provider’s sandbox', async () => {
      const sbx = await h.company('Solo Pruebas SAS');
      const live = await sbx.req({ method: 'PUT', url: '/v1/connectors/wompi', env: 'live', body: { ...paymentKeys(), ...payoutKeys() } });
      assert.equal(live.status, 200, live.raw);
      // COP 1,500,000 collected in test (sandbox) and nothing in live.
      const p = await payer(h, sbx);
      const charge = await sbx.req({ url: '/v1/charges', body: chargeBody(p.customer, { card_id: p.card }, { amount: 1_500_000 }) });
      assert.equal(charge.body.status, 'paid', charge.raw);
      assert.equal((await balance(sbx, 'COP', 'test')).available, 1_500_000);
      assert.equal((await balance(sbx, 'COP', 'live')).available, 0);
      const liveCustomerId = await liveCustomer(sbx, 'Julia');
      const liveAccount = await createAccount(h, sbx, liveCustomerId, { authorization: false, account_number: '5500443322' }, { env: 'live' });
      const batches = fake.batches.size;
      expectError(
        await sbx.req({ url: '/v1/cashouts', env: 'live', body: { amount: 5000, customer_id: liveCustomerId, account_id: liveAccount } }),
        422,
        'insufficient_funds',
      );
      expectError(await sbx.req({ method: 'POST', url: '/v1/balances', env: 'live', body: { amount: 5000, account_id: liveAccount } }), 422);
      assert.equal(fake.batches.size, batches, 'nothing reached the provider');
      assert.equal((await balance(sbx, 'COP', 'test')).available, 1_500_000, 'the test balance untouched');
      // The test environment on the provider's sandbox (payouts only): its cash-outs go there, never to production.
      const test = await sbx.req({
        method: 'PUT',
        url: '/v1/connectors/wompi',
        env: 'test',
        body: {
          public_key: 'pub_test_sandbox01',
          private_key: 'prv_test_sandbox01',
          events_secret: 'test_events_sandbox01',
          integrity_secret: 'test_integrity_sandbox01',
          ...payoutKeys(sandboxFake),
          rails: ['payout'],
        },
      });
      assert.equal(test.status, 200, test.raw);
      assert.equal(test.body.provider_environment, 'sandbox');
      const testCustomer = await liveCustomer(sbx, 'Tomas', {}, 'test');
      const testAccount = await createAccount(h, sbx, testCustomer, { account_number: '5500667788' });
      const res = await sbx.req({ url: '/v1/cashouts', env: 'test', body: { amount: 20000, customer_id: testCustomer, account_id: testAccount } });
      assert.equal(res.status, 200, res.raw);
      assert.equal(res.body.status, 'processing', res.raw);
      assert.equal(sandboxFake.byReference(res.body.id).length, 1, 'the provider’s sandbox has it');
      assert.equal(fake.byReference(res.body.id).length, 0, 'production never saw it');
      assert.equal(fake.batches.size, batches);
    });
  });
});
