import http from 'node:http';
import { parseArgs } from 'node:util';
import { loadConfig } from '../config.ts';
import { createLogger, createRuntime, DataDirBusyError } from '../runtime.ts';
import { readLock } from '../platform/db/data-dir-lock.ts';
import fs from 'node:fs';
import {
  createCompany,
  createNamedKey,
  revokeKeyById,
  rotateKey,
  setCompany,
  validateCompanyInput,
  OperatorInputError,
} from '../modules/companies/service.ts';
import { setFiscalProfile, showFiscalProfile } from '../modules/fiscal/operator.ts';
import { importRanges, type ImportRangesOutput } from '../modules/fiscal/import-ranges.ts';
import { setConnector, showConnector } from '../modules/connectors/operator.ts';
import { setPayoutAccountOperator } from '../modules/cashouts/operator.ts';
import { setAllowedOriginsOperator } from '../modules/companies/operator.ts';
import { JobOperatorError, listJobs, retryJob, type JobView } from '../platform/jobs/operator.ts';
import { testClockOperator, type TestClockCommand } from '../modules/test-clocks/operator.ts';
import { reviewOnboarding } from '../modules/onboarding/service.ts';
import { runTransfer } from './transfer.ts';
import { retentionRules } from '../modules/index.ts';
import { RetentionInputError, runRetentionOperator, type RetentionRunOutput } from '../platform/retention/operator.ts';
import { runSecretsCommand, SecretsCommandError } from './secrets.ts';
import { describeKeys, listen, ToolError, trigger } from './tools.ts';
import { listKeysOperator } from '../modules/companies/operator.ts';

const USAGE = `recaudo — operator commands

  recaudo companies create --name "Acme SAS" [--nit 900123456] [--feature campaigns ...] [--json]
  recaudo companies set --company ID --approval-threshold PESOS|none [--json]
  recaudo companies set --company ID --env test|live --payout-account ACCOUNT_ID [--json]
                                 cash-outs above the threshold wait for approval (docs/cashouts.md)
  recaudo companies set --company ID --platform true|false [--json]
  recaudo companies set --company ID --env test|live --allowed-origins https://a.example,https://b.example [--json]
                                 browser origins allowed to call POST /v1/tokens (CORS; empty clears)
                                 a platform's keys may onboard companies (POST /v1/companies, docs/companies.md)
  recaudo companies review --company ID --start|--approve|--reject [--reason TEXT] [--json]
                                 review a company a platform onboarded (pending → in_review → active | rejected)
  recaudo keys rotate --company ID --env test|live [--publishable] [--json]
  recaudo keys list --company ID [--env test|live] [--json]
  recaudo keys create --company ID --env test|live [--name N] [--json]   one more secret key (its own principal)
  recaudo keys revoke --company ID --key KEY_ID [--json]
                                 the company's keys: prefix, environment, kind, created, revoked (never the key)
  recaudo listen --forward-to URL [--api-key sk_test_...] [--api-url URL] [--events a,b] [--since ISO]
      [--secret S] [--token T] [--payload-format standard|legacy] [--max-events N]
                                 re-post each new test event, signed like a webhook delivery, to a local URL
  recaudo trigger EVENT [--api-key sk_test_...] [--api-url URL] [--json]
                                 cause a test event through the API: charge.paid, charge.failed, charge.refunded,
                                 payment.created, payment.deleted
  recaudo fiscal-profile show --company ID --env test|live [--json]
  recaudo fiscal-profile set --company ID --env test|live [--nit DIGITS --dv D --legal-name NAME
      --trade-name NAME --address LINE --city-code DIVIPOLA --email E --phone P
      --responsibilities O-13,O-15 --tax-regime 48 --software-id ID --software-pin PIN
      --certificate file.p12 --certificate-password-file FILE --software-pin-file FILE
      --dian-endpoint habilitacion|produccion|URL --dian-mode sync|async|test_set
      --dian-test-set-id ID --dian-timeout-ms MS] [--json]
  recaudo fiscal import-ranges --company ID --env test|live [--account-code NIT]
      [--account-code-t NIT] [--software-code ID] [--json]
                                 load DIAN's numbering ranges (GetNumberingRange) as draft resolutions
  recaudo connectors show --company ID --env test|live [--name wompi] [--json]
  recaudo connectors set --company ID --env test|live [--name wompi] [--provider-environment sandbox|production]
      [--public-key K] [--private-key K] [--events-secret S] [--integrity-secret S] [--rails card,...]
      [--payouts-api-key K --payouts-user-principal-id ID --payouts-events-secret S --payouts-account-id ID] [--json]
                                 a payment provider account for the environment (docs/connectors.md); secrets write-only
  recaudo test-clock create --company ID --frozen-time UNIX|ISO [--name NAME] [--json]
  recaudo test-clock advance --company ID --clock ID --frozen-time UNIX|ISO [--json]
                                 simulated time for test customers (docs/subscriptions.md "Test clocks")
  recaudo jobs list [--dead] [--kind KIND] [--limit N] [--json]
                                 background jobs (--dead: out of attempts, never run again by themselves)
  recaudo jobs retry ID [--json] put a dead job back in the queue, due now, with fresh attempts
  recaudo retention run [--budget SECONDS] [--json]
                                 sweep old data once now (docs/operations.md "Retention"); progress on stderr
  recaudo secrets status [--json]  which key seals secrets at rest, and how many values are under each key
  recaudo secrets seal [--batch-size N] [--json]
                                 seal every secret not under the current key (clear values, SECRETS_KEY_PREVIOUS)
  recaudo secrets rotate-key [--new-key-file PATH] [--batch-size N] [--json]
                                 re-seal every secret under SECRETS_KEY_NEW (or the file; embedded default: a new
                                 key file), progress on stderr (docs/operations.md "Secrets at rest")
  recaudo secrets generate-key   print a new random key for SECRETS_KEY
  recaudo migrate
  recaudo export [--out FILE]    every table to a JSON-lines file (.gz: compressed; none: stdout)
  recaudo import [--in FILE]     load an export into a fresh database at the same migration
                                 (moving from the embedded engine to PostgreSQL: docs/deploy.md)
  recaudo worker                 run only the background workers

Uses the same DATA_DIR / DATABASE_URL as the server. With the embedded database, when a server
owns the data directory the command is sent to that server through its control socket.`;

class UsageError extends Error {}

function callServer(socketPath: string, path: string, body: unknown): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const req = http.request({ socketPath, path, method: 'POST', headers: { 'content-type': 'application/json' } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => {
        const parsed = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}');
        if (res.statusCode === 200) resolve(parsed);
        else reject(res.statusCode === 400 ? new OperatorInputError(parsed.error) : new Error(parsed.error ?? `server answered ${res.statusCode}`));
      });
    });
    req.on('error', reject);
    req.end(JSON.stringify(body));
  });
}

/** Runs an operator action against the database: directly, or through the server that owns it. */
async function withDatabase<T>(
  path: string,
  body: unknown,
  direct: (db: Awaited<ReturnType<typeof createRuntime>>['deps']) => Promise<T>,
): Promise<T> {
  const config = loadConfig();
  if (!config.databaseUrl) {
    const holder = readLock(config.dataDir);
    if (holder?.role === 'server' && holder.socket) return (await callServer(holder.socket, path, body)) as T;
    if (holder) throw new DataDirBusyError(config.dataDir, holder);
  }
  const logger = createLogger({ ...config, logLevel: process.env.LOG_LEVEL ?? 'warn' }, 'recaudo-cli', process.stderr); // stdout is the command's answer
  const runtime = await createRuntime(config, { role: 'cli', logger });
  try {
    return await direct(runtime.deps);
  } finally {
    await runtime.close();
  }
}

/** A secret passed as a file: its content without the trailing newline an editor or `echo` adds. */
function readSecretFile(file: string, flag: string): string {
  try {
    return fs.readFileSync(file, 'utf8').replace(/\r?\n$/, '');
  } catch (error) {
    throw new OperatorInputError(`cannot read ${flag} ${file}: ${(error as Error).message}`);
  }
}

function print(json: boolean, value: unknown, human: string): void {
  process.stdout.write(json ? `${JSON.stringify(value)}\n` : `${human}\n`);
}

async function run(argv: string[]): Promise<void> {
  const [group, action, ...rest] = argv;
  if (!group || group === 'help' || group === '--help' || group === '-h') {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  if (group === 'worker') {
    process.argv[2] = 'worker';
    await import('../main.ts');
    return;
  }
  if (group === 'secrets') {
    process.exitCode = await runSecretsCommand(action, rest);
    return;
  }
  if (group === 'export' || group === 'import') {
    await runTransfer(group, argv.slice(1));
    return;
  }
  if (group === 'migrate') {
    await withDatabase('/none', {}, async () => undefined);
    process.stderr.write('migrations applied\n');
    return;
  }
  if (group === 'companies' && action === 'create') {
    const { values } = parseArgs({
      args: rest,
      options: { name: { type: 'string' }, nit: { type: 'string' }, feature: { type: 'string', multiple: true }, json: { type: 'boolean' } },
      strict: true,
    });
    const input = { name: values.name ?? '', nit: values.nit, features: values.feature ?? [] };
    validateCompanyInput(input);
    if (!values.json) process.stderr.write('creating company...\n');
    const out = await withDatabase('/companies', input, (deps) => createCompany(deps.database.db, input, deps.clock.now()));
    print(
      !!values.json,
      out,
      `company ${out.company.id} (${out.company.name})\n  test key: ${out.keys.test}\n  live key: ${out.keys.live}\n` +
        `  publishable: ${out.publishable_keys.test} / ${out.publishable_keys.live}\nKeys are shown only now; store them safely.`,
    );
    return;
  }
  if (group === 'companies' && action === 'set') {
    const { values } = parseArgs({
      args: rest,
      options: {
        company: { type: 'string' },
        'approval-threshold': { type: 'string' },
        env: { type: 'string' },
        'payout-account': { type: 'string' },
        platform: { type: 'string' },
        'allowed-origins': { type: 'string' },
        json: { type: 'boolean' },
      },
      strict: true,
    });
    if (values['allowed-origins'] !== undefined) {
      if (values['approval-threshold'] !== undefined || values['payout-account'] !== undefined || values.platform !== undefined)
        throw new UsageError('set --allowed-origins in a command of its own');
      const input = { company: values.company, env: values.env, origins: values['allowed-origins'] };
      const out = await withDatabase('/companies/allowed-origins', input, (deps) =>
        setAllowedOriginsOperator(deps.database.db, input, deps.clock.now()),
      );
      const list = out.allowed_origins.length ? out.allowed_origins.join(', ') : '(none)';
      print(!!values.json, out, `company ${out.company.id} (${out.environment}): browsers may create card tokens from ${list}`);
      return;
    }
    if (values['payout-account'] !== undefined) {
      if (values['approval-threshold'] !== undefined) throw new UsageError('set --approval-threshold and --payout-account in two commands');
      const input = { company: values.company, env: values.env, account: values['payout-account'] };
      const out = await withDatabase('/companies/payout-account', input, (deps) => setPayoutAccountOperator(deps, input));
      print(!!values.json, out, `company ${out.company.id} (${out.environment}): POST /balances pays to account ${out.payout_account.account_id}`);
      return;
    }
    const input = { company: values.company, approvalThreshold: values['approval-threshold'], platform: values.platform };
    const out = await withDatabase('/companies/set', input, (deps) => setCompany(deps.database.db, input));
    const t = out.company.cashout_approval_threshold;
    print(
      !!values.json,
      out,
      `company ${out.company.id}: cash-outs above ${t === null ? '(no threshold)' : `COP ${t}`} wait for approval; platform: ${out.company.platform}`,
    );
    return;
  }
  if (group === 'companies' && action === 'review') {
    const { values } = parseArgs({
      args: rest,
      options: {
        company: { type: 'string' },
        start: { type: 'boolean' },
        approve: { type: 'boolean' },
        reject: { type: 'boolean' },
        reason: { type: 'string' },
        json: { type: 'boolean' },
      },
      strict: true,
    });
    const chosen = (['start', 'approve', 'reject'] as const).filter((a) => values[a]);
    if (chosen.length !== 1) throw new UsageError('pass exactly one of --start, --approve, --reject');
    const input = { company: values.company, action: chosen[0], reason: values.reason };
    const out = await withDatabase('/companies/review', input, (deps) => reviewOnboarding(deps, deps.database.db, input));
    print(!!values.json, out, `company ${out.company.id} (onboarded by ${out.platform}): ${out.company.status}`);
    return;
  }
  if (group === 'keys' && action === 'list') {
    const { values } = parseArgs({
      args: rest,
      options: { company: { type: 'string' }, env: { type: 'string' }, json: { type: 'boolean' } },
      strict: true,
    });
    const input = { company: values.company, env: values.env };
    const out = await withDatabase('/keys/list', input, (deps) => listKeysOperator(deps.database.db, input));
    print(!!values.json, out, describeKeys(out));
    return;
  }
  if (group === 'listen' || group === 'trigger') {
    const args = argv.slice(1);
    process.exitCode = group === 'listen' ? await listen(args) : await trigger(args);
    return;
  }
  if (group === 'keys' && action === 'create') {
    const { values } = parseArgs({
      args: rest,
      options: { company: { type: 'string' }, env: { type: 'string' }, name: { type: 'string' }, json: { type: 'boolean' } },
      strict: true,
    });
    if (!values.company) throw new UsageError('--company is required');
    if (values.env !== 'test' && values.env !== 'live') throw new UsageError('--env must be test or live');
    const input = { company: values.company, env: values.env, name: values.name };
    const out = await withDatabase('/keys/create', input, (deps) => createNamedKey(deps.database.db, input, deps.clock.now()));
    print(
      !!values.json,
      { key: out.key, id: out.id, name: out.name, environment: out.environment, company: out.company },
      `new ${out.environment} secret key "${out.name}" (${out.id}) for ${out.company.id}: ${out.key}\nShown once. The company's other keys keep working; this one is its own principal (it can approve what another key created).`,
    );
    return;
  }
  if (group === 'keys' && action === 'revoke') {
    const { values } = parseArgs({
      args: rest,
      options: { company: { type: 'string' }, key: { type: 'string' }, json: { type: 'boolean' } },
      strict: true,
    });
    const input = { company: values.company, key: values.key };
    const out = await withDatabase('/keys/revoke', input, (deps) => revokeKeyById(deps.database.db, input, deps.clock.now()));
    print(!!values.json, out, `key ${out.id} revoked at ${out.revoked_at}; it stops working within seconds`);
    return;
  }
  if (group === 'keys' && action === 'rotate') {
    const { values } = parseArgs({
      args: rest,
      options: { company: { type: 'string' }, env: { type: 'string' }, publishable: { type: 'boolean' }, json: { type: 'boolean' } },
      strict: true,
    });
    if (!values.company) throw new UsageError('--company is required');
    if (values.env !== 'test' && values.env !== 'live') throw new UsageError('--env must be test or live');
    const env = values.env;
    const kind = values.publishable ? 'publishable' : 'secret';
    const out = await withDatabase('/keys/rotate', { company: values.company, env, kind }, (deps) =>
      rotateKey(deps.database.db, values.company!, env, deps.clock.now(), kind),
    );
    print(!!values.json, out, `new ${env} ${kind} key for ${values.company}: ${out.key}\nThe previous key no longer works.`);
    return;
  }
  if (group === 'fiscal-profile' && (action === 'show' || action === 'set')) {
    const { values } = parseArgs({
      args: rest,
      options: {
        company: { type: 'string' },
        env: { type: 'string' },
        json: { type: 'boolean' },
        nit: { type: 'string' },
        dv: { type: 'string' },
        'legal-name': { type: 'string' },
        'trade-name': { type: 'string' },
        address: { type: 'string' },
        'city-code': { type: 'string' },
        email: { type: 'string' },
        phone: { type: 'string' },
        responsibilities: { type: 'string' },
        'tax-regime': { type: 'string' },
        'software-id': { type: 'string' },
        'software-pin': { type: 'string' },
        certificate: { type: 'string' },
        'certificate-password': { type: 'string' },
        'certificate-password-file': { type: 'string' },
        'software-pin-file': { type: 'string' },
        'dian-endpoint': { type: 'string' },
        'dian-mode': { type: 'string' },
        'dian-test-set-id': { type: 'string' },
        'dian-timeout-ms': { type: 'string' },
      },
      strict: true,
    });
    if (!values.company) throw new UsageError('--company is required');
    if (values.env !== 'test' && values.env !== 'live') throw new UsageError('--env must be test or live');
    const command = { company: values.company, env: values.env };
    if (action === 'show') {
      const out = await withDatabase('/fiscal-profile/show', command, (deps) => showFiscalProfile(deps.database.db, deps.secrets, command));
      print(!!values.json, out, JSON.stringify(out.profile, null, 2));
      return;
    }
    const profile: Record<string, unknown> = {};
    const copy: [string, string][] = [
      ['nit', 'nit'],
      ['dv', 'dv'],
      ['legal-name', 'legal_name'],
      ['trade-name', 'trade_name'],
      ['email', 'email'],
      ['phone', 'phone'],
      ['tax-regime', 'tax_regime'],
      ['software-id', 'software_id'],
      ['software-pin', 'software_pin'],
      ['certificate-password', 'certificate_password'],
    ];
    for (const [flag, field] of copy) if (values[flag as keyof typeof values] !== undefined) profile[field] = values[flag as keyof typeof values];
    if (values.address !== undefined || values['city-code'] !== undefined) {
      if (values.address === undefined || values['city-code'] === undefined) throw new UsageError('--address and --city-code go together');
      profile.address = { line: values.address, city_code: values['city-code'] };
    }
    if (values.responsibilities !== undefined)
      profile.fiscal_responsibilities = values.responsibilities
        .split(',')
        .map((c) => c.trim())
        .filter(Boolean);
    const dian: Record<string, unknown> = {};
    if (values['dian-endpoint'] !== undefined) dian.endpoint = values['dian-endpoint'];
    if (values['dian-mode'] !== undefined) dian.mode = values['dian-mode'];
    if (values['dian-test-set-id'] !== undefined) dian.test_set_id = values['dian-test-set-id'] === '' ? null : values['dian-test-set-id'];
    if (values['dian-timeout-ms'] !== undefined) {
      if (!/^\d{1,9}$/.test(values['dian-timeout-ms'])) throw new UsageError('--dian-timeout-ms must be a number of milliseconds');
      dian.timeout_ms = Number(values['dian-timeout-ms']);
    }
    if (Object.keys(dian).length) profile.dian = dian;
    // Secrets from files, not argv (which other users can read in the process list).
    for (const [flag, fileFlag, field] of [
      ['certificate-password', 'certificate-password-file', 'certificate_password'],
      ['software-pin', 'software-pin-file', 'software_pin'],
    ] as const) {
      if (values[flag] !== undefined && values[fileFlag] !== undefined) throw new UsageError(`give --${flag} or --${fileFlag}, not both`);
      if (values[flag] !== undefined)
        process.stderr.write(`recaudo: --${flag} is deprecated (visible in the process list): use --${fileFlag} FILE\n`);
      if (values[fileFlag] !== undefined) profile[field] = readSecretFile(values[fileFlag]!, `--${fileFlag}`);
    }
    if (values.certificate !== undefined) {
      let bytes: Buffer;
      try {
        bytes = fs.readFileSync(values.certificate);
      } catch (error) {
        throw new OperatorInputError(`cannot read --certificate ${values.certificate}: ${(error as Error).message}`);
      }
      profile.certificate = bytes.toString('base64');
    }
    const input = { ...command, profile };
    const out = await withDatabase('/fiscal-profile/set', input, (deps) => setFiscalProfile(deps.database.db, deps.secrets, input, deps.clock.now()));
    print(!!values.json, out, `fiscal profile of ${out.company.id} (${out.environment}) saved\n${JSON.stringify(out.profile, null, 2)}`);
    return;
  }
  if (group === 'fiscal' && action === 'import-ranges') {
    const { values } = parseArgs({
      args: rest,
      options: {
        company: { type: 'string' },
        env: { type: 'string' },
        json: { type: 'boolean' },
        'account-code': { type: 'string' },
        'account-code-t': { type: 'string' },
        'software-code': { type: 'string' },
      },
      strict: true,
    });
    if (!values.company) throw new UsageError('--company is required');
    if (values.env !== 'test' && values.env !== 'live') throw new UsageError('--env must be test or live');
    const input = {
      company: values.company,
      env: values.env,
      account_code: values['account-code'],
      account_code_t: values['account-code-t'],
      software_code: values['software-code'],
    };
    const progress = (line: string) => process.stderr.write(`${line}\n`);
    let live = false;
    const out = await withDatabase<ImportRangesOutput>('/fiscal/import-ranges', input, (deps) => {
      live = true;
      return importRanges(deps.database.db, input, deps, progress);
    });
    // Through the server's control socket the progress comes back with the answer.
    if (!live) for (const line of out.progress) progress(line);
    print(
      !!values.json,
      { company: out.company, environment: out.environment, ranges_found: out.ranges_found, created: out.created, skipped: out.skipped },
      `${out.created.length} resolution(s) created (draft), ${out.skipped.length} skipped` +
        out.created.map((r) => `\n  ${r.id} ${r.number} ${r.prefix}${r.from}-${r.to} valid ${r.valid_from}..${r.valid_until}`).join(''),
    );
    return;
  }
  if (group === 'connectors' && (action === 'show' || action === 'set')) {
    const { values } = parseArgs({
      args: rest,
      options: {
        company: { type: 'string' },
        env: { type: 'string' },
        name: { type: 'string' },
        json: { type: 'boolean' },
        'provider-environment': { type: 'string' },
        'public-key': { type: 'string' },
        'private-key': { type: 'string' },
        'events-secret': { type: 'string' },
        'integrity-secret': { type: 'string' },
        'payouts-api-key': { type: 'string' },
        'payouts-user-principal-id': { type: 'string' },
        'payouts-events-secret': { type: 'string' },
        'payouts-account-id': { type: 'string' },
        rails: { type: 'string' },
      },
      strict: true,
    });
    if (!values.company) throw new UsageError('--company is required');
    if (values.env !== 'test' && values.env !== 'live') throw new UsageError('--env must be test or live');
    const command = { company: values.company, env: values.env, name: values.name };
    const describe = (c: {
      name: string;
      environment: string;
      provider_environment: string;
      public_key: string;
      rails: string[];
      events_url: string;
      payouts_account_id: string | null;
      payouts_events_url: string;
    }) =>
      `${c.name} (${c.environment} → provider ${c.provider_environment}) public key ${c.public_key}, rails ${c.rails.join(', ')}\nevents URL for the provider's dashboard: ${c.events_url}` +
      (c.payouts_account_id ? `\npayouts from account ${c.payouts_account_id}; payouts events URL: ${c.payouts_events_url}` : '');
    if (action === 'show') {
      const out = await withDatabase('/connectors/show', command, (deps) => showConnector(deps, deps.database.db, command));
      print(!!values.json, out, describe(out.connector));
      return;
    }
    const settings: Record<string, unknown> = {};
    const copy: [string, string][] = [
      ['provider-environment', 'provider_environment'],
      ['public-key', 'public_key'],
      ['private-key', 'private_key'],
      ['events-secret', 'events_secret'],
      ['integrity-secret', 'integrity_secret'],
      ['payouts-api-key', 'payouts_api_key'],
      ['payouts-user-principal-id', 'payouts_user_principal_id'],
      ['payouts-events-secret', 'payouts_events_secret'],
      ['payouts-account-id', 'payouts_account_id'],
    ];
    for (const [flag, field] of copy) if (values[flag as keyof typeof values] !== undefined) settings[field] = values[flag as keyof typeof values];
    if (values.rails !== undefined)
      settings.rails = values.rails
        .split(',')
        .map((r) => r.trim())
        .filter(Boolean);
    const input = { ...command, settings };
    const out = await withDatabase('/connectors/set', input, (deps) => setConnector(deps, deps.database.db, input, deps.clock.now()));
    print(!!values.json, out, `connector saved\n${describe(out.connector)}`);
    return;
  }
  if (group === 'test-clock' && (action === 'create' || action === 'advance')) {
    const { values } = parseArgs({
      args: rest,
      options: {
        company: { type: 'string' },
        clock: { type: 'string' },
        'frozen-time': { type: 'string' },
        name: { type: 'string' },
        json: { type: 'boolean' },
      },
      strict: true,
    });
    if (!values.company) throw new UsageError('--company is required');
    const input: TestClockCommand = { action, company: values.company, clock: values.clock, frozen_time: values['frozen-time'], name: values.name };
    const progress = (line: string) => process.stderr.write(`${line}\n`);
    let live = false;
    const out = await withDatabase('/test-clock', input, (deps) => {
      live = true;
      return testClockOperator(deps, input, { inProcess: true, onProgress: progress });
    });
    if (!live) for (const line of out.progress) progress(line);
    const c = out.test_clock;
    print(!!values.json, c, `${c.id} ${c.status} at ${c.frozen_time}${c.advancing_to ? ` (advancing to ${c.advancing_to})` : ''}`);
    return;
  }
  if (group === 'jobs' && action === 'list') {
    const { values } = parseArgs({
      args: rest,
      options: { dead: { type: 'boolean' }, kind: { type: 'string' }, limit: { type: 'string' }, json: { type: 'boolean' } },
      strict: true,
    });
    if (values.limit !== undefined && !/^\d{1,5}$/.test(values.limit)) throw new UsageError('--limit must be a number');
    const input = { dead: !!values.dead, kind: values.kind, limit: values.limit === undefined ? undefined : Number(values.limit) };
    const out = await withDatabase('/jobs/list', input, (deps) => listJobs(deps.database.db, input, deps.clock.now()));
    const line = (j: JobView) =>
      `${j.id}  ${j.kind}  ${j.state}  attempts ${j.attempts}/${j.max_attempts}  ${j.state === 'dead' ? `dead since ${j.dead_at}` : `run at ${j.run_at}`}` +
      (j.last_error ? `\n    last error: ${j.last_error}` : '');
    print(!!values.json, out, out.jobs.length ? out.jobs.map(line).join('\n') : values.dead ? 'no dead jobs' : 'no jobs');
    return;
  }
  if (group === 'jobs' && action === 'retry') {
    const { values, positionals } = parseArgs({ args: rest, options: { json: { type: 'boolean' } }, strict: true, allowPositionals: true });
    if (positionals.length !== 1) throw new UsageError('jobs retry takes one job id');
    const input = { id: positionals[0] };
    const out = await withDatabase('/jobs/retry', input, (deps) => retryJob(deps.database.db, input, deps.clock.now()));
    print(!!values.json, out, `job ${out.job.id} (${out.job.kind}) is queued again: due now, ${out.job.max_attempts} attempts`);
    return;
  }
  if (group === 'retention' && action === 'run') {
    const { values } = parseArgs({ args: rest, options: { budget: { type: 'string' }, json: { type: 'boolean' } }, strict: true });
    if (values.budget !== undefined && !/^\d{1,6}$/.test(values.budget)) throw new UsageError('--budget must be a number of seconds');
    const input = { budget_seconds: values.budget === undefined ? undefined : Number(values.budget) };
    const progress = (line: string) => process.stderr.write(`${line}\n`);
    let live = false;
    const out = await withDatabase<RetentionRunOutput>('/retention/run', input, (deps) => {
      live = true;
      return runRetentionOperator(deps, retentionRules, input, progress);
    });
    // Through the server's control socket the progress comes back with the answer.
    if (!live) for (const line of out.progress) progress(line);
    const { progress: _said, ...report } = out;
    print(
      !!values.json,
      report,
      `swept ${out.rows} row(s) in ${out.ms} ms${out.complete ? '' : out.busy ? ' (another process is sweeping)' : ' (budget spent; run again)'}`,
    );
    return;
  }
  throw new UsageError(`unknown command: ${argv.join(' ')}`);
}

run(process.argv.slice(2)).then(
  () => {
    if (process.argv[2] !== 'worker') process.exit(); // process.exitCode when a command set one
  },
  (error) => {
    const known =
      error instanceof UsageError ||
      error instanceof OperatorInputError ||
      error instanceof DataDirBusyError ||
      error instanceof JobOperatorError ||
      error instanceof SecretsCommandError ||
      error instanceof ToolError ||
      error instanceof RetentionInputError;
    const message = (error as Error).message ?? String(error);
    process.stderr.write(`recaudo: ${known ? message : ((error as Error).stack ?? message)}\n`);
    if (error instanceof UsageError) process.stderr.write(`\n${USAGE}\n`);
    process.exit(known ? 2 : 1);
  },
);
