/**
 * Where the webhook channel may POST a reply (`callbackUrl`). The URL comes from whoever holds the
 * webhook secret, and the request leaves from inside the operator's network: without a rule it
 * reaches the loopback admin API, the cloud metadata service or any internal host. So:
 *
 * - only hosts listed in WEBHOOK_CALLBACK_HOSTS are called (none listed: no callbacks at all);
 *   an entry is a host name or IP address (`hooks.example.com`, `10.0.0.7`), or `*.example.com`
 *   for any name under that domain;
 * - a name matched by a `*.` entry must resolve only to public addresses: loopback, private,
 *   link-local (the metadata service 169.254.169.254), carrier-grade NAT, multicast and the other
 *   special ranges are refused. A host listed exactly is the operator's explicit choice and may
 *   be internal;
 * - the addresses are checked again when the connection is made (a name that resolved to a public
 *   address at the request may resolve to 127.0.0.1 a second later), and redirects are not
 *   followed (a 3xx is an answer, not a new target).
 */
import dns from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';

/** Addresses a callback to a wildcard-matched host must not reach. */
const SPECIAL = new net.BlockList();
for (const [network, prefix] of [
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
  SPECIAL.addSubnet(network, prefix, 'ipv4');
for (const [network, prefix] of [
  ['::', 128],
  ['::1', 128],
  ['64:ff9b::', 96],
  ['64:ff9b:1::', 48],
  ['100::', 64],
  ['2001::', 23],
  ['2001:db8::', 32],
  ['2002::', 16],
  ['fc00::', 7],
  ['fe80::', 10],
  ['fec0::', 10],
  ['ff00::', 8],
] as const)
  SPECIAL.addSubnet(network, prefix, 'ipv6');

/** Whether `address` (an IP literal) is loopback, private, link-local, metadata or otherwise not public. */
export function isInternalAddress(address: string): boolean {
  const family = net.isIP(address);
  if (family === 0) return true;
  if (family === 6) {
    // An IPv4 address written as IPv6 (::ffff:127.0.0.1, ::ffff:7f00:1) reaches the IPv4 host:
    // judged as that host. (Not a BlockList subnet: BlockList applies IPv6 rules to IPv4 too.)
    const mapped = /^::ffff:(?:(\d+\.\d+\.\d+\.\d+)|([0-9a-f]{1,4}):([0-9a-f]{1,4}))$/i.exec(address);
    if (mapped?.[1]) return isInternalAddress(mapped[1]);
    if (mapped) {
      const [high, low] = [parseInt(mapped[2]!, 16), parseInt(mapped[3]!, 16)];
      return isInternalAddress(`${high >> 8}.${high & 255}.${low >> 8}.${low & 255}`);
    }
    return SPECIAL.check(address, 'ipv6');
  }
  return SPECIAL.check(address, 'ipv4');
}

/** A host name as URLs and the list compare it: lower case, no brackets, no final dot. */
function canonicalHost(host: string): string {
  return host
    .toLowerCase()
    .replace(/^\[(.*)\]$/, '$1')
    .replace(/\.$/, '');
}

/** How a callback host was allowed: listed exactly (any address), or under a `*.` entry (public addresses only). */
type Allowance = 'exact' | 'public-only';

function allowanceOf(host: string, allowed: readonly string[]): Allowance | undefined {
  let found: Allowance | undefined;
  for (const entry of allowed) {
    const e = canonicalHost(entry);
    if (e === host) return 'exact';
    if (e.startsWith('*.') && host.endsWith(e.slice(1)) && host.length > e.length - 1) found = 'public-only';
  }
  return found;
}

/** Resolves `host` to every address it has; an IP literal is itself. */
async function addressesOf(host: string): Promise<dns.LookupAddress[]> {
  const family = net.isIP(host);
  if (family !== 0) return [{ address: host, family }];
  return dns.promises.lookup(host, { all: true, verbatim: true });
}

/** A callback URL that passed the rules, ready to be called. */
export interface CallbackTarget {
  readonly url: URL;
  readonly allowance: Allowance;
}

/**
 * Checks `callbackUrl` against the allowed hosts and, for a wildcard match, its resolved
 * addresses. Returns the reason it is refused (never quoting the URL, which may hold
 * credentials), or the target.
 */
export async function checkCallbackUrl(
  callbackUrl: string,
  allowed: readonly string[],
): Promise<{ ok: true; target: CallbackTarget } | { ok: false; reason: string }> {
  if (allowed.length === 0)
    return {
      ok: false,
      reason: 'callbackUrl is not accepted: this service calls back no host (WEBHOOK_CALLBACK_HOSTS is empty); omit it to get the reply in the response',
    };
  const url = new URL(callbackUrl);
  if (url.username !== '' || url.password !== '') return { ok: false, reason: 'callbackUrl is not accepted: it must not contain a user name or password' };
  const host = canonicalHost(url.hostname);
  const allowance = allowanceOf(host, allowed);
  if (!allowance) return { ok: false, reason: 'callbackUrl is not accepted: its host is not one of WEBHOOK_CALLBACK_HOSTS' };
  if (allowance === 'public-only') {
    let addresses: dns.LookupAddress[];
    try {
      addresses = await addressesOf(host);
    } catch {
      return { ok: false, reason: 'callbackUrl is not accepted: its host name does not resolve' };
    }
    if (addresses.length === 0 || addresses.some((a) => isInternalAddress(a.address))) {
      return {
        ok: false,
        reason:
          'callbackUrl is not accepted: its host resolves to a loopback, private, link-local or other internal address (list the host exactly in WEBHOOK_CALLBACK_HOSTS to allow it)',
      };
    }
  }
  return { ok: true, target: { url, allowance } };
}

/**
 * The resolver a wildcard-matched callback connects with: the same resolution, refusing internal
 * addresses at the moment of connecting (a name may resolve differently than when it was checked).
 */
const publicOnlyLookup: net.LookupFunction = (hostname, options, callback) => {
  dns.lookup(hostname, { ...options, all: true, verbatim: true }, (error, addresses) => {
    if (error) return callback(error, '', 0);
    const list = addresses as dns.LookupAddress[];
    if (list.length === 0 || list.some((a) => isInternalAddress(a.address))) {
      return callback(Object.assign(new Error('the callback host resolves to an internal address'), { code: 'ECALLBACKREFUSED' }), '', 0);
    }
    if ((options as dns.LookupOptions).all) return (callback as unknown as (e: null, a: dns.LookupAddress[]) => void)(null, list);
    return callback(null, list[0]!.address, list[0]!.family);
  });
};

/**
 * POSTs `body` to the target and resolves with the answer's status. A redirect is returned as
 * its status (never followed); the answer's body is discarded.
 */
export function postToCallback(target: CallbackTarget, headers: Record<string, string>, body: string, timeoutMs: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const client = target.url.protocol === 'https:' ? https : http;
    const request = client.request(
      target.url,
      {
        method: 'POST',
        headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) },
        timeout: timeoutMs,
        ...(target.allowance === 'public-only' && { lookup: publicOnlyLookup }),
      },
      (response) => {
        response.resume();
        response.on('end', () => resolve(response.statusCode ?? 0));
        response.on('error', reject);
      },
    );
    request.on('timeout', () => request.destroy(new Error(`the callback did not answer within ${timeoutMs} ms`)));
    request.on('error', reject);
    request.end(body);
  });
}
