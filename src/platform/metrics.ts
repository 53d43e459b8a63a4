import { collectDefaultMetrics, Registry } from 'prom-client';

/**
 * A minimal Prometheus text exporter: counters, gauges computed at scrape time, and histograms.
 * One registry per process; `/metrics` renders it, followed by prom-client's default process and
 * Node.js runtime metrics (process_cpu_*, process_resident_memory_bytes, nodejs_eventloop_lag_*,
 * nodejs_heap_*, nodejs_gc_duration_seconds, ...; docs/operations.md "Metrics").
 */
type Labels = Record<string, string>;

function labelText(labels: Labels): string {
  const parts = Object.entries(labels).map(([k, v]) => `${k}="${v.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n')}"`);
  return parts.length ? `{${parts.join(',')}}` : '';
}

export class Counter {
  private values = new Map<string, { labels: Labels; value: number }>();
  constructor(
    readonly name: string,
    readonly help: string,
  ) {}
  inc(labels: Labels = {}, by = 1): void {
    const key = labelText(labels);
    const cur = this.values.get(key);
    if (cur) cur.value += by;
    else this.values.set(key, { labels, value: by });
  }
  render(): string {
    const lines = [`# HELP ${this.name} ${this.help}`, `# TYPE ${this.name} counter`];
    for (const { labels, value } of this.values.values()) lines.push(`${this.name}${labelText(labels)} ${value}`);
    return lines.join('\n');
  }
}

export class Histogram {
  private series = new Map<string, { labels: Labels; counts: number[]; sum: number; count: number }>();
  constructor(
    readonly name: string,
    readonly help: string,
    readonly buckets: number[],
  ) {}
  observe(value: number, labels: Labels = {}): void {
    const key = labelText(labels);
    let s = this.series.get(key);
    if (!s) {
      s = { labels, counts: this.buckets.map(() => 0), sum: 0, count: 0 };
      this.series.set(key, s);
    }
    for (let i = 0; i < this.buckets.length; i++) if (value <= this.buckets[i]) s.counts[i]++;
    s.sum += value;
    s.count++;
  }
  render(): string {
    const lines = [`# HELP ${this.name} ${this.help}`, `# TYPE ${this.name} histogram`];
    for (const s of this.series.values()) {
      this.buckets.forEach((b, i) => lines.push(`${this.name}_bucket${labelText({ ...s.labels, le: String(b) })} ${s.counts[i]}`));
      lines.push(`${this.name}_bucket${labelText({ ...s.labels, le: '+Inf' })} ${s.count}`);
      lines.push(`${this.name}_sum${labelText(s.labels)} ${s.sum}`);
      lines.push(`${this.name}_count${labelText(s.labels)} ${s.count}`);
    }
    return lines.join('\n');
  }
}

export type GaugeCollector = () => Promise<{ name: string; help: string; samples: { labels?: Labels; value: number }[] }[]>;

export class MetricsRegistry {
  private metrics: (Counter | Histogram)[] = [];
  private collectors: GaugeCollector[] = [];
  /** prom-client's own registry, for its default metrics only (our names stay ours). */
  private runtime = new Registry();
  constructor() {
    collectDefaultMetrics({ register: this.runtime });
  }
  counter(name: string, help: string): Counter {
    const c = new Counter(name, help);
    this.metrics.push(c);
    return c;
  }
  histogram(name: string, help: string, buckets: number[]): Histogram {
    const h = new Histogram(name, help, buckets);
    this.metrics.push(h);
    return h;
  }
  collect(collector: GaugeCollector): void {
    this.collectors.push(collector);
  }
  async render(): Promise<string> {
    const parts = this.metrics.map((m) => m.render());
    for (const collector of this.collectors) {
      for (const g of await collector()) {
        parts.push(
          [`# HELP ${g.name} ${g.help}`, `# TYPE ${g.name} gauge`, ...g.samples.map((s) => `${g.name}${labelText(s.labels ?? {})} ${s.value}`)].join(
            '\n',
          ),
        );
      }
    }
    // prom-client separates its metrics with blank lines; ours never had any.
    parts.push(
      (await this.runtime.metrics())
        .split('\n')
        .filter((line) => line !== '')
        .join('\n'),
    );
    return `${parts.join('\n')}\n`;
  }
}
