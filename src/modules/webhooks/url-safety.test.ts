import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { loadConfig } from '../../config.ts';
import { addressPolicy, isPublicAddress, privateAddressProblem } from './url-safety.ts';

describe('webhook address classifier', () => {
  // Every IPv6 form that carries an IPv4 address is judged as that IPv4 address.
  const table: [string, boolean, string][] = [
    ['8.8.8.8', true, 'public IPv4'],
    ['93.184.216.34', true, 'public IPv4'],
    ['127.0.0.1', false, 'loopback'],
    ['10.0.0.1', false, 'private 10/8'],
    ['172.20.0.1', false, 'private 172.16/12'],
    ['192.168.1.1', false, 'private 192.168/16'],
    ['169.254.169.254', false, 'link-local (cloud metadata)'],
    ['100.64.0.1', false, 'CGNAT'],
    ['0.0.0.0', false, 'unspecified'],
    ['224.0.0.1', false, 'multicast'],
    ['255.255.255.255', false, 'broadcast'],
    ['198.18.0.1', false, 'benchmarking'],
    ['192.0.2.1', false, 'documentation'],
    ['::1', false, 'IPv6 loopback'],
    ['::', false, 'IPv6 unspecified'],
    ['::127.0.0.1', false, 'IPv4-compatible loopback'],
    ['::a00:1', false, 'IPv4-compatible 10.0.0.1 in hex'],
    ['::ffff:127.0.0.1', false, 'IPv4-mapped loopback'],
    ['::ffff:7f00:1', false, 'IPv4-mapped loopback in hex'],
    ['::ffff:a00:1', false, 'IPv4-mapped 10.0.0.1'],
    ['::ffff:169.254.169.254', false, 'IPv4-mapped metadata'],
    ['::ffff:808:808', true, 'IPv4-mapped public'],
    ['::ffff:0:10.0.0.1', false, 'IPv4-translated private'],
    ['::ffff:0:a00:1', false, 'IPv4-translated private in hex'],
    ['::ffff:0:8.8.8.8', true, 'IPv4-translated public'],
    ['2002:7f00:1::', false, '6to4 of 127.0.0.1'],
    ['2002:a9fe:a9fe::1', false, '6to4 of 169.254.169.254'],
    ['2002:c0a8:101:1::1', false, '6to4 of 192.168.1.1'],
    ['2002:808:808::1', true, '6to4 of 8.8.8.8'],
    ['64:ff9b::7f00:1', false, 'NAT64 well-known prefix, loopback'],
    ['64:ff9b::10.0.0.1', false, 'NAT64 well-known prefix, private'],
    ['64:ff9b::8.8.8.8', true, 'NAT64 well-known prefix, public'],
    ['64:ff9b:1::a00:1', false, 'local-use NAT64'],
    ['64:ff9b:1::8.8.8.8', false, "local-use NAT64 (where the IPv4 sits is the operator's choice)"],
    ['2001:0:4136:e378:8000:63bf:3fff:fdd2', false, 'Teredo'],
    ['2001:db8::1', false, 'documentation'],
    ['fc00::1', false, 'unique local'],
    ['fd12:3456::1', false, 'unique local'],
    ['fe80::1', false, 'link-local'],
    ['fe80::1%eth0', false, 'link-local with a zone'],
    ['fec0::1', false, 'site-local'],
    ['ff02::1', false, 'multicast'],
    ['100::1', false, 'discard-only'],
    ['2606:4700:4700::1111', true, 'public IPv6'],
    ['2a00:1450:4001:80b::200e', true, 'public IPv6'],
    ['example.com', false, 'not an address'],
    ['', false, 'empty'],
  ];
  for (const [address, expected, what] of table) {
    test(`${address || '(empty)'} is ${expected ? 'public' : 'refused'} (${what})`, () => {
      assert.equal(isPublicAddress(address), expected);
    });
  }

  test('URL forms: bracketed IPv6 and odd IPv4 spellings are normalised by the URL parser, then judged', async () => {
    const refused = [
      'https://[::127.0.0.1]/x',
      'https://[::ffff:0:10.0.0.1]/x',
      'https://[::ffff:a00:1]/x',
      'https://[2002:7f00:1::]/x',
      'https://[64:ff9b:1::a00:1]/x',
      'https://[64:ff9b::169.254.169.254]/x',
      'https://[fe80::1]/x',
      'https://0x7f.1/x',
      'https://2130706433/x',
      'https://127.1/x',
      'https://localhost./x',
      'https://metadata.google.internal/x',
    ];
    for (const url of refused) assert.ok(await privateAddressProblem(url, async () => ['8.8.8.8']), url);
    assert.equal(await privateAddressProblem('https://[2606:4700:4700::1111]/x'), null);
    assert.equal(await privateAddressProblem('https://hooks.example.com/x', async () => ['93.184.216.34', '2606:4700:4700::1111']), null);
    assert.match((await privateAddressProblem('https://hooks.example.com/x', async () => ['93.184.216.34', '::ffff:10.0.0.1']))!, /resolve/);
    assert.equal(
      await privateAddressProblem('https://unresolvable.example.com/x', async () => Promise.reject(new Error('ENOTFOUND'))),
      null,
      'checked again at delivery',
    );
  });
});

describe('ALLOW_PRIVATE_WEBHOOKS', () => {
  test('false by default in every mode; only an explicit true opens private targets', () => {
    assert.equal(loadConfig({}).allowPrivateWebhooks, false);
    assert.equal(loadConfig({ NODE_ENV: 'development' }).allowPrivateWebhooks, false);
    assert.equal(loadConfig({ NODE_ENV: 'test' }).allowPrivateWebhooks, false);
    assert.equal(loadConfig({ NODE_ENV: 'production' }).allowPrivateWebhooks, false);
    assert.equal(loadConfig({ ALLOW_PRIVATE_WEBHOOKS: 'true' }).allowPrivateWebhooks, true);
    assert.equal(loadConfig({ NODE_ENV: 'production', ALLOW_PRIVATE_WEBHOOKS: 'true' }).allowPrivateWebhooks, true);
    assert.equal(loadConfig({ ALLOW_PRIVATE_WEBHOOKS: 'false' }).allowPrivateWebhooks, false);
    assert.throws(() => loadConfig({ ALLOW_PRIVATE_WEBHOOKS: 'maybe' }), /ALLOW_PRIVATE_WEBHOOKS/);
  });

  test('live is always guarded; test only when private webhooks are not allowed', () => {
    assert.equal(addressPolicy({ allowPrivateWebhooks: true }, 'live'), 'public');
    assert.equal(addressPolicy({ allowPrivateWebhooks: true }, 'test'), 'any');
    assert.equal(addressPolicy({ allowPrivateWebhooks: false }, 'test'), 'public');
  });
});
