import dns from 'node:dns';
import net from 'node:net';
import type { Config } from '../../config.ts';

/**
 * SSRF protection: a guarded webhook (every live one, and test ones unless ALLOW_PRIVATE_WEBHOOKS)
 * never reaches an address that is private, loopback, link-local, unspecified, shared (CGNAT),
 * reserved or multicast. Checked at creation and update, and again at every delivery (the connection
 * is pinned to a checked address), so DNS rebinding cannot slip through.
 */
export type AddressPolicy = 'public' | 'any';

export function addressPolicy(config: Pick<Config, 'allowPrivateWebhooks'>, environment: 'test' | 'live'): AddressPolicy {
  return environment === 'live' || !config.allowPrivateWebhooks ? 'public' : 'any';
}

const blockedV4 = new net.BlockList();
for (const [addr, prefix] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.88.99.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const)
  blockedV4.addSubnet(addr, prefix, 'ipv4');

/** An IPv6 address as a 128-bit number (the caller has checked it with net.isIPv6). */
function ipv6Bits(address: string): bigint {
  let text = address.replace(/%.*$/, ''); // a zone (fe80::1%eth0) does not change the address
  const dotted = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (dotted) {
    const [a, b, c, d] = dotted.slice(1).map(Number);
    text = `${text.slice(0, dotted.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, tail] = text.split('::');
  const left = head ? head.split(':') : [];
  const right = tail ? tail.split(':') : [];
  const groups = tail === undefined ? left : [...left, ...Array<string>(8 - left.length - right.length).fill('0'), ...right];
  return groups.reduce((bits, group) => (bits << 16n) | BigInt(parseInt(group, 16)), 0n);
}

const prefix = (address: string, length: number) => ({ bits: ipv6Bits(address), length });
type Prefix = ReturnType<typeof prefix>;
const within = (bits: bigint, p: Prefix) => bits >> BigInt(128 - p.length) === p.bits >> BigInt(128 - p.length);

function v4(bits: bigint): string {
  const n = Number(bits & 0xffffffffn);
  return [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join('.');
}

/**
 * The IPv4 address an IPv6 form carries, judged as that address: IPv4-compatible (::a.b.c.d,
 * which also covers :: and ::1), IPv4-mapped (::ffff:a.b.c.d), IPv4-translated (::ffff:0:a.b.c.d),
 * NAT64 well-known prefix (64:ff9b::a.b.c.d) and 6to4 (2002:AABB:CCDD::).
 */
function embeddedIpv4(bits: bigint): string | null {
  for (const p of [prefix('::', 96), prefix('::ffff:0:0', 96), prefix('::ffff:0:0:0', 96), prefix('64:ff9b::', 96)]) {
    if (within(bits, p)) return v4(bits);
  }
  if (within(bits, prefix('2002::', 16))) return v4(bits >> 80n);
  return null;
}

/** Only global unicast (2000::/3) is public, less its special-purpose blocks. */
const GLOBAL_UNICAST = prefix('2000::', 3);
const BLOCKED_V6 = [
  prefix('2001::', 23), // IETF protocol assignments: Teredo (its client IPv4 is hidden), benchmarking, ORCHID
  prefix('2001:db8::', 32), // documentation
  prefix('3fff::', 20), // documentation
];
// Everything outside 2000::/3 is refused by the rule above, among them local-use NAT64
// 64:ff9b:1::/48 (where the IPv4 sits depends on the operator), unique-local fc00::/7, link-local
// fe80::/10, site-local fec0::/10, discard-only 100::/64 and multicast ff00::/8.

export function isPublicAddress(address: string): boolean {
  const family = net.isIP(address.replace(/%.*$/, ''));
  if (family === 4) return !blockedV4.check(address, 'ipv4');
  if (family !== 6) return false;
  const bits = ipv6Bits(address);
  const embedded = embeddedIpv4(bits);
  if (embedded !== null) return isPublicAddress(embedded);
  return within(bits, GLOBAL_UNICAST) && !BLOCKED_V6.some((p) => within(bits, p));
}

export type UrlProblem = string | null;

/** Static checks for every environment: a parseable http(s) URL without credentials. */
export function urlShapeProblem(url: string, live: boolean): UrlProblem {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return 'must be a valid URL';
  }
  if (parsed.protocol !== 'https:' && parsed.protocol !== 'http:') return 'must be an http or https URL';
  if (live && parsed.protocol !== 'https:') return 'must use https with a live key';
  if (parsed.username || parsed.password) return 'must not contain credentials';
  return null;
}

/** Every address a host name has (injectable: tests stand in for DNS). */
export type ResolveHost = (host: string) => Promise<string[]>;

export const systemResolve: ResolveHost = async (host) => (await dns.promises.lookup(host, { all: true, verbatim: true })).map((a) => a.address);

async function resolveAll(resolve: ResolveHost, host: string, timeoutMs: number): Promise<string[] | null> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<null>((done) => (timer = setTimeout(() => done(null), timeoutMs).unref()));
  const lookup = resolve(host).then(
    (addresses) => addresses,
    () => null,
  );
  try {
    return await Promise.race([lookup, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** The host of a URL as an address or a name: no brackets, no trailing dot. */
export function urlHost(url: URL): string {
  return url.hostname.replace(/^\[|\]$/g, '').replace(/\.$/, '');
}

const PRIVATE = 'must not point to a private, loopback or link-local address';

/**
 * Creation/update check of a guarded URL: refuses hosts that are, or resolve to, non-public
 * addresses. A name that cannot be resolved now is accepted; the delivery-time check still guards
 * every attempt. Takes up to 2 s (DNS): never call it inside a transaction.
 */
export async function privateAddressProblem(url: string, resolve: ResolveHost = systemResolve): Promise<UrlProblem> {
  const host = urlHost(new URL(url)).toLowerCase();
  if (net.isIP(host)) return isPublicAddress(host) ? null : PRIVATE;
  if (host === 'localhost' || /\.(localhost|internal|local)$/.test(host)) return PRIVATE;
  const addresses = await resolveAll(resolve, host, 2_000);
  if (addresses && addresses.some((a) => !isPublicAddress(a))) return 'must not resolve to a private, loopback or link-local address';
  return null;
}

/** A `lookup` for http.request that only ever connects to public addresses (guarded deliveries). */
export const publicOnlyLookup: net.LookupFunction = (hostname, options, callback) => {
  dns.lookup(hostname, { ...options, all: true }, (err, addresses) => {
    if (err) return callback(err, '', 4);
    const list = (addresses as unknown as dns.LookupAddress[]).filter((a) => isPublicAddress(a.address));
    if (list.length === 0) {
      const error = Object.assign(new Error(`refused: ${hostname} resolves only to non-public addresses`), { code: 'EADDRNOTPUBLIC' });
      return callback(error, '', 4);
    }
    if ((options as dns.LookupOptions).all) return (callback as unknown as (e: null, a: dns.LookupAddress[]) => void)(null, list);
    callback(null, list[0].address, list[0].family);
  });
};
