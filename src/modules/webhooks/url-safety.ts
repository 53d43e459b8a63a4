import dns from 'node:dns';
import net from 'node:net';

/**
 * SSRF protection for live webhooks: https only, and never an address that is private, loopback,
 * link-local, unspecified, shared (CGNAT) or multicast. Checked at creation and again at every
 * delivery (by pinning the connection to a checked address), so DNS rebinding cannot slip through.
 */
const blocked = new net.BlockList();
for (const [addr, prefix] of [
  ['0.0.0.0', 8], ['10.0.0.0', 8], ['100.64.0.0', 10], ['127.0.0.0', 8], ['169.254.0.0', 16], ['172.16.0.0', 12],
  ['192.0.0.0', 24], ['192.168.0.0', 16], ['198.18.0.0', 15], ['224.0.0.0', 4], ['240.0.0.0', 4],
] as const) blocked.addSubnet(addr, prefix, 'ipv4');
for (const [addr, prefix] of [['::', 128], ['::1', 128], ['fc00::', 7], ['fe80::', 10], ['ff00::', 8], ['64:ff9b::', 96]] as const) {
  blocked.addSubnet(addr, prefix, 'ipv6');
}

export function isPublicAddress(address: string): boolean {
  const family = net.isIP(address);
  if (family === 0) return false;
  if (family === 6) {
    const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
    if (mapped) return isPublicAddress(mapped[1]);
    return !blocked.check(address, 'ipv6');
  }
  return !blocked.check(address, 'ipv4');
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

async function resolveAll(host: string, timeoutMs: number): Promise<string[] | null> {
  const lookup = dns.promises.lookup(host, { all: true, verbatim: true }).then(
    (r) => r.map((a) => a.address),
    () => null,
  );
  const timeout = new Promise<null>((resolve) => setTimeout(() => resolve(null), timeoutMs).unref());
  return Promise.race([lookup, timeout]);
}

/**
 * Live creation/update check: refuses hosts that are, or resolve to, non-public addresses. A name
 * that cannot be resolved now is accepted; the delivery-time check still guards every attempt.
 */
export async function liveUrlProblem(url: string): Promise<UrlProblem> {
  const host = new URL(url).hostname.replace(/^\[|\]$/g, '');
  if (net.isIP(host)) return isPublicAddress(host) ? null : 'must not point to a private, loopback or link-local address';
  if (host === 'localhost' || host.endsWith('.localhost') || host.endsWith('.internal') || host.endsWith('.local')) {
    return 'must not point to a private, loopback or link-local address';
  }
  const addresses = await resolveAll(host, 2_000);
  if (addresses && addresses.some((a) => !isPublicAddress(a))) return 'must not resolve to a private, loopback or link-local address';
  return null;
}

/** A `lookup` for http.request that only ever connects to public addresses (live deliveries). */
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
