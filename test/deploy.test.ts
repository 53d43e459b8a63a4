import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parse } from 'yaml';

/**
 * The deployment files (docs/deploy.md): compose.yaml against the Compose specification's schema
 * (dclint, which bundles it) and against what the service needs, and the Dockerfile's runtime
 * stage. Docker itself is not needed: where its compose plugin exists, `docker compose config`
 * checks the file as well (CI builds and starts the image only where a daemon runs).
 */

const compose = parse(fs.readFileSync('compose.yaml', 'utf8'), { merge: true });
const dockerfile = fs.readFileSync('Dockerfile', 'utf8');
const services = compose.services as Record<string, any>;

function dclint(file: string) {
  return spawnSync(process.execPath, ['node_modules/dclint/bin/dclint.cjs', file, '--color', 'false'], { encoding: 'utf8' });
}

describe('compose.yaml', () => {
  test('is valid against the Compose specification (dclint and its bundled schema)', () => {
    const out = dclint('compose.yaml');
    assert.equal(out.status, 0, out.stdout + out.stderr);

    // The check can fail: an unknown service key and a non-numeric replica count are refused.
    const broken = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'recaudo-compose-')), 'compose.yaml');
    fs.writeFileSync(broken, 'services:\n  api:\n    image: recaudo\n    replica: 2\n');
    const refused = dclint(broken);
    assert.notEqual(refused.status, 0);
    assert.match(refused.stdout, /invalid-schema/);
    fs.rmSync(path.dirname(broken), { recursive: true });
  });

  test('docker compose config accepts it, where the compose plugin exists', (t) => {
    const probe = spawnSync('docker', ['compose', 'version'], { encoding: 'utf8' });
    if (probe.status !== 0) return t.skip('no docker compose on this machine: the schema check above stands in');
    const env = { ...process.env, POSTGRES_PASSWORD: 'p', SECRETS_KEY: '0'.repeat(64), CARD_DATA_SECRET: 'c'.repeat(32), PAGES_SECRET: 'p' };
    const out = spawnSync('docker', ['compose', '--profile', 'pgbouncer', 'config', '--quiet'], { env, encoding: 'utf8' });
    assert.equal(out.status, 0, out.stderr);
  });

  test('PostgreSQL, a one-shot migration, N API and M worker replicas, PgBouncer behind a profile', () => {
    assert.deepEqual(Object.keys(services).sort(), ['api', 'migrate', 'pgbouncer', 'postgres', 'worker']);
    assert.match(services.postgres.image, /^postgres:15/, 'the PostgreSQL the suite runs on');

    assert.deepEqual(services.migrate.command, ['recaudo', 'migrate']);
    assert.equal(services.migrate.image, '${RECAUDO_IMAGE:-recaudo:latest}');
    assert.equal(services.migrate.restart, 'no');
    assert.equal(services.migrate.depends_on.postgres.condition, 'service_healthy');
    assert.match(services.migrate.environment.DATABASE_URL, /@postgres:5432\//, 'migrations never go through the pooler');

    for (const name of ['api', 'worker']) {
      const s = services[name];
      assert.equal(s.depends_on.migrate.condition, 'service_completed_successfully', name);
      assert.equal(s.depends_on.pgbouncer.required, false, `${name} needs PgBouncer only with its profile`);
      assert.match(String(s.deploy.replicas), /^\$\{\w+_REPLICAS:-\d+\}$/, `${name} replicas are a setting`);
      assert.equal(s.image, '${RECAUDO_IMAGE:-recaudo:latest}', 'one image for every role');
    }
    assert.deepEqual(services.api.command, ['node', 'dist/main.js']);
    assert.equal(services.api.environment.RUN_WORKERS, 'false', 'API replicas leave background work to the workers');
    assert.deepEqual(services.worker.command, ['node', 'dist/main.js', 'worker']);
    assert.equal(services.worker.healthcheck.disable, true, 'a worker serves no /health');

    assert.deepEqual(services.pgbouncer.profiles, ['pgbouncer']);
    assert.ok(fs.existsSync(path.join(services.pgbouncer.build, 'Dockerfile')));
  });

  test('every process gets production settings, one set of secrets, and the LISTEN session straight to PostgreSQL', () => {
    for (const name of ['migrate', 'api', 'worker']) {
      const env = services[name].environment;
      assert.equal(env.NODE_ENV, 'production', name);
      for (const secret of ['SECRETS_KEY', 'CARD_DATA_SECRET', 'PAGES_SECRET']) {
        assert.match(env[secret], new RegExp(`^\\$\\{${secret}:\\?`), `${name}: ${secret} is required, never a default`);
      }
      assert.match(env.DATABASE_DIRECT_URL, /@postgres:5432\//, name);
    }
    // Every variable compose.yaml reads is in the example file an operator starts from.
    const example = fs.readFileSync('deploy/compose.env.example', 'utf8');
    const read = new Set([...fs.readFileSync('compose.yaml', 'utf8').matchAll(/\$\{(\w+)[:}]/g)].map((m) => m[1]));
    for (const variable of read) {
      if (variable === 'RECAUDO_IMAGE' || variable.startsWith('PGBOUNCER_')) continue; // documented in docs/deploy.md
      assert.match(example, new RegExp(`^#? ?${variable}=`, 'm'), `${variable} is in deploy/compose.env.example`);
    }
  });
});

describe('Dockerfile', () => {
  const runtime = dockerfile.slice(dockerfile.indexOf('AS runtime'));

  test('the runtime stage: Node 22 slim, production dependencies only, a non-root user, node as PID 1, a health check', () => {
    assert.match(dockerfile, /^ARG NODE_IMAGE=node:22-bookworm-slim$/m);
    assert.match(dockerfile, /^FROM \$\{NODE_IMAGE\} AS build$/m);
    assert.match(dockerfile, /^FROM \$\{NODE_IMAGE\} AS runtime$/m);
    assert.match(runtime, /npm ci --omit=dev --ignore-scripts/);
    assert.match(runtime, /^USER node$/m);
    assert.match(runtime, /^VOLUME \["\/data"\]$/m);
    assert.match(runtime, /DATA_DIR=\/data/);
    assert.match(
      runtime,
      /^HEALTHCHECK .*\n\s+CMD \["node", "-e", "fetch\('http:\/\/127\.0\.0\.1:' \+ \(process\.env\.PORT \|\| 3000\) \+ '\/health'\)/m,
    );
    assert.match(runtime, /^CMD \["node", "dist\/main\.js"\]$/m);
    assert.doesNotMatch(runtime, /COPY (--from=build \/app\/)?src/, 'no TypeScript sources in the image');
  });

  test('what it copies exists and the build context lets it through', () => {
    const ignore = fs.readFileSync('.dockerignore', 'utf8').split('\n');
    assert.equal(
      ignore.find((l) => l.trim() && !l.startsWith('#')),
      '*',
      'the context starts empty',
    );
    const allowed = ignore.filter((l) => l.startsWith('!')).map((l) => l.slice(1).replace(/\/$/, ''));
    for (const [, from] of dockerfile.matchAll(/^COPY (?!--from)(.+) \S+$/gm)) {
      for (const source of from.split(' ')) {
        const clean = source.replace(/\/$/, '');
        assert.ok(fs.existsSync(clean), `${clean} exists`);
        assert.ok(allowed.includes(clean), `${clean} is let through by .dockerignore`);
      }
    }
    // The built entry points the image runs: dist/ is tsconfig.build.json's output.
    const build = JSON.parse(fs.readFileSync('tsconfig.build.json', 'utf8'));
    assert.equal(build.compilerOptions.outDir, 'dist');
    assert.equal(build.compilerOptions.rootDir, 'src');
    assert.ok(fs.existsSync('src/main.ts') && fs.existsSync('src/cli/main.ts'));
    assert.match(runtime, /ln -s \/app\/bin\/recaudo\.mjs \/usr\/local\/bin\/recaudo/, 'the CLI on PATH for `recaudo migrate`');
  });
});
