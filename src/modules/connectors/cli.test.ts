import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { operatorCli } from '../../../test/support/cli.ts';

/** `recaudo connectors set|show` on the database directly (no server owns it): the API's rules, secrets never printed. */
const { run: cli, remove } = operatorCli('connectors');

describe('recaudo connectors', () => {
  after(remove);

  test('set validates like the API, show answers a summary without secrets', () => {
    const created = cli('companies', 'create', '--name', 'Conectada SAS', '--json');
    assert.equal(created.code, 0, created.stderr);
    const company = JSON.parse(created.stdout).company.id as string;

    const bad = cli('connectors', 'set', '--company', company, '--env', 'live', '--public-key', 'pub_test_abcdefgh');
    assert.equal(bad.code, 2, bad.stderr);
    assert.match(bad.stderr, /public_key/);

    const secrets = ['prv_prod_secret0042', 'prod_events_secret0042', 'prod_integrity_secret0042'];
    const set = cli(
      'connectors',
      'set',
      '--company',
      company,
      '--env',
      'live',
      '--public-key',
      'pub_prod_public0042',
      '--private-key',
      secrets[0],
      '--events-secret',
      secrets[1],
      '--integrity-secret',
      secrets[2],
      '--json',
    );
    assert.equal(set.code, 0, set.stderr);
    const shown = cli('connectors', 'show', '--company', company, '--env', 'live', '--json');
    assert.equal(shown.code, 0, shown.stderr);
    const out = JSON.parse(shown.stdout);
    assert.equal(out.connector.public_key, 'pub_prod_public0042');
    assert.deepEqual(out.connector.private_key, { set: true, last4: '0042' });
    for (const s of secrets) assert.ok(!shown.stdout.includes(s) && !set.stdout.includes(s), 'no secret printed');

    // Third-Party Payments: all four settings or none; then the payout rail is served.
    const partial = cli('connectors', 'set', '--company', company, '--env', 'live', '--payouts-api-key', 'payouts_key_0042');
    assert.equal(partial.code, 2, partial.stderr);
    assert.match(partial.stderr, /payouts_user_principal_id/);
    const payoutSecrets = ['payouts_key_0042', 'principal-id-0042', 'prod_events_payouts0042'];
    const payouts = cli(
      'connectors',
      'set',
      '--company',
      company,
      '--env',
      'live',
      '--payouts-api-key',
      payoutSecrets[0],
      '--payouts-user-principal-id',
      payoutSecrets[1],
      '--payouts-events-secret',
      payoutSecrets[2],
      '--payouts-account-id',
      'origin-0042',
    );
    assert.equal(payouts.code, 0, payouts.stderr);
    assert.match(payouts.stdout, /payouts from account origin-0042; payouts events URL: .*\/v1\/rails\/wompi\/payout-events/);
    const after = JSON.parse(cli('connectors', 'show', '--company', company, '--env', 'live', '--json').stdout);
    assert.ok(after.connector.rails.includes('payout'));
    for (const s of payoutSecrets) assert.ok(!payouts.stdout.includes(s), 'no payouts secret printed');
  });

  test('companies set: an exact approval threshold; a payout account checked like the API', () => {
    const created = cli('companies', 'create', '--name', 'Retiros CLI SAS', '--json');
    assert.equal(created.code, 0, created.stderr);
    const company = JSON.parse(created.stdout).company.id as string;
    const set = cli('companies', 'set', '--company', company, '--approval-threshold', '1234567890123.45', '--json');
    assert.equal(set.code, 0, set.stderr);
    assert.equal(JSON.parse(set.stdout).company.cashout_approval_threshold, 1234567890123.45);
    assert.equal(cli('companies', 'set', '--company', company, '--approval-threshold', '0').code, 2);
    assert.equal(cli('companies', 'set', '--company', company, '--approval-threshold', '12.345').code, 2);
    const missing = cli('companies', 'set', '--company', company, '--env', 'test', '--payout-account', '01a1ffd1-03aa-73c7-a9ea-9767dccc73e5');
    assert.equal(missing.code, 2, missing.stderr);
    assert.match(missing.stderr, /account_id: no such account/);
    assert.equal(cli('companies', 'set', '--company', company, '--env', 'prod', '--payout-account', 'x').code, 2);
  });
});
