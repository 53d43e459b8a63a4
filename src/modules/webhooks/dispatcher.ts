import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import { performance } from 'node:perf_hooks';
import { sql, type Updateable } from 'kysely';
import type { Logger } from 'pino';
import type { AppDeps } from '../../platform/context.ts';
import { prefixedId } from '../../platform/ids.ts';
import { Poller } from '../../platform/jobs/poller.ts';
import { signBody } from './signature.ts';
import { deliveryBody } from './body.ts';
import { addressPolicy, isPublicAddress, publicOnlyLookup, urlHost } from './url-safety.ts';
import type { WebhookDeliveriesTable } from './tables.ts';
import { CANCEL, FAIL, SUCCEED } from './lifecycle.ts';
import { inTenant } from '../../platform/scope.ts';
import './tables.ts';
import { openNullable, SecretUnreadable } from '../../platform/secrets.ts';

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
  /** The webhook's token or secret could not be opened (SECRETS_KEY changed): the attempt fails, and is retried. */
  unreadable?: string;
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

/** The background loop: fills free slots at every poll or wake; stopping also waits for the attempts in flight. */
class DeliveryPoller extends Poller {
  constructor(
    private dispatcher: WebhookDispatcher,
    logger: Logger,
  ) {
    super('webhooks', () => dispatcher.fill(dispatcher.onlyCompanies), logger, 200);
  }

  override async stop(): Promise<void> {
    await super.stop();
    await this.dispatcher.idle();
  }
}

/**
 * Delivers due webhook deliveries: leases due ones (FOR UPDATE SKIP LOCKED, so any number of
 * processes share the work and never attempt one delivery twice at once), POSTs them outside any
 * transaction with at most WEBHOOK_CONCURRENCY in flight, and leases more as each slot frees, so a
 * slow receiver holds one slot, never a batch. Outcomes finishing together are recorded together.
 */
export class WebhookDispatcher {
  readonly poller: Poller;
  /** Limits the background loop to these companies (tests sharing one PostgreSQL database). */
  onlyCompanies: readonly string[] | undefined;
  private agents = {
    any: { http: new http.Agent({ keepAlive: true, maxSockets: 256 }), https: new https.Agent({ keepAlive: true, maxSockets: 256 }) },
    public: {
      http: new http.Agent({ keepAlive: true, maxSockets: 256, lookup: publicOnlyLookup } as http.AgentOptions),
      https: new https.Agent({ keepAlive: true, maxSockets: 256, lookup: publicOnlyLookup } as https.AgentOptions),
    },
  };
  /** Slots taken: attempts in flight or waiting to be recorded, and slots reserved by a claim. */
  private busy = 0;
  private idleWaiters: (() => void)[] = [];
  private unrecorded: { outcome: Outcome; done: () => void }[] = [];
  private recording = false;
  private delivered;
  private failed;
  private latency;

  constructor(private deps: AppDeps) {
    this.poller = new DeliveryPoller(this, deps.logger);
    dispatchers.set(deps, this);
    const m = deps.metrics;
    this.delivered = m.counter('recaudo_webhook_attempts_total', 'Webhook delivery attempts by outcome');
    this.failed = m.counter('recaudo_webhook_deliveries_failed_total', 'Webhook deliveries that exhausted their retries');
    this.latency = m.histogram(
      'recaudo_webhook_delivery_seconds',
      'Time from event to successful delivery',
      [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 3600, 86400],
    );
    m.collect(async () => {
      const rows = await deps.database.db
        .selectFrom('webhook_deliveries')
        .select(['status', sql<string>`count(*)`.as('n')])
        .where('status', '=', 'pending')
        .groupBy('status')
        .execute();
      const jobs = await deps.database.db
        .selectFrom('jobs')
        .select(sql<string>`count(*)`.as('n'))
        .executeTakeFirst();
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

  /**
   * One round, awaited: leases what is due (up to the free slots), attempts and records it all.
   * `onlyCompanies` limits it (tests sharing one PostgreSQL database use it).
   */
  async tick(onlyCompanies?: readonly string[]): Promise<number> {
    const runs = await this.launch(onlyCompanies);
    await Promise.all(runs);
    return runs.length;
  }

  /** The background loop's step: fills the free slots and returns at once; each freed slot wakes the loop. */
  async fill(onlyCompanies?: readonly string[]): Promise<number> {
    return (await this.launch(onlyCompanies)).length;
  }

  /** Resolves once no attempt is in flight or waiting to be recorded. */
  idle(): Promise<void> {
    if (this.busy === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  private async launch(onlyCompanies?: readonly string[]): Promise<Promise<void>[]> {
    const free = this.deps.config.webhookConcurrency - this.busy;
    if (free <= 0) return [];
    // Reserved while the claim runs, so overlapping rounds never lease more than the slots.
    this.busy += free;
    let claimed: Awaited<ReturnType<WebhookDispatcher['claim']>> = [];
    try {
      claimed = await this.claim(free, onlyCompanies);
    } finally {
      for (let i = claimed.length; i < free; i++) this.release();
    }
    return claimed.map(({ delivery, target }) =>
      this.attempt(delivery, target)
        .then((outcome) => this.recordSoon(outcome))
        // Never thrown in practice; if it were, the lease lapses and the delivery is attempted again.
        .catch((error) => this.deps.logger.error({ err: error, delivery: delivery.id }, 'webhook attempt failed unexpectedly'))
        .finally(() => {
          this.release();
          this.poller.wake(); // a slot is free: lease the next due delivery now
        }),
    );
  }

  private release(): void {
    this.busy--;
    if (this.busy === 0) for (const resolve of this.idleWaiters.splice(0)) resolve();
  }

  /**
   * Records an outcome: at once when nothing is being recorded, else with every outcome that
   * finished meanwhile (one transaction for many under load). A failure is logged: the lease
   * lapses and the delivery is attempted again (at least once).
   */
  private recordSoon(outcome: Outcome): Promise<void> {
    return new Promise((done) => {
      this.unrecorded.push({ outcome, done });
      if (!this.recording) void this.recordAll();
    });
  }

  private async recordAll(): Promise<void> {
    this.recording = true;
    while (this.unrecorded.length > 0) {
      const batch = this.unrecorded.splice(0);
      try {
        await this.record(batch.map((b) => b.outcome));
      } catch (error) {
        this.deps.logger.error({ err: error }, 'recording webhook attempts failed; their leases lapse and they are attempted again');
      }
      for (const b of batch) b.done();
    }
    this.recording = false;
  }

  /**
   * Leases up to `limit` due deliveries and reads what each needs (URL, credentials, body) in one
   * statement. The lease bumps `attempts`, which fences it: only the holder of the latest lease may
   * settle the delivery (record()).
   *
   * The leased rows are updated by the row address (ctid) their FOR UPDATE lock returned: a TID
   * scan, whatever the statistics say. The webhook and event are read by their full primary key in
   * LIMIT 1 lateral subqueries, which the planner cannot flatten into a join. Neither may go
   * through a (company_id, environment) prefix index: on tables without statistics yet (a new
   * database, before autovacuum's first ANALYZE) the planner may pick one and scan the company's
   * whole delivery and event history for every row, so each batch gets slower as the tables grow.
   * Nothing here locks across companies beyond the leased rows, and every join stays within the
   * delivery's own company (docs/scaling.md, "Claims per shard").
   *
   * The due rows come from the partial index webhook_deliveries_due. With statistics that is an
   * ordered index scan that stops after the batch; without them (same new-database window) it is a
   * bitmap scan + sort of every due row and every not-yet-vacuumed finished one, so it slows down as
   * a backlog grows (npm run bench, BENCH_DELIVERY_ANALYZE=0).
   */
  private async claim(limit: number, onlyCompanies?: readonly string[]): Promise<{ delivery: Claimed; target: Target | undefined }[]> {
    const scope = onlyCompanies?.length ? sql`AND company_id IN (${sql.join(onlyCompanies)})` : sql``;
    const now = this.deps.clock.now();
    const lease = new Date(now.getTime() + this.leaseMs);
    const result = await sql<
      Claimed & {
        found_webhook: boolean | null;
        url: string | null;
        header: string | null;
        secret: string | null;
        deleted: boolean | null;
        payload: string | null;
        payload_format: 'standard' | 'legacy';
      }
    >`
      WITH claimed AS (
        UPDATE webhook_deliveries d SET locked_until = ${lease}, attempts = d.attempts + 1
        FROM (
          SELECT ctid AS row FROM webhook_deliveries
          WHERE status = 'pending' AND next_attempt_at <= ${now} AND (locked_until IS NULL OR locked_until < ${now}) ${scope}
          ORDER BY next_attempt_at
          LIMIT ${limit}
          FOR UPDATE SKIP LOCKED
        ) due
        WHERE d.ctid = due.row
        RETURNING d.company_id, d.environment, d.id, d.webhook_id, d.event_id, d.event_type, d.payload_format, d.attempts, d.max_attempts, d.created_at
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
      const target =
        r.found_webhook && r.payload !== null
          ? this.openTarget({
              url: r.url!,
              header: r.header,
              secret: r.secret,
              deleted: r.deleted === true,
              payload: deliveryBody(r.payload, r.payload_format),
            })
          : undefined;
      return { delivery, target };
    });
  }

  /** The token and the secret as stored are sealed (src/platform/secrets.ts): opened for this attempt only. */
  private openTarget(stored: Target): Target {
    try {
      return { ...stored, header: openNullable(this.deps.secrets, stored.header), secret: openNullable(this.deps.secrets, stored.secret) };
    } catch (error) {
      if (!(error instanceof SecretUnreadable)) throw error;
      return { ...stored, header: null, secret: null, unreadable: error.message };
    }
  }

  private attempt(delivery: Claimed, target: Target | undefined): Promise<Outcome> {
    const attemptedAt = this.deps.clock.now();
    const base = { delivery, attemptedAt, statusCode: null, latencyMs: 0, excerpt: null };
    if (!target || target.deleted) return Promise.resolve({ ...base, error: 'webhook deleted', cancelled: true });
    // Never sent unsigned: the attempt fails (and is retried) until the operator restores the key.
    if (target.unreadable) return Promise.resolve({ ...base, error: `not sent: ${target.unreadable}`, cancelled: false });
    const started = performance.now();
    return new Promise<Outcome>((resolve) => {
      let settled = false;
      let deadline: NodeJS.Timeout | undefined;
      const finish = (statusCode: number | null, error: string | null, excerpt: string | null) => {
        if (settled) return;
        settled = true;
        clearTimeout(deadline);
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
      const policy = addressPolicy(this.deps.config, delivery.environment);
      const host = urlHost(url);
      // An address in the URL is connected to without a lookup: publicOnlyLookup never sees it.
      if (policy === 'public' && net.isIP(host) && !isPublicAddress(host)) {
        return finish(null, `EADDRNOTPUBLIC: refused: ${host} is not a public address`, null);
      }
      const agents = this.agents[policy];
      const client = url.protocol === 'https:' ? https : http;
      let req: http.ClientRequest;
      try {
        req = client.request(url, { method: 'POST', headers, agent: url.protocol === 'https:' ? agents.https : agents.http });
      } catch (error) {
        return finish(null, (error as Error).message, null); // e.g. a header value Node refuses
      }
      // A hard deadline for the whole attempt (lookup, connect, send, the full answer), not an idle
      // timeout: a receiver trickling bytes must not hold its slot, nor outlive the lease.
      deadline = setTimeout(() => {
        finish(null, 'ETIMEDOUT: timed out', null);
        req.destroy();
      }, this.deps.config.webhookTimeoutMs);
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
   *
   * Every attempt is recorded, but a delivery is settled only by the holder of its latest lease
   * (same `attempts` as claimed): a worker whose lease lapsed while its receiver dawdled, and that
   * another worker has leased again since, must not overwrite the newer outcome nor clear the
   * newer lease.
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
    const succeeded = new Map<number, Claimed[]>();
    const others: { delivery: Claimed; set: Updateable<WebhookDeliveriesTable> }[] = [];
    for (const o of outcomes) {
      const d = o.delivery;
      const ok = !o.cancelled && o.statusCode !== null && o.statusCode >= 200 && o.statusCode < 300;
      if (ok) {
        const same = succeeded.get(o.statusCode!) ?? [];
        same.push(d);
        succeeded.set(o.statusCode!, same);
        this.delivered.inc({ outcome: 'success' });
        this.latency.observe((now.getTime() - d.created_at.getTime()) / 1000);
      } else if (o.cancelled) {
        others.push({ delivery: d, set: { status: CANCEL.to, completed_at: now, next_attempt_at: null, locked_until: null } });
      } else if (d.attempts >= (d.max_attempts ?? this.deps.config.webhookRetryScheduleMs.length + 1)) {
        others.push({
          delivery: d,
          set: {
            status: FAIL.to,
            completed_at: now,
            next_attempt_at: null,
            locked_until: null,
            last_status_code: o.statusCode,
            last_error: o.error,
          },
        });
        this.delivered.inc({ outcome: 'error' });
        this.failed.inc();
      } else {
        others.push({
          delivery: d,
          set: { next_attempt_at: this.nextAttemptAt(d, now), locked_until: null, last_status_code: o.statusCode, last_error: o.error },
        });
        this.delivered.inc({ outcome: 'error' });
      }
    }
    const success = (code: number) => ({
      status: SUCCEED.to,
      completed_at: now,
      next_attempt_at: null,
      locked_until: null,
      last_status_code: code,
      last_error: null,
    });
    // By the id index alone (a prefix index could scan a company's history, see claim()): these ids
    // were just leased by this process. A delete that happened meanwhile (status no longer pending)
    // or a newer lease wins over this outcome.
    const leaseHeld = (deliveries: Claimed[]) => sql<boolean>`(id, attempts) IN (${sql.join(deliveries.map((d) => sql`(${d.id}, ${d.attempts})`))})`;
    if (others.length === 0 && succeeded.size === 1) {
      const [[code, deliveries]] = succeeded;
      await this.deps.database.db
        .with('recorded', (db) => db.insertInto('webhook_attempts').values(attempts))
        .updateTable('webhook_deliveries')
        .set(success(code))
        .where(leaseHeld(deliveries))
        .where('status', 'in', SUCCEED.from)
        .execute();
      return;
    }
    await this.deps.database.db.transaction().execute(async (trx) => {
      if (attempts.length) await trx.insertInto('webhook_attempts').values(attempts).execute();
      for (const [code, deliveries] of succeeded) {
        await trx.updateTable('webhook_deliveries').set(success(code)).where(leaseHeld(deliveries)).where('status', 'in', SUCCEED.from).execute();
      }
      for (const { delivery: d, set } of others) {
        await trx
          .updateTable('webhook_deliveries')
          .set(set)
          .$call(inTenant({ companyId: d.company_id, environment: d.environment }))
          .where('id', '=', d.id)
          .where('attempts', '=', d.attempts)
          // FAIL, CANCEL and an attempt that leaves it pending all start from pending.
          .where('status', 'in', FAIL.from)
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
