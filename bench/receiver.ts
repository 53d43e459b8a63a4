import type { AddressInfo } from 'node:net';
// Webhook receiver for the delivery scenario, run by bench/run.ts in its own process (loopback
// only). Answers 200 as soon as a request's body has arrived and records, per request, the receipt
// time, the `x-webhook-id` header and the `data.sent_at` the producer put in the event.
//
// IPC: sends { type: 'listening', port } once; answers { type: 'progress' } with
// { type: 'progress', requests, unique } and { type: 'final', committed: string[], since?: number }
// with { type: 'final', stats } (see ReceiverStats), then forgets what it recorded so that the
// next round starts empty.
import http from 'node:http';

export interface ReceiverStats {
  /** Requests received in this round (every one answered 200 unless unparsable). */
  requests: number;
  /** Distinct x-webhook-id values received. */
  unique: number;
  /** Requests beyond the first for an id. */
  duplicates: number;
  /** Committed ids never received. */
  missing: number;
  /** Received ids that were not in the committed list (another producer, an earlier round). */
  unknown: number;
  /** Requests without an x-webhook-id header or without a numeric data.sent_at. */
  malformed: number;
  /** Over the measured events (data.warmup not true), first receipt of each id. */
  measured: {
    received: number;
    firstSentAt: number | null;
    lastReceivedAt: number | null;
    /** Receipt time minus data.sent_at, in ms (clock: Date.now() in both processes). */
    latencyMs: { p50: number; p90: number; p99: number; avg: number; max: number; min: number } | null;
    /** By second of sent_at from the first measured event: events, and their latency p50 and max (ms). */
    perSecond: { second: number; events: number; p50: number; max: number }[];
  };
}

interface Receipt {
  receivedAt: number;
  sentAt: number;
  warmup: boolean;
}

let receipts = new Map<string, Receipt>();
let requests = 0;
let duplicates = 0;
let malformed = 0;

const server = http.createServer((req, res) => {
  const receivedAt = Date.now();
  const chunks: Buffer[] = [];
  req.on('data', (chunk: Buffer) => chunks.push(chunk));
  req.on('end', () => {
    res.writeHead(200, { 'content-type': 'text/plain', 'content-length': 2 });
    res.end('ok');
    requests += 1;
    const id = req.headers['x-webhook-id'];
    let sentAt = NaN;
    let warmup = false;
    try {
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { data?: { sent_at?: unknown; warmup?: unknown } };
      sentAt = Number(body.data?.sent_at);
      warmup = body.data?.warmup === true;
    } catch {
      /* counted as malformed below */
    }
    if (typeof id !== 'string' || !Number.isFinite(sentAt)) {
      malformed += 1;
      return;
    }
    if (receipts.has(id)) duplicates += 1;
    else receipts.set(id, { receivedAt, sentAt, warmup });
  });
});
server.keepAliveTimeout = 60_000;

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  const index = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[index];
}

function finalStats(committed: string[]): ReceiverStats {
  const committedSet = new Set(committed);
  let missing = 0;
  for (const id of committedSet) if (!receipts.has(id)) missing += 1;
  let unknown = 0;
  const latencies: number[] = [];
  let firstSentAt: number | null = null;
  let lastReceivedAt: number | null = null;
  for (const [id, r] of receipts) {
    if (!committedSet.has(id)) {
      unknown += 1;
      continue;
    }
    if (r.warmup) continue;
    latencies.push(r.receivedAt - r.sentAt);
    if (firstSentAt === null || r.sentAt < firstSentAt) firstSentAt = r.sentAt;
    if (lastReceivedAt === null || r.receivedAt > lastReceivedAt) lastReceivedAt = r.receivedAt;
  }
  const bySecond: number[][] = [];
  if (firstSentAt !== null) {
    for (const r of receipts.values()) {
      if (r.warmup || r.sentAt < firstSentAt) continue;
      (bySecond[Math.floor((r.sentAt - firstSentAt) / 1000)] ??= []).push(r.receivedAt - r.sentAt);
    }
  }
  const perSecond = [...bySecond.entries()]
    .filter(([, list]) => list)
    .map(([second, list]) => {
      list.sort((a, b) => a - b);
      return { second, events: list.length, p50: percentile(list, 50), max: list[list.length - 1] };
    });
  latencies.sort((a, b) => a - b);
  const sum = latencies.reduce((a, b) => a + b, 0);
  return {
    requests,
    unique: receipts.size,
    duplicates,
    missing,
    unknown,
    malformed,
    measured: {
      received: latencies.length,
      firstSentAt,
      lastReceivedAt,
      perSecond,
      latencyMs: latencies.length
        ? {
            p50: percentile(latencies, 50),
            p90: percentile(latencies, 90),
            p99: percentile(latencies, 99),
            avg: Math.round((sum / latencies.length) * 10) / 10,
            max: latencies[latencies.length - 1],
            min: latencies[0],
          }
        : null,
    },
  };
}

process.on('message', (message: { type?: string; committed?: string[] }) => {
  if (message?.type === 'progress') {
    process.send?.({ type: 'progress', requests, unique: receipts.size });
  } else if (message?.type === 'final') {
    const stats = finalStats(message.committed ?? []);
    receipts = new Map();
    requests = 0;
    duplicates = 0;
    malformed = 0;
    process.send?.({ type: 'final', stats });
  }
});

server.listen(0, '127.0.0.1', () => {
  const { port } = server.address() as AddressInfo;
  process.send?.({ type: 'listening', port });
});
process.on('SIGTERM', () => {
  server.close();
  server.closeAllConnections();
  process.exit(0);
});
