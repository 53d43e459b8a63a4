import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { sql } from 'kysely';
import { PNG } from 'pngjs';
import { send, type Company, type Harness } from '../harness.ts';
import { createCompany } from '../../src/modules/companies/service.ts';
import { DISPATCH_JOB, runCampaignDispatch } from '../../src/modules/campaigns/dispatch.ts';
import { prefixedId } from '../../src/platform/ids.ts';

/** A company with the campaigns feature (the operator's `--feature campaigns`). */
export async function campaignCompany(h: Harness, name = 'Campañas SAS'): Promise<Company> {
  const created = await createCompany(h.runtime.deps.database.db, { name, features: ['campaigns'] }, h.clock.now());
  return { ...created, req: (opts) => send(h.app, { ...opts, key: opts.key === undefined ? created.keys[opts.env ?? 'test'] : opts.key }) };
}

/** A PNG of the given size, made by pngjs (a flat colour: small and quick). */
export function pngBytes(width: number, height: number): Buffer {
  const png = new PNG({ width, height });
  png.data.fill(0x80);
  return PNG.sync.write(png, { deflateLevel: 1 });
}

/**
 * The head of a baseline JPEG written by hand: SOI, an APP0 (JFIF) segment, a DQT-like filler
 * segment, SOF0 with the frame size, then SOS and a few bytes of "image data" and EOI. Enough for
 * a reader of headers; no decoder would show a picture.
 */
export function jpegBytes(width: number, height: number, opts: { padTo?: number } = {}): Buffer {
  const segment = (marker: number, payload: number[]) => [0xff, marker, ((payload.length + 2) >> 8) & 255, (payload.length + 2) & 255, ...payload];
  const bytes = [
    0xff,
    0xd8,
    ...segment(0xe0, [0x4a, 0x46, 0x49, 0x46, 0x00, 1, 1, 0, 0, 1, 0, 1, 0, 0]),
    ...segment(0xdb, [0, ...Array<number>(64).fill(1)]),
    ...segment(0xc0, [8, (height >> 8) & 255, height & 255, (width >> 8) & 255, width & 255, 3, 1, 0x22, 0, 2, 0x11, 1, 3, 0x11, 1]),
    ...segment(0xda, [3, 1, 0, 2, 0x11, 3, 0x11, 0, 0x3f, 0]),
    0x12,
    0x34,
    0xff,
    0xd9,
  ];
  const out = Buffer.from(bytes);
  return opts.padTo && opts.padTo > out.length ? Buffer.concat([out, Buffer.alloc(opts.padTo - out.length)]) : out;
}

/** An MP4's first box (ftyp, brand isom with its compatible brands) and an empty mdat, padded to `size`. */
export function mp4Bytes(size = 64, brand = 'isom'): Buffer {
  const ftyp = Buffer.alloc(32);
  ftyp.writeUInt32BE(32, 0);
  ftyp.write('ftyp', 4, 'latin1');
  ftyp.write(brand, 8, 'latin1');
  ftyp.writeUInt32BE(0x200, 12);
  ftyp.write(brand, 16, 'latin1');
  ftyp.write('iso2', 20, 'latin1');
  ftyp.write('avc1', 24, 'latin1');
  ftyp.write('mp41', 28, 'latin1');
  const rest = Math.max(8, size - 32);
  const mdat = Buffer.alloc(rest);
  mdat.writeUInt32BE(rest, 0);
  mdat.write('mdat', 4, 'latin1');
  return Buffer.concat([ftyp, mdat]);
}

export interface MediaRoute {
  status?: number;
  body?: Buffer;
  contentType?: string;
  headers?: Record<string, string>;
  /** Never answer (the deadline test). */
  hang?: boolean;
  /** Send the body without Content-Length, in chunks (the cap must stop reading). */
  chunked?: boolean;
}

/** A local HTTP server of media files for one test file; counts requests per path. */
export async function startMediaServer(): Promise<{
  url(path: string): string;
  route(path: string, r: MediaRoute): void;
  hits: Map<string, number>;
  close(): Promise<void>;
}> {
  const routes = new Map<string, MediaRoute>();
  const hits = new Map<string, number>();
  const hanging = new Set<http.ServerResponse>();
  const server = http.createServer((req, res) => {
    const path = req.url ?? '/';
    hits.set(path, (hits.get(path) ?? 0) + 1);
    const r = routes.get(path);
    if (!r) {
      res.writeHead(404).end('not found');
      return;
    }
    if (r.hang) {
      hanging.add(res);
      return;
    }
    const body = r.body ?? Buffer.alloc(0);
    const headers: Record<string, string> = { 'content-type': r.contentType ?? 'application/octet-stream', ...r.headers };
    if (!r.chunked) headers['content-length'] = String(body.length);
    res.writeHead(r.status ?? 200, headers);
    if (!r.chunked) {
      res.end(body);
      return;
    }
    let i = 0;
    const step = 256 * 1024;
    const pump = () => {
      if (res.destroyed) return;
      if (i >= body.length) return void res.end();
      res.write(body.subarray(i, i + step));
      i += step;
      setImmediate(pump);
    };
    pump();
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  const { port } = server.address() as AddressInfo;
  return {
    url: (path) => `http://127.0.0.1:${port}${path}`,
    route: (path, r) => void routes.set(path, r),
    hits,
    async close() {
      for (const res of hanging) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((done) => server.close(() => done()));
    },
  };
}

/**
 * Runs the campaign dispatcher jobs of `company` that are due at the harness clock, directly (the
 * PostgreSQL test database is shared: another file's jobs are not ours to run), as the queue would:
 * each job deleted once its handler returns. Repeats while runs are due; answers how many ran.
 */
export async function runDueDispatches(h: Harness, company: Company, max = 50): Promise<number> {
  const db = h.runtime.deps.database.db;
  let ran = 0;
  for (; ran < max; ran++) {
    const job = await db
      .selectFrom('jobs')
      .select(['id', 'payload'])
      .where('kind', '=', DISPATCH_JOB)
      .where(sql<string>`payload->>'company_id'`, '=', company.company.id)
      .where('run_at', '<=', h.clock.now())
      .orderBy('run_at')
      .executeTakeFirst();
    if (!job) break;
    const payload = typeof job.payload === 'string' ? (JSON.parse(job.payload) as Record<string, unknown>) : job.payload;
    await runCampaignDispatch(h.runtime.deps, payload);
    await db.deleteFrom('jobs').where('id', '=', job.id).execute();
  }
  await h.runtime.deps.rails.test.messaging.idle();
  return ran;
}

/** When the company's next dispatcher run is scheduled (null: idle). */
export async function nextDispatchAt(h: Harness, company: Company): Promise<Date | null> {
  const row = await h.runtime.deps.database.db
    .selectFrom('jobs')
    .select('run_at')
    .where('kind', '=', DISPATCH_JOB)
    .where(sql<string>`payload->>'company_id'`, '=', company.company.id)
    .orderBy('run_at', 'desc')
    .executeTakeFirst();
  return row ? new Date(row.run_at) : null;
}

/**
 * A queued campaign of `company` with two messages, written straight into its tables (for the
 * fuzz's fixtures: its companies have no campaigns feature and no media server).
 */
export async function insertCampaignFixture(h: Harness, company: Company, tag: string): Promise<string> {
  const db = h.runtime.deps.database.db;
  const now = h.clock.now();
  const scope = { company_id: company.company.id, environment: 'test' as const };
  const id = prefixedId('camp', now.getTime());
  await db
    .insertInto('campaigns')
    .values({
      ...scope,
      id,
      status: 'queued',
      template_id: 'tpl_cobro_factura',
      media_type: 'image',
      media_url: `https://cdn.example.com/${tag}.png`,
      media_content_type: 'image/png',
      media_bytes: 1234,
      media_width: 800,
      media_height: 600,
      optional_1: `Campaña ${tag}`,
      optional_2: null,
      optional_3: null,
      recipients: 2,
      rejected: '[]',
      created_at: now,
      updated_at: now,
      completed_at: null,
      cancelled_at: null,
    })
    .execute();
  await db
    .insertInto('campaign_messages')
    .values(
      ['+573001110001', '+573001110002'].map((recipient) => ({
        ...scope,
        id: prefixedId('cmsg', now.getTime()),
        campaign_id: id,
        recipient,
        status: 'queued' as const,
        created_at: now,
        updated_at: now,
      })),
    )
    .execute();
  return id;
}
