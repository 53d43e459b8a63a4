import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHarness, type Company, type Harness } from '../../test/harness.ts';
import type { ServiceScope } from './context.ts';
import { CallDeadlineExceeded, jobOrigin, runOutsideCall, withDeadline } from './outside-call.ts';
import { applyTransition, StateMachine, TransitionNotAllowed } from './state-machine.ts';

type Door = 'open' | 'closed' | 'locked';
const DOOR = new StateMachine<Door, 'create' | 'close' | 'lock' | 'open'>('door', [
  { from: null, action: 'create', to: 'open', events: [] },
  { from: ['open'], action: 'close', to: 'closed', events: [] },
  { from: ['closed'], action: 'lock', to: 'locked', events: [] },
  { from: ['closed', null], action: 'open', to: 'open', events: [] },
]);

describe('the state-machine table', () => {
  test('find: creation rows only from nothing, null inside `from` matches an empty column, others refuse', () => {
    assert.equal(DOOR.find(null, 'create')?.to, 'open');
    assert.equal(DOOR.find('open', 'create'), null);
    assert.equal(DOOR.find(null, 'open')?.to, 'open', 'an empty status column may open');
    assert.equal(DOOR.find('locked', 'open'), null);
    assert.throws(() => DOOR.require('locked', 'open'), TransitionNotAllowed);
    assert.deepEqual(DOOR.sources('open'), ['closed']);
    assert.deepEqual(DOOR.statuses().sort(), ['closed', 'locked', 'open']);
  });

  test('a table with two rows for one (from, action) is refused when declared', () => {
    assert.throws(
      () =>
        new StateMachine<Door, 'close'>('bad', [
          { from: ['open'], action: 'close', to: 'closed', events: [] },
          { from: ['open', 'locked'], action: 'close', to: 'locked', events: [] },
        ]),
      /two transitions for close from open/,
    );
  });

  test('batch: the statuses a set-based move starts from and its target; ambiguous actions refuse', () => {
    assert.deepEqual(DOOR.batch('lock'), { from: ['closed'], to: 'locked' });
    const twoRows = new StateMachine<Door, 'shut'>('two', [
      { from: ['open'], action: 'shut', to: 'closed', events: [] },
      { from: ['closed'], action: 'shut', to: 'locked', events: [] },
    ]);
    assert.throws(() => twoRows.batch('shut'), /exactly one row/);
  });
});

describe('applyTransition and the outside-call protocol on the database', () => {
  let h: Harness;
  let co: Company;
  let scope: Omit<ServiceScope, 'db'>;
  before(async () => {
    h = await createHarness();
    co = await h.company('Engine SAS');
    scope = { companyId: co.company.id, environment: 'test', deps: h.runtime.deps };
  });
  after(() => h.close());

  async function newLink(): Promise<{ id: string; status: 'active' | 'used' | 'deleted' }> {
    const customer = (await co.req({ url: '/v1/customers', body: { first_name: 'Ana' } })).body;
    return (await co.req({ url: '/v1/connect-links', body: { customer_id: customer.id, single_use: true } })).body;
  }

  const LINK = new StateMachine<'active' | 'used' | 'deleted', 'use' | 'delete'>('connect_link_test', [
    { from: ['active'], action: 'use', to: 'used', events: ['test.link_used'] },
    { from: ['active', 'used'], action: 'delete', to: 'deleted', events: [] },
  ]);

  test('a transition applies once: a caller holding a stale row gets TransitionNotAllowed and writes nothing', async () => {
    const link = await newLink();
    const db = h.runtime.deps.database.db;
    const stale = await db.selectFrom('connect_links').selectAll().where('id', '=', link.id).executeTakeFirstOrThrow();
    const events = () => db.selectFrom('events').select('id').where('company_id', '=', co.company.id).where('type', '=', 'test.link_used').execute();
    await db.transaction().execute((trx) =>
      applyTransition(trx, { ...scope, db: trx }, LINK, {
        table: 'connect_links',
        row: stale,
        action: 'use',
        touch: false,
        present: (r) => ({ id: r.id }),
      }),
    );
    assert.equal((await events()).length, 1, 'the event is written with the transition');
    await assert.rejects(
      db.transaction().execute((trx) =>
        applyTransition(trx, { ...scope, db: trx }, LINK, {
          table: 'connect_links',
          row: stale,
          action: 'use',
          touch: false,
          present: (r) => ({ id: r.id }),
        }),
      ),
      TransitionNotAllowed,
    );
    assert.equal((await events()).length, 1, 'the loser emits nothing');
    const row = await db.selectFrom('connect_links').select('status').where('id', '=', link.id).executeTakeFirstOrThrow();
    assert.equal(row.status, 'used');
  });

  async function safetyJobs(kind: string) {
    return h.runtime.deps.database.db.selectFrom('jobs').select('id').where('kind', '=', kind).execute();
  }

  test('protocol: record and safety job commit before the call; the settle removes the safety job', async () => {
    const order: string[] = [];
    const result = await runOutsideCall(jobOrigin(h.runtime.deps), {
      rail: 'test',
      record: async (trx) => {
        order.push('record');
        const safetyJobId = await h.runtime.deps.jobs.enqueue(trx, 'test.safety_ok', {}, new Date(h.clock.now().getTime() + 60_000));
        return { recorded: 'r1', resourceId: 'r1', safetyJobId };
      },
      call: async (recorded) => {
        // Outside any transaction: the record (and its safety job) is visible from another session.
        assert.equal((await safetyJobs('test.safety_ok')).length, 1);
        order.push(`call:${recorded}`);
        return 'answer';
      },
      settle: async (_trx, recorded, outcome) => {
        order.push(`settle:${recorded}:${outcome}`);
        return 'settled';
      },
      unknown: () => 'unknown',
      lost: () => new Error('lost'),
    });
    assert.equal(result, 'settled');
    assert.deepEqual(order, ['record', 'call:r1', 'settle:r1:answer']);
    assert.equal((await safetyJobs('test.safety_ok')).length, 0, 'settled: the safety job is gone');
  });

  test('protocol: an unknown outcome is never guessed (no settle) and the safety job stays for the reconciler', async () => {
    let settled = false;
    const answer = await runOutsideCall(jobOrigin(h.runtime.deps), {
      rail: 'test',
      record: async (trx) => ({
        recorded: 1,
        resourceId: 'r2',
        safetyJobId: await h.runtime.deps.jobs.enqueue(trx, 'test.safety_unknown', {}, new Date(h.clock.now().getTime() + 60_000)),
      }),
      call: async () => {
        throw new Error('connection reset');
      },
      settle: async () => {
        settled = true;
        return 'settled';
      },
      unknown: (_r, error) => `unknown: ${(error as Error).message}`,
      lost: () => new Error('lost'),
    });
    assert.equal(answer, 'unknown: connection reset');
    assert.equal(settled, false);
    assert.equal((await safetyJobs('test.safety_unknown')).length, 1);
  });

  test('protocol: a failed settle rolls back and answers `lost`; the safety job stays', async () => {
    await assert.rejects(
      runOutsideCall(jobOrigin(h.runtime.deps), {
        rail: 'test',
        record: async (trx) => ({
          recorded: 1,
          resourceId: 'r3',
          safetyJobId: await h.runtime.deps.jobs.enqueue(trx, 'test.safety_lost', {}, new Date(h.clock.now().getTime() + 60_000)),
        }),
        call: async () => 'ok',
        settle: async () => {
          throw new Error('database went away');
        },
        unknown: () => undefined,
        lost: (_r, error) => new Error(`lost after the call: ${(error as Error).message}`),
      }),
      /lost after the call: database went away/,
    );
    assert.equal((await safetyJobs('test.safety_lost')).length, 1);
  });

  test('a call past its deadline is unknown (CallDeadlineExceeded), whatever it answers later', async () => {
    let release!: (v: string) => void;
    const slow = new Promise<string>((resolve) => (release = resolve));
    await assert.rejects(withDeadline(slow, 20, 'slow_rail'), (e) => e instanceof CallDeadlineExceeded && e.rail === 'slow_rail');
    release('late');
    assert.equal(await withDeadline(Promise.resolve('fast'), 1_000, 'fast_rail'), 'fast');
  });
});
