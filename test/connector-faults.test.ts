// Fault tests of the Wompi connector (issue 13), on PostgreSQL only: an API process and a worker
// run as real child processes against the local fake of the provider. A card charge is created
// in live while the provider's answer is held and the API process is killed (SIGKILL), and while
// every database session is terminated mid-call. Afterwards the same x-idempotency is retried:
// one charge, one provider transaction under the charge id, paid once by the provider's event,
// credited once. Each scenario prints one line `FAULT-SUMMARY {...}`.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import {
  call,
  Cluster,
  createFaultDatabase,
  idOf,
  ok,
  report,
  ROOT,
  SKIP_UNLESS_POSTGRES,
  until,
  type Answer,
  type FaultDatabase,
} from './fault-harness.ts';
import { FakeWompi } from './fakes/wompi-server.ts';

describe('connector fault tests: the Wompi card rail under SIGKILL and lost sessions (issue 13)', { skip: SKIP_UNLESS_POSTGRES }, () => {
  let db: FaultDatabase;
  let cluster: Cluster;
  let fake: FakeWompi;
  let liveKey = '';
  let companyId = '';
  let customerId = '';
  let cardId = '';

  const api = () => cluster.apis[0];

  async function postOk(url: string, body: unknown, key: string, timeoutMs = 60_000): Promise<Answer> {
    let last: Answer | undefined;
    await until(
      async () => {
        last = await call(api(), liveKey, 'POST', url, { body, idem: key, timeoutMs: 20_000 });
        return ok(last);
      },
      timeoutMs,
      500,
    );
    if (!last || !ok(last)) throw new Error(`POST ${url} (${key}): ${last?.status} ${JSON.stringify(last?.body)}`);
    return last;
  }

  const providerTransactions = (reference: string) => [...fake.transactions.values()].filter((t) => t.reference === reference);

  async function liveAvailable(): Promise<bigint> {
    const rows = await db.query<{ balance: string }>(
      `SELECT balance FROM ledger_accounts WHERE company_id = $1 AND environment = 'live' AND kind = 'company_available' AND currency = 'COP'`,
      [companyId],
    );
    return rows.length ? BigInt(rows[0].balance) : 0n;
  }

  async function paidEvents(chargeId: string): Promise<number> {
    const rows = await db.query<{ n: string }>(
      `SELECT count(*) AS n FROM events WHERE company_id = $1 AND type = 'charge.paid' AND data->>'id' = $2`,
      [companyId, chargeId],
    );
    return Number(rows[0].n);
  }

  /** The provider approves the charge's one transaction and posts its signed event; the charge ends paid. */
  async function approveAtProvider(chargeId: string): Promise<void> {
    const [tx] = providerTransactions(chargeId);
    await until(async () => (await fake.finalize(tx.id)) && (await chargeStatus(chargeId)) === 'paid', 30_000, 500);
  }

  async function chargeStatus(chargeId: string): Promise<string | undefined> {
    return (await db.query<{ status: string }>(`SELECT status FROM charges WHERE id = $1`, [chargeId]))[0]?.status;
  }

  before(
    async () => {
      fake = await new FakeWompi({
        publicKey: 'pub_prod_fault0001',
        privateKey: 'prv_prod_fault0001',
        eventsSecret: 'prod_events_fault0001',
        integritySecret: 'prod_integrity_fault0001',
      }).start();
      db = await createFaultDatabase();
      cluster = new Cluster(db);
      await cluster.start({ apis: 1, env: { WOMPI_PRODUCTION_URL: fake.url, CONNECTOR_POLL_AFTER_MS: '1500', CONNECTOR_SETTINGS_TTL_MS: '0' } });
      fake.eventsUrl = `${api().base}/v1/rails/wompi/events`;
      const res = spawnSync(
        process.execPath,
        ['--import', 'tsx', 'src/cli/main.ts', 'companies', 'create', '--name', 'Conector Fallas SAS', '--json'],
        {
          cwd: ROOT,
          env: { ...cluster.env, LOG_LEVEL: 'warn' },
          encoding: 'utf8',
          timeout: 90_000,
        },
      );
      assert.equal(res.status, 0, res.stderr);
      const out = JSON.parse(res.stdout.trim().split('\n').filter(Boolean).pop()!) as { company: { id: string }; keys: { live: string } };
      liveKey = out.keys.live;
      companyId = out.company.id;
      const connected = await call(api(), liveKey, 'PUT', '/v1/connectors/wompi', {
        body: { public_key: fake.publicKey, private_key: fake.privateKey, events_secret: fake.eventsSecret, integrity_secret: fake.integritySecret },
      });
      assert.equal(connected.status, 200, JSON.stringify(connected.body));
      customerId = idOf(await postOk('/v1/customers', { first_name: 'Ana', last_name: 'Fallas', email: 'ana@fallas.test' }, 'setup-customer'))!;
      const card = await postOk(
        '/v1/cards',
        {
          card_number: '4242424242424242',
          expiration_month: 12,
          expiration_year: new Date().getUTCFullYear() + 3,
          cvv: '123',
          holder_name: 'Ana Fallas',
          customer_id: customerId,
          authorization: true,
        },
        'setup-card',
      );
      cardId = idOf(card)!;
    },
    { timeout: 240_000 },
  );

  after(
    async () => {
      await cluster?.stop();
      await fake?.close();
      await db?.drop();
    },
    { timeout: 60_000 },
  );

  const chargeBody = { amount: 64000.25, title: 'Pedido en falla', customer_id: '', card_id: '' };

  test('SIGKILL while the provider holds its answer: the retry finds the same transaction, paid once', { timeout: 180_000 }, async () => {
    const before = await liveAvailable();
    fake.failNext('create_transaction', 'hold');
    const key = 'fault-kill-1';
    const body = { ...chargeBody, customer_id: customerId, card_id: cardId };
    const transactionsBefore = fake.transactions.size;
    const inFlight = call(api(), liveKey, 'POST', '/v1/charges', { body, idem: key, timeoutMs: 60_000 });
    assert.ok(await until(() => fake.transactions.size > transactionsBefore, 20_000, 20), 'the provider holds the transaction');
    await api().kill('SIGKILL');
    await cluster.worker.kill('SIGKILL');
    const lost = await inFlight;
    assert.equal(lost.status, 0, 'the caller got no answer');
    await cluster.ensureRunning();
    fake.eventsUrl = `${api().base}/v1/rails/wompi/events`;
    const retried = await postOk('/v1/charges', body, key);
    const chargeId = idOf(retried)!;
    assert.ok(['processing', 'paid'].includes(retried.body.status), JSON.stringify(retried.body));
    assert.equal(providerTransactions(chargeId).length, 1, 'one provider transaction under the charge id');
    const again = await postOk('/v1/charges', body, key);
    assert.equal(idOf(again), chargeId, 'the same key answers the same charge');
    await approveAtProvider(chargeId);
    await fake.postEvent(providerTransactions(chargeId)[0]); // a duplicate event
    assert.equal(await paidEvents(chargeId), 1);
    assert.equal(await liveAvailable(), before + 6_400_025n, 'credited once');
    const charges = await db.query(`SELECT id FROM charges WHERE company_id = $1 AND idempotency_key = $2`, [companyId, key]);
    assert.equal(charges.length, 1);
    report('connector-sigkill', { charge: chargeId, providerTransactions: providerTransactions(chargeId).length, paidEvents: 1 });
  });

  test('every database session terminated while the provider answers: one transaction, paid once', { timeout: 180_000 }, async () => {
    const before = await liveAvailable();
    fake.slowMs = 2_000;
    fake.failNext('create_transaction', 'slow');
    const key = 'fault-sessions-1';
    const body = { ...chargeBody, customer_id: customerId, card_id: cardId, amount: 12000 };
    const transactionsBefore = fake.transactions.size;
    const inFlight = call(api(), liveKey, 'POST', '/v1/charges', { body, idem: key, timeoutMs: 60_000 });
    assert.ok(await until(() => fake.transactions.size > transactionsBefore, 20_000, 20), 'the provider holds the transaction');
    const terminated = await db.terminateSessions();
    const first = await inFlight;
    const retried = ok(first) ? first : await postOk('/v1/charges', body, key);
    const chargeId = idOf(retried)!;
    assert.equal(providerTransactions(chargeId).length, 1, 'one provider transaction under the charge id');
    await approveAtProvider(chargeId);
    assert.equal(await paidEvents(chargeId), 1);
    assert.equal(await liveAvailable(), before + 1_200_000n, 'credited once');
    assert.deepEqual(cluster.unexpectedExits, [], 'no process died of it');
    report('connector-sessions', { charge: chargeId, terminated, firstStatus: first.status });
  });
});
