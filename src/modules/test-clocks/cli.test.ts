import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { operatorCli } from '../../../test/support/cli.ts';

/**
 * `recaudo test-clock create|advance` as an operator runs it (no server: the command opens the
 * database itself and runs the advance in its own process). The rules are the API's
 * (test-clocks.test.ts).
 */
const { run: cli, remove } = operatorCli('clock');

describe('recaudo test-clock', () => {
  after(remove);

  test('create, advance with progress, and a refused advance backwards (exit 2)', () => {
    const company = cli('companies', 'create', '--name', 'Relojería SAS', '--json');
    assert.equal(company.code, 0, company.stderr);
    const id = JSON.parse(company.stdout).company.id;
    const created = cli('test-clock', 'create', '--company', id, '--frozen-time', '2027-01-01T10:00:00', '--name', 'Enero', '--json');
    assert.equal(created.code, 0, created.stderr);
    const clock = JSON.parse(created.stdout);
    assert.deepEqual([clock.status, clock.frozen_time, clock.name], ['ready', '2027-01-01T15:00:00.000Z', 'Enero']);
    const advanced = cli('test-clock', 'advance', '--company', id, '--clock', clock.id, '--frozen-time', '1800000000', '--json');
    assert.equal(advanced.code, 0, advanced.stderr);
    assert.deepEqual(
      [JSON.parse(advanced.stdout).status, JSON.parse(advanced.stdout).frozen_time],
      ['ready', new Date(1_800_000_000_000).toISOString()],
    );
    // Progress lines (the CLI may log a warning before them on stderr, e.g. the development secrets key on PostgreSQL).
    assert.match(advanced.stderr, /^advancing clock_\S+ to .*\nready at /m);
    const back = cli('test-clock', 'advance', '--company', id, '--clock', clock.id, '--frozen-time', '2027-01-02T00:00:00Z');
    assert.equal(back.code, 2);
    assert.match(back.stderr, /frozen_time: must be after/);
    assert.equal(cli('test-clock', 'advance', '--company', id, '--frozen-time', '1900000000').code, 2, '--clock is required');
  });
});
