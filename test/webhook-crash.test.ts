import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { createHarness, ENGINE } from './harness.ts';
import { Receiver } from './receiver.ts';
import { emitEvent } from '../src/platform/outbox/outbox.ts';

function startWorker(databaseUrl: string): ChildProcess {
  return spawn(process.execPath, ['--import', 'tsx', 'src/main.ts', 'worker'], {
    env: {
      ...process.env,
      DATABASE_URL: databaseUrl,
      LOG_LEVEL: 'warn',
      ALLOW_PRIVATE_WEBHOOKS: 'true',
      WEBHOOK_TIMEOUT_MS: '1000',
      WEBHOOK_CONCURRENCY: '16',
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
}

test(
  'a worker killed with SIGKILL mid-run loses nothing: a new worker delivers every committed event',
  { skip: ENGINE !== 'postgres' && 'needs worker processes on PostgreSQL' },
  async () => {
    const h = await createHarness();
    const rx = await new Receiver().start();
    const workers: ChildProcess[] = [];
    try {
      const co = await h.company('Crash SAS');
      const hook = await co.req({ url: '/v1/webhooks', body: { name: 'crash', url: rx.url, events: ['balance.updated'] } });
      assert.equal(hook.status, 200, hook.raw);
      const ids: string[] = [];
      await h.runtime.deps.database.db.transaction().execute(async (trx) => {
        for (let i = 0; i < 300; i++)
          ids.push(
            (
              await emitEvent(
                { companyId: co.company.id, environment: 'test', db: trx, deps: h.runtime.deps },
                'balance.updated',
                { n: i },
                new Date(),
              )
            ).id,
          );
      });
      rx.mode = { status: 200, delayMs: 15 };

      workers.push(startWorker(h.config.databaseUrl!));
      await rx.waitFor(40, 60_000);
      workers[0].kill('SIGKILL');
      await once(workers[0], 'exit');
      const atKill = rx.received.length;
      assert.ok(atKill < 300, `the first worker was stopped mid-run (${atKill} received)`);

      workers.push(startWorker(h.config.databaseUrl!));
      const deadline = Date.now() + 60_000;
      const seen = () => new Set(rx.received.map((r) => String(r.headers['x-webhook-id'])));
      while (seen().size < 300) {
        if (Date.now() > deadline) break;
        await rx.waitFor(rx.received.length + 1, 5_000).catch(() => {});
      }
      const got = seen();
      assert.deepEqual(
        ids.filter((id) => !got.has(id)),
        [],
        'every committed event was delivered',
      );
      const pending = await h.runtime.deps.database.db
        .selectFrom('webhook_deliveries')
        .select('status')
        .where('company_id', '=', co.company.id)
        .where('status', '!=', 'succeeded')
        .execute();
      // The last batch may still be recording its outcomes; wait for the table to settle.
      for (let i = 0; i < 50 && pending.length; i++) {
        await new Promise((r) => setTimeout(r, 100));
        pending.splice(
          0,
          pending.length,
          ...(await h.runtime.deps.database.db
            .selectFrom('webhook_deliveries')
            .select('status')
            .where('company_id', '=', co.company.id)
            .where('status', '!=', 'succeeded')
            .execute()),
        );
      }
      assert.equal(pending.length, 0);
      const duplicates = rx.received.length - got.size;
      assert.ok(duplicates <= 16, `duplicates only from the killed worker's in-flight batch (${duplicates})`);
    } finally {
      for (const w of workers) if (w.exitCode === null) w.kill('SIGKILL');
      await rx.close();
      await h.close();
    }
  },
);
