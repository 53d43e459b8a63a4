import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { Writable } from 'node:stream';
import pino from 'pino';
import { createHarness, eventually, type Harness } from '../../../test/harness.ts';
import { openDatabase } from '../db/database.ts';
import { JobQueue, type JobInfo } from './queue.ts';
import { Poller } from './poller.ts';
import { JobOperatorError, listJobs, retryJob } from './operator.ts';
import { jobsDb } from './tables.ts';

/**
 * The queue's leasing under two workers (two JobQueues on one database behave as two processes),
 * dead jobs (list, retry, /metrics) and the loops' error handling. The worker process under
 * terminated sessions is in worker-faults.test.ts (PostgreSQL).
 */

const silent = pino({ level: 'silent' });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
function deferred() {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

function captureLogger() {
  const lines: Record<string, any>[] = [];
  const stream = new Writable({
    write(chunk, _enc, cb) {
      for (const l of String(chunk).split('\n')) if (l.trim()) lines.push(JSON.parse(l));
      cb();
    },
  });
  return { logger: pino({ level: 'debug' }, stream), lines };
}

describe('jobs', () => {
  let h: Harness;
  before(async () => {
    h = await createHarness();
  });
  after(async () => {
    await h.close();
  });

  const db = () => jobsDb(h.runtime.deps.database.db);
  const queue = (opts: { leaseMs: number; concurrency?: number }, logger = silent) =>
    new JobQueue(h.runtime.deps.database, h.clock, logger, { pollMs: 60_000, ...opts });

  test('two workers and slow jobs: each job runs exactly once (leased one at a time, lease renewed while it runs)', async () => {
    const kind = `test.slow.${randomUUID()}`;
    const runs: string[] = [];
    const handler = async (_p: Record<string, unknown>, job: JobInfo) => {
      runs.push(job.id);
      await sleep(700); // more than twice the lease
    };
    const a = queue({ leaseMs: 300 });
    const b = queue({ leaseMs: 300 });
    a.register(kind, handler);
    b.register(kind, handler);
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push(await a.enqueue(h.runtime.deps.database.db, kind, { n: i }));

    const first = a.tick();
    // The other worker polls all along, as a second process would.
    let polling = true;
    const other = (async () => {
      let n = 0;
      while (polling) {
        n += await b.tick();
        await sleep(50);
      }
      return n;
    })();
    await first;
    await eventually(async () => (await db().selectFrom('jobs').select('id').where('kind', '=', kind).execute()).length === 0, 10_000);
    polling = false;
    await other;
    assert.deepEqual([...runs].sort(), [...ids].sort(), `each job ran once: ${JSON.stringify(runs)}`);
  });

  test('a runner whose lease was taken over neither completes nor fails the new holder’s job', async () => {
    const kind = `test.takeover.${randomUUID()}`;
    let releaseA!: (fail: boolean) => void;
    let releaseB!: () => void;
    const aGate = new Promise<boolean>((r) => (releaseA = r));
    const bGate = new Promise<void>((r) => (releaseB = r));
    const aStarted = deferred();
    const bStarted = deferred();
    const a = queue({ leaseMs: 60_000 });
    const b = queue({ leaseMs: 60_000 });
    a.register(kind, async () => {
      aStarted.resolve();
      if (await aGate) throw new Error('A failed late');
    });
    b.register(kind, async () => {
      bStarted.resolve();
      await bGate;
    });
    const id = await a.enqueue(h.runtime.deps.database.db, kind, {});
    const aRun = a.tick();
    await aStarted.promise;
    // A stalls past its lease (a long pause, a partition): B takes the job over.
    await db()
      .updateTable('jobs')
      .set({ locked_until: new Date(h.clock.now().getTime() - 1) })
      .where('id', '=', id)
      .execute();
    const bRun = b.tick();
    await bStarted.promise;
    const held = await db().selectFrom('jobs').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
    assert.equal(held.attempts, 2);

    releaseA(true); // A's late failure must not reschedule B's job nor record its error
    await aRun;
    const after = await db().selectFrom('jobs').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
    assert.equal(after.last_error, null);
    assert.equal(after.lease_token, held.lease_token);
    assert.equal(new Date(after.run_at).getTime(), new Date(held.run_at).getTime());
    assert.equal(after.dead_at, null);

    releaseB();
    assert.equal(await bRun, 1);
    assert.equal(await db().selectFrom('jobs').select('id').where('id', '=', id).executeTakeFirst(), undefined);
  });

  test('a lost lease is noticed by the heartbeat (signal aborted) and the late success deletes nothing', async () => {
    const kind = `test.lost.${randomUUID()}`;
    const { logger, lines } = captureLogger();
    const a = queue({ leaseMs: 300 }, logger);
    let signal!: AbortSignal;
    const started = deferred();
    const finish = deferred();
    a.register(kind, async (_p, job) => {
      signal = job.signal;
      started.resolve();
      await finish.promise;
    });
    const id = await a.enqueue(h.runtime.deps.database.db, kind, {});
    const run = a.tick();
    await started.promise;
    const renewedFrom = (await db().selectFrom('jobs').select('locked_until').where('id', '=', id).executeTakeFirstOrThrow()).locked_until!;
    await eventually(async () => {
      const row = await db().selectFrom('jobs').select('locked_until').where('id', '=', id).executeTakeFirstOrThrow();
      return new Date(row.locked_until!).getTime() > new Date(renewedFrom).getTime();
    }, 5_000);
    await db().updateTable('jobs').set({ lease_token: 'another-worker' }).where('id', '=', id).execute();
    await eventually(async () => signal.aborted, 5_000);
    finish.resolve();
    await run;
    const row = await db().selectFrom('jobs').select(['lease_token']).where('id', '=', id).executeTakeFirst();
    assert.equal(row?.lease_token, 'another-worker', 'the new holder keeps its job');
    assert.ok(lines.some((l) => l.msg.startsWith('job lease lost') && l.job === id));
    await db().deleteFrom('jobs').where('id', '=', id).execute();
  });

  test('concurrency: a worker leases only as many jobs as it runs at once', async () => {
    const kind = `test.concurrency.${randomUUID()}`;
    const a = queue({ leaseMs: 60_000, concurrency: 2 });
    let running = 0;
    let peak = 0;
    let leasedPeak = 0;
    a.register(kind, async () => {
      running++;
      peak = Math.max(peak, running);
      const leased = await db().selectFrom('jobs').select('id').where('kind', '=', kind).where('lease_token', 'is not', null).execute();
      leasedPeak = Math.max(leasedPeak, leased.length);
      await sleep(100);
      running--;
    });
    for (let i = 0; i < 5; i++) await a.enqueue(h.runtime.deps.database.db, kind, { i });
    assert.equal(await a.tick(), 5);
    assert.equal(peak, 2);
    assert.ok(leasedPeak <= 2, `leased at most 2 at once (${leasedPeak})`);
  });

  test('a job out of attempts is dead: listed, counted in /metrics, retried by the operator', async () => {
    const kind = `test.dead.${randomUUID()}`;
    const { logger, lines } = captureLogger();
    const a = queue({ leaseMs: 60_000 }, logger);
    let fail = true;
    let ran = 0;
    a.register(kind, async () => {
      ran++;
      if (fail) throw new Error('rail unavailable');
    });
    const id = await a.enqueue(h.runtime.deps.database.db, kind, { charge_id: 'ch_x' });
    await db().updateTable('jobs').set({ max_attempts: 2 }).where('id', '=', id).execute();
    assert.equal(await a.tick(), 1);
    h.clock.advance(3_000); // the first backoff is 2 s
    assert.equal(await a.tick(), 1);
    h.clock.advance(3_600_000);
    assert.equal(await a.tick(), 0, 'a dead job is never claimed again');
    assert.equal(ran, 2);
    assert.ok(lines.some((l) => l.level === 50 && l.msg.startsWith('job dead') && l.job === id));

    const listed = await listJobs(h.runtime.deps.database.db, { dead: true, kind }, h.clock.now());
    assert.equal(listed.jobs.length, 1);
    assert.equal(listed.jobs[0].id, id);
    assert.equal(listed.jobs[0].state, 'dead');
    assert.equal(listed.jobs[0].attempts, 2);
    assert.equal(listed.jobs[0].last_error, 'rail unavailable');
    assert.deepEqual(listed.jobs[0].payload, { charge_id: 'ch_x' });
    assert.ok(listed.jobs[0].dead_at);

    const metrics = await h.app.inject({ method: 'GET', url: '/metrics' });
    assert.match(metrics.body, /# TYPE recaudo_jobs_dead gauge/);
    assert.ok(metrics.body.includes(`recaudo_jobs_dead{kind="${kind}"} 1`), metrics.body);
    // Every kind this process runs is reported, 0 when none is dead.
    assert.match(metrics.body, /recaudo_jobs_dead\{kind="charges\.reconcile"\} \d+/);

    await assert.rejects(retryJob(h.runtime.deps.database.db, { id: 'job_nope' }, h.clock.now()), JobOperatorError);
    fail = false;
    const retried = await retryJob(h.runtime.deps.database.db, { id }, h.clock.now());
    assert.equal(retried.job.state, 'due');
    assert.equal(retried.job.attempts, 0);
    assert.equal(retried.job.dead_at, null);
    assert.equal((await listJobs(h.runtime.deps.database.db, { dead: true, kind }, h.clock.now())).jobs.length, 0);
    assert.equal(await a.tick(), 1);
    assert.equal(ran, 3);
    assert.equal(await db().selectFrom('jobs').select('id').where('id', '=', id).executeTakeFirst(), undefined);
    const after = await h.app.inject({ method: 'GET', url: '/metrics' });
    assert.ok(!after.body.includes(`kind="${kind}"`), 'no longer counted');
  });

  test('only a dead job is retried', async () => {
    const kind = `test.notdead.${randomUUID()}`;
    const id = await h.runtime.deps.jobs.enqueue(h.runtime.deps.database.db, kind, {}, new Date(h.clock.now().getTime() + 60_000));
    await assert.rejects(retryJob(h.runtime.deps.database.db, { id }, h.clock.now()), /is not dead \(scheduled\)/);
    await db().deleteFrom('jobs').where('id', '=', id).execute();
  });
});

describe('worker loops', () => {
  test('a failing poll is logged and retried with capped backoff, then its recovery is logged', async () => {
    const { logger, lines } = captureLogger();
    let calls = 0;
    const done = deferred();
    const poller = new Poller(
      'flaky',
      async () => {
        calls++;
        if (calls <= 4) throw new Error(`database unreachable ${calls}`);
        done.resolve();
        return 0;
      },
      logger,
      60_000,
      { minBackoffMs: 20, maxBackoffMs: 50 },
    );
    const hold = setInterval(() => {}, 1_000); // the loop's timers do not keep a process alive by design
    poller.start();
    await done.promise;
    await poller.stop();
    clearInterval(hold);
    const failures = lines.filter((l) => l.msg === 'worker poll failed; retrying');
    assert.deepEqual(
      failures.map((l) => l.retry_in_ms),
      [20, 40, 50, 50],
    );
    assert.equal(failures[0].err.message, 'database unreachable 1');
    assert.ok(lines.some((l) => l.msg === 'worker poll recovered' && l.failures === 4));
    assert.equal(poller.failingSince, null);
  });

  test('a worker whose database stays unreachable calls onFatal once (the worker process exits 1)', async () => {
    // Nothing listens on port 1: every connection is refused, as with a database that is down.
    const database = await openDatabase({ databaseUrl: 'postgres://recaudo@127.0.0.1:1/unreachable', poolSize: 2 });
    const { logger, lines } = captureLogger();
    const q = new JobQueue(database, { now: () => new Date() }, logger, { pollMs: 60_000 });
    q.register('anything', async () => {});
    const fatal: { down_ms: number; error: string | null }[] = [];
    const started = Date.now();
    q.start({ keepAlive: true, maxOutageMs: 300, onFatal: (info) => fatal.push(info) });
    await eventually(async () => fatal.length > 0, 5_000);
    await sleep(200);
    await q.stop();
    await database.close();
    assert.equal(fatal.length, 1);
    assert.ok(lines.some((l) => l.msg === 'worker poll failed; retrying'));
    assert.ok(
      lines.some((l) => l.msg.startsWith('LISTEN connect')),
      'the LISTEN session keeps trying too',
    );
    assert.ok(fatal[0].down_ms >= 300 && Date.now() - started >= 300);
    assert.ok(fatal[0].error);
  });
});
