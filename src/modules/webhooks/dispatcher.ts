import http from 'node:http';
import https from 'node:https';
import { performance } from 'node:perf_hooks';
import { sql, type Updateable } from 'kysely';
import type { AppDeps } from '../../platform/context.ts';
import { prefixedId } from '../../platform/ids.ts';
import { Poller } from '../../platform/jobs/poller.ts';
import { signBody } from './signature.ts';
import { publicOnlyLookup } from './url-safety.ts';
import type { WebhookDeliveriesTable } from './tables.ts';
import './tables.ts';

interface Claimed {
  company_id: string;
  environment: 'test' | 'live';
  id: string;
  webhook_id: string;
  event_id: string;
  event_type: string;
  attempts: number;
  max_attempts: number | null;
  created_at: Date;
}

interface Target {
  url: string;
  header: string | null;
  secret: string | null;
  deleted: boolean;
  payload: string;
}

interface Outcome {
  delivery: Claimed;
  attemptedAt: Date;
  statusCode: number | null;
  latencyMs: number;
  error: string | null;
  excerpt: string | null;
  cancelled: boolean;
}

const EXCERPT_BYTES = 512;

/** The dispatcher of each runtime, for tests that drive delivery by hand. */
export const dispatchers = new WeakMap<AppDeps, WebhookDispatcher>();
const USER_AGENT = 'Recaudo-Webhooks/1.0';

/**
 * Delivers due webhook deliveries: leases a batch (FOR UPDATE SKIP LOCKED, so any number of
 * processes share the work and never attempt one delivery twice at once), POSTs them in parallel
 * outside any transaction, then records every attempt and the next step in one transaction.
 */
export class WebhookDispatcher {
  readonly poller: Poller;
  private agents = {
    test: { http: new http.Agent({ keepAlive: true, maxSockets: 256 }), https: new https.Agent({ keepAlive: true, maxSockets: 256 }) },
    live: {
      http: new http.Agent({ keepAlive: true, maxSockets: 256, lookup: publicOnlyLookup } as http.AgentOptions),
      https: new https.Agent({ keepAlive: true, maxSockets: 256, lookup: publicOnlyLookup } as https.AgentOptions),
    },
  };
  private delivered;
  private failed;
  private latency;

  constructor(private deps: AppDeps) {
    this.poller = new Poller('webhooks', () => this.tick(), deps.logger, 200);
    dispatchers.set(deps, this);
    const m = deps.metrics;
    this.delivered = m.counter('recaudo_webhook_attempts_total', 'Webhook delivery attempts by outcome');
    this.failed = m.counter('recaudo_webhook_deliveries_failed_total', 'Webhook deliveries that exhausted their retries');
    this.latency = m.histogram('recaudo_webhook_delivery_seconds', 'Time from event to successful delivery', [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 3600, 86400]);
    m.collect(async () => {
      const rows = await deps.database.db
        .selectFrom('webhook_deliveries')
        .select(['status', sql<string>`count(*)`.as('n')])
        .where('status', '=', 'pending')
        .groupBy('status')
        .execute();
      const jobs = await deps.database.db.selectFrom('jobs').select(sql<string>`count(*)`.as('n')).executeTakeFirst();
      return [
        { name: 'recaudo_webhook_queue_depth', help: 'Webhook deliveries waiting for an attempt', samples: [{ value: Number(rows[0]?.n ?? 0) }] },
        { name: 'recaudo_jobs_queue_depth', help: 'Background jobs waiting or running', samples: [{ value: Number(jobs?.n ?? 0) }] },
      ];
    });
  }

  private get leaseMs(): number {
    // Outlasts the request timeout, so a lease never expires while its attempt may still run.
    const timeout = this.deps.config.webhookTimeoutMs;
    return timeout + Math.max(1_000, Math.floor(timeout / 2));
  }

  /** One round. `onlyCompanies` limits it (tests sharing one PostgreSQL database use it). */
  async tick(onlyCompanies?: readonly string[]): Promise<number> {
    const claimed = await this.claim(onlyCompanies);
    if (claimed.length === 0) return 0;
    const outcomes = await Promise.all(claimed.map(({ delivery, target }) => this.attempt(delivery, target)));
    await this.record(outcomes);
    return claimed.length;
  }

  /**
   * Leases a batch and reads what each delivery needs (URL, credentials, body) in one statement.
   *
   * Every lookup goes through a globally unique `id` index (webhook_deliveries_id, webhooks_id,
   * events_id) or a full primary key, never a (company_id, environment) prefix: on tables without
   * statistics yet (a new database, before autovacuum's first ANALYZE) the planner otherwise picks
   * the prefix indexes and scans the company's whole delivery and event history for every row, so
   * each batch gets slower as the tables grow. The webhook and event are read in LIMIT 1 lateral
   * subqueries, which the planner cannot flatten into such a join.
   *
   * The due rows come from the partial index webhook_deliveries_due. With statistics that is an
   * ordered index scan that stops after the batch; without them (same new-database window) it is a
   * bitmap scan + sort of every due row and every not-yet-vacuumed finished one, so it slows down as
   * a backlog grows (npm run bench, BENCH_DELIVERY_ANALYZE=0).
   */
  private async claim(onlyCompanies?: readonly string[]): Promise<{ delivery: Claimed; target: Target | undefined }[]> {
    const scope = onlyCompanies?.length ? sql`AND company_id IN (${sql.join(onlyCompanies)})` : sql``;
    const now = this.deps.clock.now();
    const lease = new Date(now.getTime() + this.leaseMs);
    const result = await sql<Claimed & { found_webhook: boolean | null; url: string | null; header: string | null; secret: string | null; deleted: boolean | null; payload: string | null }>`
      WITH claimed AS (
        UPDATE webhook_deliveries d SET locked_until = ${lease}, attempts = d.attempts + 1
        FROM (
          SELECT id FROM webhook_deliveries
          WHERE status = 'pending' AND next_attempt_at <= ${now} AND (locked_until IS NULL OR locked_until < ${now}) ${scope}
          ORDER BY next_attempt_at
          LIMIT ${this.deps.config.webhookConcurrency}
          FOR UPDATE SKIP LOCKED
        ) due
        WHERE d.id = due.id
        RETURNING d.company_id, d.environment, d.id, d.webhook_id, d.event_id, d.event_type, d.attempts, d.max_attempts, d.created_at
      )
      SELECT c.*, w.found AS found_webhook, w.url, w.header, w.secret, w.deleted, e.payload
      FROM claimed c
      LEFT JOIN LATERAL (
        SELECT true AS found, url, header, secret, deleted_at IS NOT NULL AS deleted FROM webhooks
        WHERE company_id = c.company_id AND environment = c.environment AND id = c.webhook_id LIMIT 1
      ) w ON true
      LEFT JOIN LATERAL (
        SELECT payload FROM events WHERE company_id = c.company_id AND environment = c.environment AND id = c.event_id LIMIT 1
      ) e ON true`.execute(this.deps.database.db);
    return result.rows.map((r) => {
      const delivery: Claimed = {
        company_id: r.company_id,
        environment: r.environment,
        id: r.id,
        webhook_id: r.webhook_id,
        event_id: r.event_id,
        event_type: r.event_type,
        attempts: r.attempts,
        max_attempts: r.max_attempts,
        created_at: new Date(r.created_at),
      };
      const target = r.found_webhook && r.payload !== null ? { url: r.url!, header: r.header, secret: r.secret, deleted: r.deleted === true, payload: r.payload } : undefined;
      return { delivery, target };
    });
  }

  private attempt(delivery: Claimed, target: Target | undefined): Promise<Outcome> {
    const attemptedAt = this.deps.clock.now();
    const base = { delivery, attemptedAt, statusCode: null, latencyMs: 0, excerpt: null };
    if (!target || target.deleted) return Promise.resolve({ ...base, error: 'webhook deleted', cancelled: true });
    const started = performance.now();
    return new Promise<Outcome>((resolve) => {
      let settled = false;
      const finish = (statusCode: number | null, error: string | null, excerpt: string | null) => {
        if (settled) return;
        settled = true;
        resolve({ ...base, statusCode, error, excerpt, latencyMs: Math.round(performance.now() - started), cancelled: false });
      };
      let url: URL;
      try {
        url = new URL(target.url);
      } catch {
        return finish(null, 'invalid URL', null);
      }
      const body = Buffer.from(target.payload, 'utf8');
      const headers: Record<string, string | number> = {
        'content-type': 'application/json',
        'content-length': body.length,
        'user-agent': USER_AGENT,
        'x-webhook-event': delivery.event_type,
        'x-webhook-id': delivery.event_id,
        'x-webhook-token': target.header ?? '',
      };
      if (target.secret) headers.Signature = signBody(target.secret, body);
      const agents = this.agents[delivery.environment];
      const client = url.protocol === 'https:' ? https : http;
      const req = client.request(url, { method: 'POST', headers, agent: url.protocol === 'https:' ? agents.https : agents.http });
      req.setTimeout(this.deps.config.webhookTimeoutMs, () => req.destroy(Object.assign(new Error('timed out'), { code: 'ETIMEDOUT' })));
      req.on('error', (err: NodeJS.ErrnoException) => finish(null, err.code ? `${err.code}: ${err.message}` : err.message, null));
      req.on('response', (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (chunk: Buffer) => {
          if (size < EXCERPT_BYTES) chunks.push(chunk);
          size += chunk.length;
        });
        res.on('end', () => {
          const excerpt = Buffer.concat(chunks).subarray(0, EXCERPT_BYTES).toString('utf8');
          const ok = res.statusCode! >= 200 && res.statusCode! < 300;
          finish(res.statusCode ?? null, ok ? null : `HTTP ${res.statusCode}`, excerpt);
        });
        res.on('error', (err) => finish(res.statusCode ?? null, err.message, null));
      });
      req.end(body);
    });
  }

  /** When the next attempt is due: the schedule's offset from creation, plus up to 10 % jitter. */
  nextAttemptAt(delivery: Claimed, now: Date): Date {
    const schedule = this.deps.config.webhookRetryScheduleMs;
    const index = Math.min(delivery.attempts - 1, schedule.length - 1);
    const previous = index > 0 ? schedule[index - 1] : 0;
    const jitter = Math.floor(Math.random() * 0.1 * (schedule[index] - previous));
    const due = delivery.created_at.getTime() + schedule[index] + jitter;
    return new Date(Math.max(due, now.getTime()));
  }

  /**
   * Records every attempt and settles each delivery. The common case, a batch that all answered
   * the same 2xx, is one statement (the attempts inserted in a CTE of the settling UPDATE); anything
   * else runs in one transaction: the attempts, then the successes by status code, then the others
   * one by one.
   */
  private async record(outcomes: Outcome[]): Promise<void> {
    const now = this.deps.clock.now();
    const attempts = outcomes
      .filter((o) => !o.cancelled)
      .map((o) => ({
        company_id: o.delivery.company_id,
        environment: o.delivery.environment,
        id: prefixedId('wha', o.attemptedAt.getTime()),
        delivery_id: o.delivery.id,
        attempted_at: o.attemptedAt,
        status_code: o.statusCode,
        latency_ms: o.latencyMs,
        error: o.error,
        response_excerpt: o.excerpt,
      }));
    const succeeded = new Map<number, string[]>();
    const others: { delivery: Claimed; set: Updateable<WebhookDeliveriesTable> }[] = [];
    for (const o of outcomes) {
      const d = o.delivery;
      const ok = !o.cancelled && o.statusCode !== null && o.statusCode >= 200 && o.statusCode < 300;
      if (ok) {
        const ids = succeeded.get(o.statusCode!) ?? [];
        ids.push(d.id);
        succeeded.set(o.statusCode!, ids);
        this.delivered.inc({ outcome: 'success' });
        this.latency.observe((now.getTime() - d.created_at.getTime()) / 1000);
      } else if (o.cancelled) {
        others.push({ delivery: d, set: { status: 'cancelled', completed_at: now, next_attempt_at: null, locked_until: null } });
      } else if (d.attempts >= (d.max_attempts ?? this.deps.config.webhookRetryScheduleMs.length + 1)) {
        others.push({ delivery: d, set: { status: 'failed', completed_at: now, next_attempt_at: null, locked_until: null, last_status_code: o.statusCode, last_error: o.error } });
        this.delivered.inc({ outcome: 'error' });
        this.failed.inc();
      } else {
        others.push({ delivery: d, set: { next_attempt_at: this.nextAttemptAt(d, now), locked_until: null, last_status_code: o.statusCode, last_error: o.error } });
        this.delivered.inc({ outcome: 'error' });
      }
    }
    const success = (code: number) => ({ status: 'succeeded' as const, completed_at: now, next_attempt_at: null, locked_until: null, last_status_code: code, last_error: null });
    // By the unique id index alone (see claim()): these ids were just leased by this process. A
    // manual retry or a delete that happened meanwhile (status no longer pending) wins over this outcome.
    if (others.length === 0 && succeeded.size === 1) {
      const [[code, ids]] = succeeded;
      await this.deps.database.db
        .with('recorded', (db) => db.insertInto('webhook_attempts').values(attempts))
        .updateTable('webhook_deliveries')
        .set(success(code))
        .where('id', 'in', ids)
        .where('status', '=', 'pending')
        .execute();
      return;
    }
    await this.deps.database.db.transaction().execute(async (trx) => {
      if (attempts.length) await trx.insertInto('webhook_attempts').values(attempts).execute();
      for (const [code, ids] of succeeded) {
        await trx.updateTable('webhook_deliveries').set(success(code)).where('id', 'in', ids).where('status', '=', 'pending').execute();
      }
      for (const { delivery: d, set } of others) {
        await trx
          .updateTable('webhook_deliveries')
          .set(set)
          .where('company_id', '=', d.company_id)
          .where('environment', '=', d.environment)
          .where('id', '=', d.id)
          .where('status', '=', 'pending')
          .execute();
      }
    });
  }

  close(): void {
    for (const group of Object.values(this.agents)) {
      group.http.destroy();
      group.https.destroy();
    }
  }
}
