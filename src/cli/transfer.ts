import fs from 'node:fs';
import readline from 'node:readline';
import { once } from 'node:events';
import { parseArgs } from 'node:util';
import { createGunzip, createGzip } from 'node:zlib';
import type { Readable, Writable } from 'node:stream';
import { loadConfig } from '../config.ts';
import { createLogger, createRuntime, DataDirBusyError } from '../runtime.ts';
import { keyId } from '../platform/secrets.ts';
import { exportDatabase, importDatabase, TransferError, type ExportTrailer, type TransferProgress } from '../platform/db/transfer.ts';

/**
 * `recaudo export [--out FILE]` and `recaudo import [--in FILE]` (docs/deploy.md "Moving from the
 * embedded engine to PostgreSQL"): the database named by DATA_DIR / DATABASE_URL, to or from a
 * JSON-lines file (gzip when the name ends in .gz; stdout / stdin without one). Progress on stderr.
 * Both open the database as every command does (migrating it to this release first); the embedded
 * engine's data directory must not be held by a running server (one process owns it).
 */

const USAGE_ERROR = 2;

function progressOnStderr(): TransferProgress {
  return {
    rows(table, done, finished) {
      if (done > 0) process.stderr.write(`${finished ? '' : '  '}${table}: ${done.toLocaleString('en-US')} rows${finished ? '' : ' so far'}\n`);
    },
  };
}

async function openRuntime() {
  const config = loadConfig();
  const logger = createLogger({ ...config, logLevel: process.env.LOG_LEVEL ?? 'warn' }, 'recaudo-cli');
  return { config, runtime: await createRuntime(config, { role: 'cli', logger }) };
}

async function runExport(args: string[]): Promise<void> {
  const { values } = parseArgs({ args, options: { out: { type: 'string' } }, strict: true });
  const target = values.out && values.out !== '-' ? values.out : null;
  const partial = target ? `${target}.partial` : null;
  let sink: Writable = partial ? fs.createWriteStream(partial, { mode: 0o600 }) : process.stdout;
  const file = sink;
  if (target?.endsWith('.gz')) {
    const gzip = createGzip();
    gzip.pipe(file);
    sink = gzip;
  }
  const write = async (line: string) => {
    if (!sink.write(`${line}\n`)) await once(sink, 'drain');
  };

  const started = Date.now();
  const { config, runtime } = await openRuntime();
  let trailer: ExportTrailer;
  try {
    trailer = await exportDatabase(runtime.deps.database.db, runtime.deps.database.engine, write, progressOnStderr());
  } catch (error) {
    if (partial) fs.rmSync(partial, { force: true });
    throw error;
  } finally {
    await runtime.close();
  }
  if (file !== process.stdout) {
    sink.end();
    await once(file, 'close');
    fs.renameSync(partial!, target!);
  }
  const rows = Object.values(trailer.tables).reduce((a, b) => a + b, 0);
  const from = config.databaseUrl ? 'PostgreSQL' : config.dataDir;
  process.stderr.write(
    `exported ${Object.keys(trailer.tables).length} tables, ${rows.toLocaleString('en-US')} rows from ${from}` +
      `${target ? ` to ${target}` : ''} in ${((Date.now() - started) / 1000).toFixed(1)} s\n`,
  );
  if (trailer.sealed_key_ids.length) {
    process.stderr.write(
      `secrets in it are sealed under key ${trailer.sealed_key_ids.join(', ')}: the importing side needs that key ` +
        `(SECRETS_KEY, or this data directory's secrets.key; docs/deploy.md)\n`,
    );
  }
}

async function runImport(args: string[]): Promise<void> {
  const { values } = parseArgs({ args, options: { in: { type: 'string' } }, strict: true });
  const source = values.in && values.in !== '-' ? values.in : null;
  if (source && !fs.existsSync(source)) throw new TransferError(`no such file: ${source}`);

  const started = Date.now();
  const { config, runtime } = await openRuntime();
  // Opened only now: readline hands out lines as they are read, and none may pass before the
  // import iterates them.
  let input: Readable = source ? fs.createReadStream(source) : process.stdin;
  if (source?.endsWith('.gz')) input = input.pipe(createGunzip());
  const lines = readline.createInterface({ input, crlfDelay: Infinity });
  try {
    const { secrets } = runtime.deps;
    const held = [secrets.current, ...secrets.opening].map(keyId);
    const { header, trailer } = await importDatabase(runtime.deps.database.db, lines, progressOnStderr(), {
      // Before the commit: secrets this side cannot open would make the copy useless.
      beforeCommit(trailer) {
        const missing = trailer.sealed_key_ids.filter((id) => !held.includes(id));
        if (missing.length) {
          throw new TransferError(
            `the export's secrets are sealed under key ${missing.join(', ')}, which this process does not hold: set SECRETS_KEY ` +
              `to the source's key (its SECRETS_KEY, or the data directory's secrets.key) and import again; nothing was imported`,
          );
        }
      },
    });
    const rows = Object.values(trailer.tables).reduce((a, b) => a + b, 0);
    const into = config.databaseUrl ? 'PostgreSQL' : config.dataDir;
    process.stderr.write(
      `imported ${Object.keys(trailer.tables).length} tables, ${rows.toLocaleString('en-US')} rows (exported from ${header.engine} ` +
        `at ${header.exported_at}) into ${into} in ${((Date.now() - started) / 1000).toFixed(1)} s\n`,
    );
  } finally {
    lines.close();
    await runtime.close();
  }
}

/** Runs `recaudo export|import ARGS`; a refusal is said on stderr with exit code 2. */
export async function runTransfer(command: 'export' | 'import', args: string[]): Promise<void> {
  try {
    await (command === 'export' ? runExport(args) : runImport(args));
  } catch (error) {
    if (!(error instanceof TransferError || error instanceof DataDirBusyError || (error as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')))
      throw error;
    process.stderr.write(`recaudo: ${(error as Error).message}\n`);
    process.exitCode = USAGE_ERROR;
  }
}
