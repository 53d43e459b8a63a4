import http from 'node:http';
import https from 'node:https';
import { performance } from 'node:perf_hooks';
import { sql } from 'kysely';
import type { AppDeps } from '../../platform/context.ts';
import { prefixedId } from '../../platform/ids.ts';
import { Poller } from '../../platform/jobs/poller.ts';
import { signBody } from './signature.ts';
import { publicOnlyLookup } from './url-safety.ts';
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

  async tick(): Promise<number> {
    const claimed = await this.claim();
    if (claimed.length === 0) return 0;
    const targets = await this.loadTargets(claimed);
    const outcomes = await Promise.all(claimed.map((d) => this.attempt(d, targets.get(d.id))));
    await this.record(outcomes);
    return claimed.length;
  }

  private async claim(): Promise<Claimed[]> {
    const now = this.deps.clock.now();
    const lease = new Date(now.getTime() + this.leaseMs);
    const result = await sql<Claimed>`
      UPDATE webhook_deliveries d SET locked_until = ${lease}, attempts = d.attempts + 1
      FROM (
        SELECT company_id, environment, id FROM webhook_deliveries
        WHERE status = 'pending' AND next_attempt_at <= ${now} AND (locked_until IS NULL OR locked_until < ${now})
        ORDER BY next_attempt_at
        LIMIT ${this.deps.config.webhookConcurrency}
        FOR UPDATE SKIP LOCKED
      ) due
      WHERE d.company_id = due.company_id AND d.environment = due.environment AND d.id = due.id
      RETURNING d.company_id, d.environment, d.id, d.webhook_id, d.event_id, d.event_type, d.attempts, d.max_attempts, d.created_at`.execute(
      this.deps.database.db,
    );
    return result.rows.map((r) => ({ ...r, created_at: new Date(r.created_at) }));
  }

  private async loadTargets(claimed: Claimed[]): Promise<Map<string, Target>> {
    const rows = await this.deps.database.db
      .selectFrom('webhook_deliveries as d')
      .innerJoin('webhooks as w', (j) => j.onRef('w.company_id', '=', 'd.company_id').onRef('w.environment', '=', 'd.environment').onRef('w.id', '=', 'd.webhook_id'))
      .innerJoin('events as e', (j) => j.onRef('e.company_id', '=', 'd.company_id').onRef('e.environment', '=', 'd.environment').onRef('e.id', '=', 'd.event_id'))
      .select(['d.id', 'w.url', 'w.header', 'w.secret', 'w.deleted_at', 'e.payload'])
      .where('d.id', 'in', claimed.map((c) => c.id))
      .execute();
    return new Map(rows.map((r) => [r.id, { url: r.url, header: r.header, secret: r.secret, deleted: r.deleted_at !== null, payload: r.payload }]));
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

  private async record(outcomes: Outcome[]): Promise<void> {
    const now = this.deps.clock.now();
    await this.deps.database.db.transaction().execute(async (trx) => {
      const attempts = outcomes.filter((o) => !o.cancelled);
      if (attempts.length) {
        await trx
          .insertInto('webhook_attempts')
          .values(
            attempts.map((o) => ({
              company_id: o.delivery.company_id,
              environment: o.delivery.environment,
              id: prefixedId('wha', o.attemptedAt.getTime()),
              delivery_id: o.delivery.id,
              attempted_at: o.attemptedAt,
              status_code: o.statusCode,
              latency_ms: o.latencyMs,
              error: o.error,
              response_excerpt: o.excerpt,
            })),
          )
          .execute();
      }
      // Successes (the common case) settle in one statement per company scope; others one by one.
      const succeeded = new Map<string, Claimed[]>();
      for (const o of outcomes) {
        const d = o.delivery;
        const ok = !o.cancelled && o.statusCode !== null && o.statusCode >= 200 && o.statusCode < 300;
        if (ok) {
          const key = `${d.company_id}|${d.environment}`;
          succeeded.set(key, [...(succeeded.get(key) ?? []), d]);
          this.delivered.inc({ outcome: 'success' });
          this.latency.observe((now.getTime() - d.created_at.getTime()) / 1000);
          continue;
        }
        let set;
        if (o.cancelled) {
          set = { status: 'cancelled' as const, completed_at: now, next_attempt_at: null, locked_until: null };
        } else if (d.attempts >= (d.max_attempts ?? this.deps.config.webhookRetryScheduleMs.length + 1)) {
          set = { status: 'failed' as const, completed_at: now, next_attempt_at: null, locked_until: null, last_status_code: o.statusCode, last_error: o.error };
          this.delivered.inc({ outcome: 'error' });
          this.failed.inc();
        } else {
          set = { next_attempt_at: this.nextAttemptAt(d, now), locked_until: null, last_status_code: o.statusCode, last_error: o.error };
          this.delivered.inc({ outcome: 'error' });
        }
        await trx
          .updateTable('webhook_deliveries')
          .set(set)
          .where('company_id', '=', d.company_id)
          .where('environment', '=', d.environment)
          .where('id', '=', d.id)
          // A manual retry or a delete that happened meanwhile wins over this outcome.
          .where('status', '=', 'pending')
          .execute();
      }
      for (const group of succeeded.values()) {
        const statusById = new Map(outcomes.map((o) => [o.delivery.id, o.statusCode]));
        const codes = new Set(group.map((d) => statusById.get(d.id)));
        for (const code of codes) {
          await trx
            .updateTable('webhook_deliveries')
            .set({ status: 'succeeded', completed_at: now, next_attempt_at: null, locked_until: null, last_status_code: code ?? null, last_error: null })
            .where('company_id', '=', group[0].company_id)
            .where('environment', '=', group[0].environment)
            .where('id', 'in', group.filter((d) => statusById.get(d.id) === code).map((d) => d.id))
            .where('status', '=', 'pending')
            .execute();
        }
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
