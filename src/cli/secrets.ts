import fs from 'node:fs';
import type { Config } from '../config.ts';
import { sealedColumns } from '../modules/index.ts';
import { readLock } from '../platform/db/data-dir-lock.ts';
import { PLATFORM_SEALED_COLUMNS, resealColumns, sealedInventory, type ColumnReport } from '../platform/secret-columns.ts';
import { ensureKeyFile, keyFilePath, keyId, nextKeyFilePath, parseKey, readKeyFile, type Keyring } from '../platform/secrets.ts';
import type { Runtime } from '../runtime.ts';

/**
 * `recaudo secrets status|seal|rotate-key` (docs/operations.md "Secrets at rest"). They work on
 * the database directly: with the embedded engine the data directory must be free (stop the
 * server), since re-sealing changes what the running server's key can open.
 */

export class SecretsCommandError extends Error {}

export const ALL_SEALED_COLUMNS = [...sealedColumns, ...PLATFORM_SEALED_COLUMNS];

export function requireFreeDataDir(config: Config): void {
  if (config.databaseUrl) return;
  const holder = readLock(config.dataDir);
  if (holder)
    throw new SecretsCommandError(
      `the data directory ${config.dataDir} is in use by a Recaudo ${holder.role} (pid ${holder.pid}): stop it first, then run this again`,
    );
}

export interface SecretsStatus {
  source: Keyring['source'];
  key_id: string;
  opening_key_ids: string[];
  key_file: string | null;
  columns: { column: string; by: Record<string, number> }[];
}

export async function secretsStatus(runtime: Runtime): Promise<SecretsStatus> {
  const keys = runtime.deps.secrets;
  return {
    source: keys.source,
    key_id: keyId(keys.current),
    opening_key_ids: keys.opening.map(keyId),
    key_file: keys.file ?? null,
    columns: await sealedInventory(runtime.deps.database.db, ALL_SEALED_COLUMNS),
  };
}

/** Every value not sealed under the current key (clear, previous key, development key) is sealed under it. */
export async function sealAll(runtime: Runtime, progress: (line: string) => void, batchSize: number): Promise<ColumnReport[]> {
  return resealColumns(runtime.deps.database.db, ALL_SEALED_COLUMNS, runtime.deps.secrets, { batchSize, progress });
}

/**
 * The rotation's new key: `--new-key-file`, else SECRETS_KEY_NEW, else (the embedded default's key
 * file, no SECRETS_KEY) a new key file `secrets.key.next` beside the current one (kept if a rotation
 * that stopped half-way left one, so its values still open).
 */
export function rotationTarget(
  config: Config,
  keys: Keyring,
  opts: { newKeyFile?: string; env: NodeJS.ProcessEnv },
): { key: Buffer; nextFile: string | null } {
  if (opts.newKeyFile) return { key: readKeyFile(opts.newKeyFile), nextFile: null };
  const fromEnv = parseKey(opts.env.SECRETS_KEY_NEW, 'SECRETS_KEY_NEW');
  if (fromEnv) return { key: fromEnv, nextFile: null };
  if (keys.source === 'file') {
    const nextFile = nextKeyFilePath(config.dataDir);
    return { key: ensureKeyFile(nextFile).key, nextFile };
  }
  throw new SecretsCommandError(
    'give the new key as SECRETS_KEY_NEW (or --new-key-file PATH); `recaudo secrets generate-key` prints one. ' +
      'To finish a rotation already deployed (SECRETS_KEY=new, SECRETS_KEY_PREVIOUS=old) run `recaudo secrets seal` instead.',
  );
}

export async function rotateAll(
  runtime: Runtime,
  target: { key: Buffer; nextFile: string | null },
  progress: (line: string) => void,
  batchSize: number,
): Promise<ColumnReport[]> {
  const old = runtime.deps.secrets;
  const keyring: Keyring = {
    current: target.key,
    opening: [old.current, ...old.opening].filter((k) => !k.equals(target.key)),
    source: old.source,
  };
  return resealColumns(runtime.deps.database.db, ALL_SEALED_COLUMNS, keyring, { batchSize, progress });
}

/** The key-file rotation's last step, once every value is under the next key: it becomes the key file. */
export function promoteNextKeyFile(config: Config): void {
  fs.renameSync(nextKeyFilePath(config.dataDir), keyFilePath(config.dataDir));
}

function writeReports(reports: ColumnReport[], json: boolean, extra: Record<string, unknown>): boolean {
  const unreadable = reports.reduce((n, r) => n + r.unreadable, 0);
  const sealed = reports.reduce((n, r) => n + r.sealed, 0);
  if (json) process.stdout.write(`${JSON.stringify({ ...extra, sealed, unreadable, columns: reports })}\n`);
  else {
    for (const r of reports)
      if (r.sealed || r.unreadable || r.remaining)
        process.stdout.write(`${r.column}: ${r.sealed} sealed, ${r.unreadable} unreadable, ${r.remaining} left\n`);
    process.stdout.write(
      `${sealed} value(s) sealed under key ${String(extra.key_id)}${unreadable ? `; ${unreadable} could not be opened (see above)` : ''}\n`,
    );
  }
  return unreadable === 0 && reports.every((r) => r.remaining === 0);
}

/** `recaudo secrets ...`: returns the exit code. */
export async function runSecretsCommand(action: string | undefined, args: string[]): Promise<number> {
  const { parseArgs } = await import('node:util');
  const { values } = parseArgs({
    args,
    options: { json: { type: 'boolean' }, 'new-key-file': { type: 'string' }, 'batch-size': { type: 'string' } },
    strict: true,
  });
  if (action === 'generate-key') {
    const { generateKeyText } = await import('../platform/secrets.ts');
    process.stdout.write(`${generateKeyText()}\n`);
    return 0;
  }
  if (action !== 'status' && action !== 'seal' && action !== 'rotate-key') throw new SecretsCommandError(`unknown secrets command: ${action ?? ''}`);
  const batchSize = values['batch-size'] === undefined ? 500 : Number(values['batch-size']);
  if (!Number.isInteger(batchSize) || batchSize < 1 || batchSize > 100_000) throw new SecretsCommandError('--batch-size must be 1 to 100000');
  const { loadConfig } = await import('../config.ts');
  const { createLogger, createRuntime } = await import('../runtime.ts');
  const config = loadConfig();
  requireFreeDataDir(config);
  const logger = createLogger({ ...config, logLevel: process.env.LOG_LEVEL ?? 'warn' }, 'recaudo-cli', process.stderr); // stdout is the command's answer
  const runtime = await createRuntime(config, { role: 'cli', logger });
  let open = true;
  const close = async () => {
    if (open) {
      open = false;
      await runtime.close();
    }
  };
  const progress = (line: string) => process.stderr.write(`${line}\n`);
  try {
    if (action === 'status') {
      const status = await secretsStatus(runtime);
      if (values.json) process.stdout.write(`${JSON.stringify(status)}\n`);
      else {
        process.stdout.write(
          `sealing key ${status.key_id} (${status.source}${status.key_file ? ` ${status.key_file}` : ''}); also opens: ${status.opening_key_ids.join(', ') || 'none'}\n`,
        );
        for (const c of status.columns) {
          const parts = Object.entries(c.by).map(([k, n]) => `${k === 'clear' ? 'clear' : `key ${k}`}: ${n}`);
          process.stdout.write(`  ${c.column}: ${parts.join(', ') || 'empty'}\n`);
        }
      }
      return 0;
    }
    if (action === 'seal') {
      const reports = await sealAll(runtime, progress, batchSize);
      return writeReports(reports, !!values.json, { key_id: keyId(runtime.deps.secrets.current) }) ? 0 : 1;
    }
    const target = rotationTarget(config, runtime.deps.secrets, { newKeyFile: values['new-key-file'], env: process.env });
    progress(`re-sealing every secret under key ${keyId(target.key)} (was ${keyId(runtime.deps.secrets.current)})`);
    const reports = await rotateAll(runtime, target, progress, batchSize);
    const complete = writeReports(reports, !!values.json, { key_id: keyId(target.key) });
    if (!complete) {
      progress('not every value was re-sealed: the old key is still needed (run again once the values above are fixed or removed)');
      return 1;
    }
    if (target.nextFile) {
      await close();
      promoteNextKeyFile(config);
      progress(`the key file ${keyFilePath(config.dataDir)} now holds the new key; the old key is no longer needed`);
    } else {
      progress('now set SECRETS_KEY to the new key on every process and remove SECRETS_KEY_PREVIOUS: the old key is no longer needed');
    }
    return 0;
  } finally {
    await close();
  }
}
