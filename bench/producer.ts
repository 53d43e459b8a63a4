// Event producer for the webhook delivery scenario, run by bench/run.ts in its own process (never
// the service's): commits events straight into the bench database with the service's own outbox
// (emitEvent + the webhook fan-out sink), so each commit writes the event, one delivery per
// subscribed webhook and a pg_notify that wakes the service's workers.
//
// Usage: BENCH_PRODUCER_SPEC='<ProducerSpec JSON>' node --import tsx bench/producer.ts
// Pacing: every `batchMs` it commits, in one transaction, the events due by then at `rate` per
// second (at most `maxBatch` of them, and at most `maxInFlight` transactions at once, so a slow
// commit does not stop the clock; what cannot start yet is committed later, and measuredRate shows it).
// Each event's data is { object, seq, sent_at, warmup? }, sent_at = Date.now() right before that
// event's inserts. Events of the first `warmup` seconds carry warmup: true.
// IPC: { type: 'measuring' } when the warm-up ends, then { type: 'result', summary }; closes its
// connections when the runner answers { type: 'close' }.
import { openDatabase } from '../src/platform/db/database.ts';
import type { Environment } from '../src/platform/db/schema.ts';
import { emitEvent, EventSinks } from '../src/platform/outbox/outbox.ts';
import { webhookFanOut } from '../src/modules/webhooks/fanout.ts';

/** application_name of the producer's connections (the runner splits PostgreSQL CPU by it). */
export const PRODUCER_APP = 'recaudo-bench-producer';

export interface ProducerSpec {
  databaseUrl: string;
  companyId: string;
  environment: Environment;
  eventType: string;
  /** Events per second. */
  rate: number;
  /** Seconds of unmeasured production before the measured `duration`. */
  warmup: number;
  duration: number;
  batchMs: number;
  maxInFlight: number;
  /** Most events in one transaction; what is due beyond waits for the next free slot. */
  maxBatch: number;
}

export interface ProducerSummary {
  /** Ids of every committed event (warm-up included), in commit order per transaction. */
  ids: string[];
  committed: number;
  committedMeasured: number;
  transactions: number;
  failedTransactions: number;
  firstError: string | null;
  /** Measured events / measured wall seconds (what the producer actually sustained). */
  measuredRate: number;
  /** Wall time of one transaction (BEGIN to COMMIT answered), in ms. */
  transactionMs: { p50: number; p99: number; max: number };
  eventsPerTransaction: number;
  /** Largest number of events that were due but not yet handed to a transaction. */
  maxBacklog: number;
  /** CPU of this process during the measured phase. */
  cpuMs: number;
  cpuPct: number;
}

const spec = JSON.parse(process.env.BENCH_PRODUCER_SPEC ?? '') as ProducerSpec;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}

function send(message: unknown): Promise<void> {
  return new Promise((resolve) => {
    if (!process.send) {
      process.stdout.write(`${JSON.stringify(message)}\n`);
      resolve();
      return;
    }
    process.send(message, () => resolve());
  });
}

const eventSinks = new EventSinks();
eventSinks.add(webhookFanOut);
const database = await openDatabase({ databaseUrl: spec.databaseUrl, poolSize: spec.maxInFlight, applicationName: PRODUCER_APP });
let stopping = false;
process.on('SIGTERM', () => {
  stopping = true;
});

async function main(): Promise<ProducerSummary> {
  // Open the pool's connections before the clock starts.
  await Promise.all(Array.from({ length: spec.maxInFlight }, () => database.db.selectNoFrom((eb) => eb.lit(1).as('one')).execute()));

  const ids: string[] = [];
  let committedMeasured = 0;
  let transactions = 0;
  let failedTransactions = 0;
  let firstError: string | null = null;
  const transactionMs: number[] = [];
  let seq = 0;
  let maxBacklog = 0;
  let inFlight = 0;
  const pending = new Set<Promise<void>>();

  const commit = async (count: number, warmup: boolean): Promise<void> => {
    const started = performance.now();
    const batch: string[] = [];
    try {
      await database.db.transaction().execute(async (trx) => {
        for (let i = 0; i < count; i++) {
          const sentAt = Date.now();
          const data: Record<string, unknown> = { object: 'balance', seq: seq++, sent_at: sentAt };
          if (warmup) data.warmup = true;
          const event = await emitEvent(
            { companyId: spec.companyId, environment: spec.environment, db: trx, deps: { eventSinks } },
            spec.eventType,
            data,
            new Date(sentAt),
          );
          batch.push(event.id);
        }
      });
      transactions += 1;
      transactionMs.push(performance.now() - started);
      for (const id of batch) ids.push(id);
      if (!warmup) committedMeasured += batch.length;
    } catch (error) {
      failedTransactions += 1;
      firstError ??= error instanceof Error ? error.message : String(error);
    }
  };

  const warmupMs = spec.warmup * 1000;
  const endMs = warmupMs + spec.duration * 1000;
  const start = performance.now();
  let handedOut = 0; // events given to a transaction so far
  let measuring = spec.warmup === 0;
  let measureStart = start;
  if (measuring) await send({ type: 'measuring' });
  let cpuMark = process.cpuUsage();

  for (let tick = 1; !stopping; tick++) {
    const elapsed = performance.now() - start;
    if (elapsed >= endMs) break;
    if (!measuring && elapsed >= warmupMs) {
      // Let the warm-up's transactions finish, so every measured event is marked as such.
      await Promise.all(pending);
      measuring = true;
      measureStart = performance.now();
      cpuMark = process.cpuUsage();
      await send({ type: 'measuring' });
      // The measured phase keeps its own schedule from here.
      handedOut = Math.floor((spec.rate * (performance.now() - start)) / 1000);
    }
    const due = Math.floor((spec.rate * elapsed) / 1000) - handedOut;
    if (due > maxBacklog) maxBacklog = due;
    if (due > 0 && inFlight < spec.maxInFlight) {
      const count = Math.min(due, spec.maxBatch);
      handedOut += count;
      inFlight += 1;
      const p: Promise<void> = commit(count, !measuring).finally(() => {
        inFlight -= 1;
        pending.delete(p);
      });
      pending.add(p);
    }
    const next = start + tick * spec.batchMs;
    const wait = next - performance.now();
    if (wait > 0) await sleep(wait);
  }
  await Promise.all(pending);
  const wallMs = performance.now() - measureStart;
  const cpu = process.cpuUsage(cpuMark);
  transactionMs.sort((a, b) => a - b);
  const round = (n: number) => Math.round(n * 10) / 10;
  return {
    ids,
    committed: ids.length,
    committedMeasured,
    transactions,
    failedTransactions,
    firstError,
    measuredRate: round(committedMeasured / (wallMs / 1000)),
    transactionMs: { p50: round(percentile(transactionMs, 50)), p99: round(percentile(transactionMs, 99)), max: round(transactionMs.at(-1) ?? NaN) },
    eventsPerTransaction: transactions ? round(ids.length / transactions) : 0,
    maxBacklog,
    cpuMs: Math.round((cpu.user + cpu.system) / 1000),
    cpuPct: Math.round(((cpu.user + cpu.system) / 1000 / wallMs) * 1000) / 10,
  };
}

let code = 0;
try {
  const summary = await main();
  // Keep the connections (and so their PostgreSQL backends, whose CPU the runner reads) until the
  // runner has taken its reading: it answers { type: 'close' }.
  const closing = new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, 10_000);
    process.on('message', (m: { type?: string }) => {
      if (m?.type === 'close') {
        clearTimeout(timer);
        resolve();
      }
    });
    process.on('disconnect', resolve);
  });
  await send({ type: 'result', summary });
  if (process.send && !stopping) await closing;
} catch (error) {
  code = 1;
  await send({ type: 'error', message: error instanceof Error ? (error.stack ?? error.message) : String(error) });
} finally {
  await database.close().catch(() => {});
}
process.exit(code);
