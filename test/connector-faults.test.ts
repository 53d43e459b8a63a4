// Fault tests of the Wompi connector (issue 13), on PostgreSQL only: an API process and a worker
// run as real child processes against the local fake of the provider. A card charge is created
// in live while the provider's answer is held and the API process is killed (SIGKILL), and while
// every database session is terminated mid-call. Afterwards the same x-idempotency is retried:
// one charge, one provider transaction under the charge id, paid once by the provider's event,
// credited once. A live cash-out whose batch answer is held while the API process and the worker
// are killed: the retry answers the same cash-out, the reconciler adopts the one batch by its
// reference, held once and paid out once. Each scenario prints one line `FAULT-SUMMARY {...}`.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import {
  approvingCardBody,
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
import { FakeWompiPayouts } from './fakes/wompi-payouts-server.ts';
import { bankId } from '../src/modules/banks/catalogue.ts';

describe(
  'connector fault tests: the Wompi card and payout rails under SIGKILL and lost sessions (issues 13, 14)',
  { skip: SKIP_UNLESS_POSTGRES },
  () => {
    let db: FaultDatabase;
    let cluster: Cluster;
    let fake: FakeWompi;
    let payouts: FakeWompiPayouts;
    let liveKey = '';
    let companyId = '';
    let customerId = '';
    let cardId = '';
    let eventsPath = '/v1/rails/wompi/events';

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
        `SELECT balance FROM ledger_account_balances WHERE company_id = $1 AND environment = 'live' AND kind = 'company_available' AND currency = 'COP'`,
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
        payouts = await new FakeWompiPayouts().start();
        payouts.deliver = async (event, checksum) => {
          const res = await fetch(`${api().base}/v1/rails/wompi/payout-events`, {
            method: 'POST',
            headers: { 'content-type': 'application/json', 'x-event-checksum': checksum },
            body: JSON.stringify(event),
          }).catch(() => null);
          return res?.status ?? 0;
        };
        db = await createFaultDatabase();
        cluster = new Cluster(db);
        await cluster.start({
          apis: 1,
          env: {
            WOMPI_PRODUCTION_URL: fake.url,
            WOMPI_PAYOUTS_PRODUCTION_URL: payouts.url,
            CONNECTOR_POLL_AFTER_MS: '1500',
            CONNECTOR_SETTINGS_TTL_MS: '0',
          },
        });
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
          body: {
            public_key: fake.publicKey,
            private_key: fake.privateKey,
            events_secret: fake.eventsSecret,
            integrity_secret: fake.integritySecret,
            payouts_api_key: payouts.apiKey,
            payouts_user_principal_id: payouts.principalId,
            payouts_events_secret: payouts.eventsSecret,
            payouts_account_id: payouts.originAccountId,
          },
        });
        assert.equal(connected.status, 200, JSON.stringify(connected.body));
        // The company's own events URL (its token), on the API's port, which a restart keeps.
        eventsPath = new URL(connected.body.events_url).pathname;
        fake.eventsUrl = `${api().base}${eventsPath}`;
        customerId = idOf(await postOk('/v1/customers', { first_name: 'Ana', last_name: 'Fallas', email: 'ana@fallas.test' }, 'setup-customer'))!;
        const card = await postOk('/v1/cards', approvingCardBody(customerId), 'setup-card');
        cardId = idOf(card)!;
      },
      { timeout: 240_000 },
    );

    after(
      async () => {
        await cluster?.stop();
        await fake?.close();
        await payouts?.close();
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
      fake.eventsUrl = `${api().base}${eventsPath}`;
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

    test(
      'SIGKILL while the payouts API holds its answer: the retry answers the same cash-out, one batch, paid out once',
      { timeout: 180_000 },
      async () => {
        // Money to pay out: a live card charge approved at the provider.
        const funding = await postOk('/v1/charges', { ...chargeBody, customer_id: customerId, card_id: cardId, amount: 90000 }, 'fund-payout');
        await approveAtProvider(idOf(funding)!);
        const beneficiary = idOf(
          await postOk(
            '/v1/customers',
            { first_name: 'Beto', last_name: 'Pagos', email: 'beto@fallas.test', document_type: 'CC', document_number: '1030405060' },
            'setup-beneficiary',
          ),
        )!;
        const accountId = idOf(
          await postOk(
            '/v1/accounts',
            { subtype: 'SAVINGS', bank_id: bankId('1007'), account_number: '5500112299', authorization: false, customer_id: beneficiary },
            'setup-account',
          ),
        )!;
        const before = await liveAvailable();
        payouts.failNext('create_payout', 'hold');
        const key = 'fault-payout-kill-1';
        const body = { amount: 25000.5, customer_id: beneficiary, account_id: accountId };
        const inFlight = call(api(), liveKey, 'POST', '/v1/cashouts', { body, idem: key, timeoutMs: 60_000 });
        assert.ok(await until(() => payouts.batches.size > 0, 20_000, 20), 'the payouts API holds the batch');
        await api().kill('SIGKILL');
        await cluster.worker.kill('SIGKILL');
        assert.equal((await inFlight).status, 0, 'the caller got no answer');
        await cluster.ensureRunning();
        const retried = await postOk('/v1/cashouts', body, key);
        const cashoutId = idOf(retried)!;
        assert.ok(['created', 'processing'].includes(retried.body.status), JSON.stringify(retried.body));
        assert.equal(await liveAvailable(), before - 2_500_050n, 'held once');
        // The reconciler (the worker) finds the batch by its reference instead of sending again.
        const status = async () => (await db.query<{ status: string }>(`SELECT status FROM cashouts WHERE id = $1`, [cashoutId]))[0]?.status;
        assert.ok(await until(async () => (await status()) === 'processing', 60_000, 250), 'processing once the batch is found');
        assert.equal(payouts.byReference(cashoutId).length, 1, 'one payout transaction under the cash-out id');
        assert.equal(payouts.count('create_payout'), 1, 'one batch created at the provider');
        const [tx] = payouts.byReference(cashoutId);
        await payouts.finalize(tx.id);
        assert.ok(await until(async () => (await status()) === 'completed', 30_000, 250));
        await payouts.postEvent(tx); // a duplicate event
        const completed = await db.query<{ n: string }>(
          `SELECT count(*) AS n FROM events WHERE company_id = $1 AND type = 'cashout.completed' AND data->>'id' = $2`,
          [companyId, cashoutId],
        );
        assert.equal(Number(completed[0].n), 1);
        const postings = await db.query<{ kind: string }>(
          `SELECT kind FROM ledger_transactions WHERE company_id = $1 AND source_type = 'cashout' AND source_id = $2 ORDER BY kind`,
          [companyId, cashoutId],
        );
        assert.deepEqual(
          postings.map((p) => p.kind),
          ['hold', 'payout'],
          'held once, paid out once',
        );
        assert.equal(await liveAvailable(), before - 2_500_050n);
        report('payout-sigkill', { cashout: cashoutId, batches: payouts.count('create_payout'), postings: postings.length });
      },
    );

    test(
      'SIGKILL of the API and the worker while the provider holds its refusal of a void: the refund fails once, the money back once',
      { timeout: 180_000 },
      async () => {
        const paid = await postOk('/v1/charges', { ...chargeBody, customer_id: customerId, card_id: cardId, amount: 33000 }, 'fund-refund');
        const chargeId = idOf(paid)!;
        await approveAtProvider(chargeId);
        const before = await liveAvailable();
        fake.voidBehaviour = 'refuse';
        fake.failNext('void_transaction', 'hold');
        const inFlight = call(api(), liveKey, 'POST', `/v1/charges/${chargeId}/refund`, { body: {}, idem: 'fault-refund-1', timeoutMs: 60_000 });
        assert.ok(await until(() => fake.calls.some((c) => c.operation === 'void_transaction'), 20_000, 20), 'the provider holds the void');
        await api().kill('SIGKILL');
        await cluster.worker.kill('SIGKILL');
        assert.equal((await inFlight).status, 0, 'the caller got no answer');
        await cluster.ensureRunning();
        fake.eventsUrl = `${api().base}${eventsPath}`;
        // The refund's reconciler (the worker) asks again: the provider refuses again, the refund ends.
        const refundStatus = async () =>
          (await db.query<{ status: string }>(`SELECT status FROM charge_refunds WHERE charge_id = $1`, [chargeId])).map((r) => r.status);
        assert.ok(await until(async () => (await refundStatus()).includes('failed'), 60_000, 250), 'the refund ends failed');
        fake.voidBehaviour = 'void';
        assert.deepEqual(await refundStatus(), ['failed'], 'one refund');
        assert.equal(await chargeStatus(chargeId), 'paid');
        assert.equal(await liveAvailable(), before, 'the money is back, once');
        const failedEvents = await db.query<{ n: string }>(
          `SELECT count(*) AS n FROM events WHERE company_id = $1 AND type = 'charge.refund_failed' AND data->>'id' = $2`,
          [companyId, chargeId],
        );
        assert.equal(Number(failedEvents[0].n), 1, 'charge.refund_failed once');
        report('connector-refund-refused', { charge: chargeId, refunds: 1, refundFailedEvents: 1 });
      },
    );

    test(
      'SIGKILL while the provider holds a PSE create: the reconciler adopts the one transaction; its event, read back, pays it once',
      { timeout: 180_000 },
      async () => {
        const payer = idOf(
          await postOk(
            '/v1/customers',
            {
              first_name: 'Pia',
              last_name: 'Banco',
              email: 'pia@fallas.test',
              document_type: 'CC',
              document_number: '1040506070',
              phone: '+573005556677',
            },
            'setup-pse-payer',
          ),
        )!;
        const before = await liveAvailable();
        fake.failNext('create_transaction', 'hold');
        const key = 'fault-pse-1';
        const body = {
          amount: 41000,
          bank_id: bankId('1007'),
          customer_id: payer,
          redirect_url: 'https://tienda.example/gracias',
          accept_terms: true,
        };
        const transactionsBefore = fake.transactions.size;
        const inFlight = call(api(), liveKey, 'POST', '/v1/charges/banklink', { body, idem: key, timeoutMs: 60_000 });
        assert.ok(await until(() => fake.transactions.size > transactionsBefore, 20_000, 20), 'the provider holds the transaction');
        await api().kill('SIGKILL');
        await cluster.worker.kill('SIGKILL');
        assert.equal((await inFlight).status, 0, 'the caller got no answer');
        await cluster.ensureRunning();
        fake.eventsUrl = `${api().base}${eventsPath}`;
        const retried = await postOk('/v1/charges/banklink', body, key);
        const chargeId = idOf(retried)!;
        assert.ok(await until(async () => (await chargeStatus(chargeId)) === 'processing', 60_000, 250), 'the reconciler adopts it');
        assert.equal(providerTransactions(chargeId).length, 1, 'one provider transaction under the charge id');
        const [tx] = providerTransactions(chargeId);
        // A forged copy of its event with another amount changes nothing; the real one pays it.
        assert.equal(await fake.postEvent({ ...tx, amount_in_cents: 100 }), 200);
        assert.equal(await chargeStatus(chargeId), 'processing');
        await approveAtProvider(chargeId);
        await fake.postEvent(providerTransactions(chargeId)[0]); // a duplicate event
        assert.equal(await paidEvents(chargeId), 1);
        assert.equal(await liveAvailable(), before + 4_100_000n, 'credited once');
        report('connector-pse-sigkill', { charge: chargeId, providerTransactions: 1, paidEvents: 1 });
      },
    );
  },
);
