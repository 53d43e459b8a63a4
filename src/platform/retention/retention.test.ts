import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { sql, type RawBuilder, type Transaction } from 'kysely';
import type { DB } from '../db/schema.ts';
import { createHarness, ENGINE, type Company, type Harness } from '../../../test/harness.ts';
import { Receiver } from '../../../test/receiver.ts';
import { emitEvent } from '../outbox/outbox.ts';
import { prefixedId } from '../ids.ts';
import { retentionRules } from '../../modules/index.ts';
import { connectorEvents } from '../../modules/connectors/retention.ts';
import { cardTokens } from '../../modules/cards/retention.ts';
import { flowRuns } from '../../modules/flows/retention.ts';
import { approvalRequests, customerSessions, loginAttempts, loginCodes } from '../../modules/customer-session/retention.ts';
import { idempotencyBodies } from '../idempotency/retention.ts';
import { webhookRetention } from '../../modules/webhooks/retention.ts';
import { PINNED_PLAN, ruleStatement, runRetention, type BatchInput, type RetentionRule, type RunOptions } from './retention.ts';
import { RetentionSweeper, sweepers } from './sweeper.ts';
import { retentionSettings } from './settings.ts';
import '../../modules/cards/tables.ts';
import '../../modules/connectors/tables.ts';
import '../../modules/customer-session/tables.ts';
import '../../modules/flows/tables.ts';

/**
 * Retention (docs/operations.md "Retention"): each rule sweeps what is older than its window and
 * keeps what is younger, in batches that are each their own transaction. Time is the harness's
 * clock, moved forward; every sweep here is limited to this file's companies (the PostgreSQL test
 * database is shared with other files running at the same time).
 */

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

let h: Harness;
let co: Company;
let other: Company;
const companies = () => [co.company.id, other.company.id];
const db = () => h.runtime.deps.database.db;
const sweep = (rules: readonly RetentionRule[], opts: RunOptions = {}) => runRetention(h.runtime.deps, rules, { companies: companies(), ...opts });

before(async () => {
  h = await createHarness({ WEBHOOK_RETRY_SCHEDULE: '30s,2m,10m,30m,1h,3h,6h,12h,24h,48h,72h' });
  co = await h.company('Retención SAS');
  other = await h.company('Otra SAS');
});
after(() => h.close());

const count = async (table: string, where = sql``) =>
  Number(
    (await sql<{ n: bigint }>`SELECT count(*) AS n FROM ${sql.table(table)} WHERE company_id IN (${sql.join(companies())}) ${where}`.execute(db()))
      .rows[0].n,
  );

describe('settings', () => {
  test('defaults, 0 keeps forever, and the floors (events and deliveries at least 30 days)', () => {
    const d = retentionSettings({});
    assert.deepEqual(
      {
        enabled: d.enabled,
        intervalMs: d.intervalMs,
        runBudgetMs: d.runBudgetMs,
        batchSize: d.batchSize,
        idempotencyBodyHours: d.idempotencyBodyHours,
        eventsDays: d.eventsDays,
        webhookDeliveriesDays: d.webhookDeliveriesDays,
        flowRunsDays: d.flowRunsDays,
        expiredDays: d.expiredDays,
        connectorEventsDays: d.connectorEventsDays,
      },
      {
        enabled: true,
        intervalMs: 600_000,
        runBudgetMs: 20_000,
        batchSize: 500,
        idempotencyBodyHours: 24,
        eventsDays: 30,
        webhookDeliveriesDays: 30,
        flowRunsDays: 30,
        expiredDays: 1,
        connectorEventsDays: 30,
      },
    );
    assert.equal(retentionSettings({ RETENTION_EVENTS_DAYS: '0' }).eventsDays, 0);
    assert.equal(retentionSettings({ RETENTION_EVENTS_DAYS: '90' }).eventsDays, 90);
    assert.equal(retentionSettings({ RETENTION_ENABLED: 'false' }).enabled, false);
    assert.throws(() => retentionSettings({ RETENTION_EVENTS_DAYS: '7' }), /RETENTION_EVENTS_DAYS must be 0 \(keep forever\) or at least 30/);
    assert.throws(() => retentionSettings({ RETENTION_WEBHOOK_DELIVERIES_DAYS: '29' }), /at least 30/);
    assert.throws(() => retentionSettings({ RETENTION_BATCH_SIZE: '0' }), /RETENTION_BATCH_SIZE must be an integer >= 1/);
    assert.throws(() => retentionSettings({ RETENTION_ENABLED: 'maybe' }), /RETENTION_ENABLED must be true or false/);
  });
});

describe('idempotency: the stored response goes after RETENTION_IDEMPOTENCY_BODY_HOURS, the key stays', () => {
  test('an old body is dropped and a young one kept; a retry of the old key runs again, as after any window', async () => {
    const body = { first_name: 'Ana', last_name: 'Retenida', email: 'ana.retenida@example.com' };
    const first = await co.req({ url: '/v1/customers', body, idem: 'ret-old' });
    assert.equal(first.status, 200, first.raw);
    const replay = await co.req({ url: '/v1/customers', body, idem: 'ret-old' });
    assert.equal(replay.headers['idempotent-replayed'], 'true');
    assert.equal(replay.body.id, first.body.id);

    h.clock.advance(25 * HOUR);
    const young = await co.req({ url: '/v1/customers', body: { ...body, email: 'joven@example.com' }, idem: 'ret-young' });
    assert.equal(young.status, 200, young.raw);

    const report = await sweep([idempotencyBodies]);
    assert.equal(report.rules[0].rows, 1);
    const rows = await db()
      .selectFrom('idempotency_keys')
      .select(['key', 'status_code', 'response_body', 'fingerprint'])
      .where('company_id', 'in', companies())
      .orderBy('key')
      .execute();
    const byKey = Object.fromEntries(rows.map((r) => [r.key, r]));
    assert.equal(byKey['ret-old'].response_body, null, 'the old body is gone');
    assert.equal(byKey['ret-old'].status_code, 200, 'the key, its status and fingerprint stay');
    assert.ok(byKey['ret-old'].fingerprint);
    assert.ok(byKey['ret-young'].response_body, 'the young body is kept');

    // docs/platform.md: after the window the key runs again, and the new response is remembered.
    const again = await co.req({ url: '/v1/customers', body, idem: 'ret-old' });
    assert.equal(again.status, 200, again.raw);
    assert.equal(again.headers['idempotent-replayed'], undefined);
    assert.notEqual(again.body.id, first.body.id, 'a new customer: the operation ran again');
    const remembered = await co.req({ url: '/v1/customers', body, idem: 'ret-old' });
    assert.equal(remembered.headers['idempotent-replayed'], 'true');
    assert.equal(remembered.body.id, again.body.id);
    // A day later both answers are old: dropped. A different request under the old key runs (no 409).
    h.clock.advance(25 * HOUR);
    assert.equal((await sweep([idempotencyBodies])).rows, 2);
    const different = await co.req({ url: '/v1/customers', body: { ...body, first_name: 'Otra' }, idem: 'ret-old' });
    assert.equal(different.status, 200, different.raw);
    assert.equal(different.body.first_name, 'Otra');
    assert.equal((await sweep([idempotencyBodies])).rows, 0, 'a fresh answer is kept');
  });
});

describe('webhooks: finished deliveries and their attempts after 30 days, then their events', () => {
  const ok = new Receiver();
  const flaky = new Receiver();
  before(async () => {
    await ok.start();
    await flaky.start();
  });
  after(async () => {
    await ok.close();
    await flaky.close();
  });

  async function emit(type: string): Promise<string> {
    return db()
      .transaction()
      .execute(
        async (trx) =>
          (await emitEvent({ companyId: co.company.id, environment: 'test', db: trx, deps: h.runtime.deps }, type, { id: 'obj_1' }, h.clock.now()))
            .id,
      );
  }
  const deliveries = async (webhookId: string) =>
    (await co.req({ url: `/v1/webhooks/${webhookId}/deliveries?per_page=100` })).body.data as {
      id: string;
      event_id: string;
      status: string;
      attempt_history: unknown[];
    }[];

  test('a pending delivery is never swept, nor its event; once it is finished and old, both go', async () => {
    const good = (await co.req({ url: '/v1/webhooks', body: { name: 'ok', url: ok.url, events: ['payment.approved'] } })).body.data.id;
    flaky.mode = { status: 500 };
    const bad = (await co.req({ url: '/v1/webhooks', body: { name: 'flaky', url: flaky.url, events: ['payment.approved'] } })).body.data.id;

    const oldEvent = await emit('payment.approved');
    const lonely = await emit('charge.paid'); // no webhook wants it: no delivery
    await h.deliverWebhooks();
    const [oldGood] = await deliveries(good);
    assert.equal(oldGood.status, 'succeeded');
    assert.equal((await deliveries(bad))[0].status, 'pending');

    h.clock.advance(31 * DAY);
    const youngEvent = await emit('payment.approved');
    await h.deliverWebhooks();
    const attemptsBefore = await count('webhook_attempts', sql`AND delivery_id = ${oldGood.id}`);
    assert.equal(attemptsBefore, 1);

    const first = await sweep(webhookRetention);
    assert.deepEqual(
      first.rules.map((r) => [r.rule, r.rows]),
      [
        ['webhooks.deliveries', 1],
        ['events', 1],
      ],
    );
    assert.deepEqual(
      (await deliveries(good)).map((d) => d.event_id),
      [youngEvent],
      'the old succeeded delivery went, the young one stays',
    );
    assert.equal(await count('webhook_attempts', sql`AND delivery_id = ${oldGood.id}`), 0, 'with its attempts');
    const pending = await deliveries(bad);
    assert.deepEqual(
      pending.map((d) => [d.event_id, d.status]).sort(),
      [
        [oldEvent, 'pending'],
        [youngEvent, 'pending'],
      ].sort(),
    );
    assert.equal(pending.find((d) => d.event_id === oldEvent)!.attempt_history.length, 2, 'a pending delivery keeps its attempts');
    assert.equal((await co.req({ url: `/v1/events/${oldEvent}` })).status, 200, 'its event stays while a delivery needs it');
    assert.equal((await co.req({ url: `/v1/events/${lonely}` })).status, 404, 'an old event without deliveries goes');

    flaky.mode = { status: 200 };
    h.clock.advance(60_000); // the young delivery's second attempt is due 30 s (+ jitter) after its event
    await h.deliverWebhooks();
    assert.deepEqual(
      (await deliveries(bad)).map((d) => d.status),
      ['succeeded', 'succeeded'],
    );
    const second = await sweep(webhookRetention);
    assert.deepEqual(
      second.rules.map((r) => [r.rule, r.rows]),
      [
        ['webhooks.deliveries', 1],
        ['events', 1],
      ],
    );
    assert.equal((await co.req({ url: `/v1/events/${oldEvent}` })).status, 404);
    const listed = await co.req({ url: '/v1/events?per_page=100' });
    assert.deepEqual(
      listed.body.data.map((e: { id: string }) => e.id),
      [youngEvent],
      'GET /v1/events keeps everything younger than 30 days',
    );
    assert.deepEqual(
      (await deliveries(bad)).map((d) => d.event_id),
      [youngEvent],
    );
  });
});

describe('the other rules: old rows go, young ones stay', () => {
  test('finished flow runs after 30 days; a pending run never', async () => {
    const now = h.clock.now().getTime();
    const run = (status: 'pending' | 'succeeded' | 'failed', at: number) => ({
      company_id: co.company.id,
      environment: 'test' as const,
      id: prefixedId('flrun', at),
      flow_id: 'flow_retention',
      event_id: prefixedId('evt', at),
      event_type: 'payment.approved',
      payload: '{}',
      status,
      attempts: 1,
      last_status_code: null,
      last_error: null,
      next_attempt_at: null,
      created_at: new Date(at),
      updated_at: new Date(at),
      completed_at: status === 'pending' ? null : new Date(at),
    });
    const rows = [run('succeeded', now - 31 * DAY), run('failed', now - 40 * DAY), run('pending', now - 35 * DAY), run('succeeded', now - 29 * DAY)];
    await db().insertInto('flow_runs').values(rows).execute();
    const report = await sweep([flowRuns]);
    assert.equal(report.rows, 2);
    const left = await db().selectFrom('flow_runs').select('id').where('company_id', 'in', companies()).orderBy('id').execute();
    assert.deepEqual(
      left.map((r) => r.id),
      [rows[2].id, rows[3].id].sort(),
    );
  });

  test('card tokens a day after they expired, used or not', async () => {
    const now = h.clock.now().getTime();
    const token = (expiresAt: number, used: boolean) => ({
      company_id: co.company.id,
      environment: 'test' as const,
      id: prefixedId('tok', expiresAt - 10 * 60_000),
      brand: 'visa',
      last4: '4242',
      exp_month: 12,
      exp_year: 2040,
      holder_name: 'ANA',
      fingerprint: 'fp',
      outcome_class: 'approved',
      created_at: new Date(expiresAt - 10 * 60_000),
      expires_at: new Date(expiresAt),
      used_at: used ? new Date(expiresAt - 60_000) : null,
      card_id: null,
    });
    const rows = [token(now - 2 * DAY, true), token(now - 3 * DAY, false), token(now - HOUR, false), token(now + 5 * 60_000, false)];
    await db().insertInto('card_tokens').values(rows).execute();
    assert.equal((await sweep([cardTokens])).rows, 2);
    const left = await db().selectFrom('card_tokens').select('id').where('company_id', 'in', companies()).orderBy('id').execute();
    assert.deepEqual(
      left.map((r) => r.id),
      [rows[2].id, rows[3].id].sort(),
    );
  });

  test('payer sessions, login codes, login attempts and approval requests a day after they stopped counting', async () => {
    const now = h.clock.now().getTime();
    const base = { company_id: co.company.id, environment: 'test' as const };
    const session = (createdAt: number) => ({
      ...base,
      id: prefixedId('cses', createdAt),
      customer_id: 'cus_x',
      key_id: 'key_x',
      token_hash: `hash-${createdAt}-${Math.random()}`,
      expires_at: new Date(createdAt + 7 * DAY),
      revoked_at: null,
      created_at: new Date(createdAt),
    });
    const sessions = [session(now - 9 * DAY), session(now - 7 * DAY - HOUR), session(now - DAY)];
    await db().insertInto('customer_sessions').values(sessions).execute();
    const code = (createdAt: number) => ({
      ...base,
      id: prefixedId('lc', createdAt),
      customer_id: 'cus_x',
      phone: '+573001112233',
      code_hash: 'h',
      ip: '10.0.0.1',
      expires_at: new Date(createdAt + HOUR),
      used_at: null,
      created_at: new Date(createdAt),
    });
    // The second is long expired but still counts for the 24 h caps on codes sent.
    const codes = [code(now - 2 * DAY), code(now - 20 * HOUR), code(now - 10 * 60_000)];
    await db().insertInto('customer_login_codes').values(codes).execute();
    const attempt = (at: number) => ({ ...base, phone: '+573001112233', kind: 'request' as const, at: new Date(at) });
    await db()
      .insertInto('customer_login_attempts')
      .values([attempt(now - 3 * DAY), attempt(now - 2 * DAY), attempt(now - HOUR)])
      .execute();
    const request = (at: number) => ({
      ...base,
      charge_id: prefixedId('ch', at),
      customer_id: 'cus_x',
      phone: '+573001112233',
      provider_message_id: null,
      created_at: new Date(at),
    });
    const requests = [request(now - 2 * DAY), request(now - 60_000)];
    await db().insertInto('session_approval_requests').values(requests).execute();

    const report = await sweep([customerSessions, loginCodes, loginAttempts, approvalRequests]);
    assert.deepEqual(
      report.rules.map((r) => [r.rule, r.rows]),
      [
        ['session.sessions', 1],
        ['session.login_codes', 1],
        ['session.login_attempts', 2],
        ['session.approval_requests', 1],
      ],
    );
    const ids = async (table: 'customer_sessions' | 'customer_login_codes') =>
      (await db().selectFrom(table).select('id').where('company_id', 'in', companies()).orderBy('id').execute()).map((r) => r.id);
    assert.deepEqual(await ids('customer_sessions'), [sessions[1].id, sessions[2].id].sort(), 'expired an hour ago: kept for now');
    assert.deepEqual(await ids('customer_login_codes'), [codes[1].id, codes[2].id].sort());
    assert.equal(await count('customer_login_attempts'), 1);
    const left = await db().selectFrom('session_approval_requests').select('charge_id').where('company_id', 'in', companies()).execute();
    assert.deepEqual(
      left.map((r) => r.charge_id),
      [requests[1].charge_id],
    );
  });

  test('connector events after 30 days, except the newest verified one of each connector', async () => {
    const now = h.clock.now().getTime();
    const event = (company: Company, at: number, verified: boolean) => ({
      id: prefixedId('cev', at),
      connector: 'wompi',
      company_id: company.company.id,
      environment: 'test' as const,
      event: 'transaction.updated',
      reference: 'ch_x',
      provider_id: 'w_1',
      provider_status: 'APPROVED',
      verified,
      problem: verified ? null : 'bad checksum',
      received_at: new Date(at),
    });
    const rows = [
      event(co, now - 60 * DAY, true), // older verified: goes
      event(co, now - 45 * DAY, true), // the newest verified of co's connector: stays (health shows it)
      event(co, now - 40 * DAY, false), // refused: goes
      event(co, now - DAY, false), // young: stays
      event(other, now - 50 * DAY, true), // the newest verified of other's connector: stays
    ];
    await db().insertInto('connector_events').values(rows).execute();
    assert.equal((await sweep([connectorEvents])).rows, 2);
    const left = await db().selectFrom('connector_events').select('id').where('company_id', 'in', companies()).orderBy('id').execute();
    assert.deepEqual(
      left.map((r) => r.id),
      [rows[1].id, rows[3].id, rows[4].id].sort(),
    );
  });
});

describe('batches', () => {
  async function oldConnectorEvents(n: number): Promise<void> {
    const now = h.clock.now().getTime();
    await db()
      .insertInto('connector_events')
      .values(
        Array.from({ length: n }, (_, i) => ({
          id: prefixedId('cev', now - 40 * DAY + i),
          connector: 'wompi',
          company_id: other.company.id,
          environment: 'test' as const,
          event: null,
          reference: null,
          provider_id: null,
          provider_status: null,
          verified: false,
          problem: 'bad checksum',
          received_at: new Date(now - 40 * DAY + i),
        })),
      )
      .execute();
  }
  const refused = () => count('connector_events', sql`AND NOT verified AND received_at < ${new Date(h.clock.now().getTime() - 30 * DAY)}`);

  test('batch size 2 with 5 rows: three batches, each committed on its own', async () => {
    await oldConnectorEvents(5);
    assert.equal(await refused(), 5);
    const seen: [number, number][] = [];
    const report = await sweep([connectorEvents], {
      batchSize: 2,
      // After each batch, from outside it: its rows are already gone (committed).
      onBatch: async (_rule, rows) => {
        seen.push([rows, await refused()]);
      },
    });
    assert.deepEqual(seen, [
      [2, 3],
      [2, 1],
      [1, 0],
    ]);
    assert.equal(report.rows, 5);
    assert.equal(report.complete, true);
    assert.equal(report.rules[0].batches, 3);
  });

  test(
    'the embedded engine vacuums the tables a run deleted from (it has no autovacuum)',
    { skip: ENGINE !== 'pglite' && 'PostgreSQL vacuums by itself' },
    async () => {
      const vacuums = async () =>
        Number(
          (await sql<{ n: bigint | number }>`SELECT vacuum_count AS n FROM pg_stat_user_tables WHERE relname = 'connector_events'`.execute(db()))
            .rows[0].n,
        );
      const before = await vacuums();
      await oldConnectorEvents(2);
      assert.equal((await sweep([connectorEvents, cardTokens])).rows, 2);
      assert.equal(await vacuums(), before + 1);
      assert.equal((await sweep([connectorEvents])).rows, 0);
      assert.equal(await vacuums(), before + 1, 'nothing swept, nothing vacuumed');
    },
  );

  test('the time budget ends a run between batches; the next run goes on', async () => {
    await oldConnectorEvents(5);
    let now = 0;
    const cut = await sweep([connectorEvents], {
      batchSize: 2,
      budgetMs: 1_500,
      elapsed: () => now,
      onBatch: () => {
        now += 1_000; // each batch "takes" a second
      },
    });
    assert.equal(cut.rows, 4, 'two batches fit in 1.5 s');
    assert.equal(cut.complete, false);
    assert.equal(cut.rules[0].state, 'cut');
    assert.equal(await refused(), 1);
    const rest = await sweep([connectorEvents], { batchSize: 2 });
    assert.equal(rest.rows, 1);
    assert.equal(rest.complete, true);
  });

  test(
    'another process sweeping (the lock taken): the run stops at once and sweeps nothing',
    { skip: ENGINE !== 'postgres' && 'one session on the embedded engine' },
    async () => {
      await oldConnectorEvents(3);
      await db()
        .transaction()
        .execute(async (trx) => {
          await sql`SELECT pg_advisory_xact_lock(hashtextextended('recaudo:retention', 0))`.execute(trx);
          const report = await sweep([connectorEvents, cardTokens]);
          assert.equal(report.busy, true);
          assert.equal(report.rows, 0);
          assert.deepEqual(
            report.rules.map((r) => r.state),
            ['busy', 'skipped'],
          );
        });
      assert.equal((await sweep([connectorEvents])).rows, 3);
    },
  );
});

describe('the periodic sweep', () => {
  test('runs one interval after start, then one interval after each complete run', async () => {
    const now = h.clock.now().getTime();
    await db()
      .insertInto('card_tokens')
      .values({
        company_id: other.company.id,
        environment: 'test',
        id: prefixedId('tok', now - 3 * DAY),
        brand: 'visa',
        last4: '1111',
        exp_month: 1,
        exp_year: 2040,
        holder_name: 'X',
        fingerprint: 'fp',
        outcome_class: 'approved',
        created_at: new Date(now - 3 * DAY),
        expires_at: new Date(now - 3 * DAY + 600_000),
        used_at: null,
        card_id: null,
      })
      .execute();
    let time = 1_000_000;
    const sweeper = new RetentionSweeper(h.runtime.deps, [cardTokens], () => time);
    sweeper.onlyCompanies = companies();
    const interval = h.config.retention.intervalMs;
    assert.equal(sweeper.dueAt, 1_000_000 + interval);
    await sweeper.tick();
    const last = () => sweeper.last;
    assert.equal(last(), null, 'not due yet');
    time += interval;
    await sweeper.tick();
    assert.equal(last()?.rows, 1);
    assert.equal(last()?.complete, true);
    assert.equal(sweeper.dueAt, time + interval);
    assert.ok(sweepers.get(h.runtime.deps), 'every runtime registers its sweeper');
  });
});

describe('every sweep reads an index', () => {
  const explain = async (trx: Transaction<DB>, statement: RawBuilder<unknown>) =>
    (await sql<{ 'QUERY PLAN': string }>`EXPLAIN ${statement}`.execute(trx)).rows.map((r) => r['QUERY PLAN']).join('\n');

  /**
   * What is wrong with how a rule reads its batch, or null: the whole statement scans no table, and
   * its batch is read through an index of the rule's table that leads with the rule's `order` column
   * (a scan of another index that merely contains the column would walk the whole index).
   */
  async function problem(trx: Transaction<DB>, rule: RetentionRule, batch: BatchInput): Promise<string | null> {
    const statement = await explain(trx, ruleStatement(rule, batch));
    if (/Seq Scan/.test(statement)) return `${rule.name} scans a table:\n${statement}`;
    const select = await explain(trx, rule.select(batch));
    const used = [...select.matchAll(/Index (?:Only )?Scan(?: Backward)? (?:using|on) (\w+)/g)].map((m) => m[1]);
    const { rows } = await sql<{ index: string; table: string; leading: string }>`
      SELECT c.relname AS index, t.relname AS table, a.attname AS leading
      FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_class t ON t.oid = i.indrelid
      JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = i.indkey[0]
      WHERE c.relname IN (${sql.join(used.length ? used : [''])})`.execute(trx);
    if (rows.some((r) => r.table === rule.table && r.leading === rule.order)) return null;
    return `${rule.name} reads no index of ${rule.table} leading with ${rule.order}:\n${select}`;
  }

  test('each rule reads its batch through an index that leads with its order column (EXPLAIN under the plan every batch is pinned to)', async () => {
    const cutoff = h.clock.now();
    const failures: string[] = [];
    await db()
      .transaction()
      .execute(async (trx) => {
        await sql`SELECT ${PINNED_PLAN}`.execute(trx); // as every batch runs
        for (const rule of retentionRules) {
          // The first batch, and a later one (after a cursor of the column's type).
          const cursorValue = ['id', 'charge_id'].includes(rule.order) ? 'zzz' : cutoff;
          for (const after of [null, cursorValue]) {
            const found = await problem(trx, rule, { cutoff, limit: 500, after });
            if (found) failures.push(found);
          }
        }
        // The check itself catches a batch read in the order of a column no index leads with.
        const unindexed: RetentionRule = {
          ...cardTokens,
          name: 'cards.by_holder',
          order: 'holder_name',
          select: (b) => sql`SELECT ctid, holder_name AS cursor FROM card_tokens
            WHERE holder_name < 'M' ORDER BY holder_name LIMIT ${b.limit} FOR UPDATE SKIP LOCKED`,
        };
        assert.match((await problem(trx, unindexed, { cutoff, limit: 500, after: null })) ?? '', /cards\.by_holder/);
      });
    assert.deepEqual(failures, []);
  });
});
