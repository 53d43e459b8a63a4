// The reference points, started by bench/run.ts as a child process that reports its port over IPC:
// - a bare Fastify server with one JSON route per method, no database, no plugins;
// - the physical limits of a service on the same PostgreSQL (BENCH_LIMIT_DATABASE_URL): the
//   "one-commit POST" (one INSERT … RETURNING in its own transaction: one durable commit per
//   request, which no write API can beat) and the "one-read GET" (one SELECT by primary key).
//   Both use a pg pool of DB_POOL_SIZE connections (the service's default, 20), as the service does.
import Fastify from 'fastify';
import pg from 'pg';
import { randomUUID } from 'node:crypto';

const app = Fastify({ logger: false });

app.get('/baseline', async () => ({ status: 'ok', object: 'baseline' }));
app.post('/baseline', async (req) => req.body);

const limitUrl = process.env.BENCH_LIMIT_DATABASE_URL;
let pool: pg.Pool | null = null;
if (limitUrl) {
  pool = new pg.Pool({ connectionString: limitUrl, max: Number(process.env.DB_POOL_SIZE || 20), application_name: 'recaudo-bench-limit' });
  // The same shape of work as a tenant row: a scoped key, a JSON body, a timestamp.
  await pool.query(
    `CREATE TABLE IF NOT EXISTS bench_limit (company_id text NOT NULL, id uuid NOT NULL, body jsonb NOT NULL,
       created_at timestamptz NOT NULL, PRIMARY KEY (company_id, id))`,
  );
  const seeded = await pool.query<{ id: string }>(
    `INSERT INTO bench_limit (company_id, id, body, created_at) VALUES ('bench', $1, '{}', now()) RETURNING id`,
    [randomUUID()],
  );
  const readId = seeded.rows[0].id;
  app.post('/limit/commit', async (req) => {
    const { rows } = await pool!.query(
      `INSERT INTO bench_limit (company_id, id, body, created_at) VALUES ('bench', $1, $2, now()) RETURNING id, body, created_at`,
      [randomUUID(), JSON.stringify(req.body)],
    );
    return rows[0];
  });
  app.get('/limit/read', async () => {
    const { rows } = await pool!.query(`SELECT id, body, created_at FROM bench_limit WHERE company_id = 'bench' AND id = $1`, [readId]);
    return rows[0];
  });
}

const address = await app.listen({ host: '127.0.0.1', port: 0 });
const port = Number(new URL(address).port);
process.send?.({ type: 'listening', port });
process.on(
  'SIGTERM',
  () =>
    void app.close().then(async () => {
      await pool?.end();
      process.exit(0);
    }),
);
