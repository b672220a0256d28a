import { Resolver as DnsResolver } from 'node:dns/promises';
import http, { type IncomingMessage } from 'node:http';
import https from 'node:https';
import { isIP, connect as netConnect } from 'node:net';
import type { Duplex } from 'node:stream';
import { connect as tlsConnect } from 'node:tls';
import { AppError } from '@chat/kit';
import type { AddressPolicy } from './address-policy.ts';

/** Every address a host name resolves to; gives up when `signal` aborts. */
export type Resolver = (hostname: string, signal: AbortSignal) => Promise<string[]>;

/** Opens the connection to an address that the policy has already allowed. */
export type Connector = (target: { address: string; port: number; tls: boolean; servername: string }) => Duplex;

export interface SafeFetcherOptions {
  policy: AddressPolicy;
  /** The whole fetch, redirects included. */
  timeoutMs: number;
  maxRedirects: number;
  userAgent: string;
  resolve?: Resolver;
  connect?: Connector;
}

export interface FetchedResource {
  /** The url that answered, after redirects. */
  url: string;
  status: number;
  contentType: string;
  body: Buffer;
  /** The body was longer than the limit and was cut there. */
  truncated: boolean;
}

export interface FetchOptions {
  accept: string;
  /** How much of the body is read at most: a number, or one chosen by the answer's Content-Type. */
  maxBytes: number | ((contentType: string) => number);
}

export type SafeFetch = (url: string, options: FetchOptions) => Promise<FetchedResource>;

const REDIRECTS = new Set([301, 302, 303, 307, 308]);

/**
 * Resolves names with c-ares (dns.Resolver: the system's name servers, A and AAAA), not with
 * getaddrinfo (dns.lookup), which runs on libuv's four pool threads with no deadline: a link to a
 * name whose server never answers held a thread for the system's retries, and a few of them the
 * threads that PostgreSQL's and MinIO's new connections resolve their own hosts on. A query here
 * waits `timeoutMs` at most and is cancelled with the fetch. /etc/hosts is not read: a preview is
 * of a public name.
 */
export function createDnsResolver(options: { timeoutMs: number; servers?: string[] }): Resolver {
  return async (hostname, signal) => {
    signal.throwIfAborted();
    const dns = new DnsResolver({ timeout: options.timeoutMs, tries: 1 });
    if (options.servers) dns.setServers(options.servers);
    const cancel = () => dns.cancel();
    signal.addEventListener('abort', cancel, { once: true });
    try {
      const [v4, v6] = await Promise.allSettled([dns.resolve4(hostname), dns.resolve6(hostname)]);
      const addresses = [v4, v6].flatMap((answer) => (answer.status === 'fulfilled' ? answer.value : []));
      if (addresses.length === 0 && v4.status === 'rejected') throw v4.reason;
      return addresses;
    } finally {
      signal.removeEventListener('abort', cancel);
    }
  };
}

export const systemConnector: Connector = ({ address, port, tls, servername }) =>
  tls
    ? tlsConnect({ host: address, port, servername: isIP(servername) ? undefined : servername, ALPNProtocols: ['http/1.1'] })
    : netConnect({ host: address, port });

/**
 * A fetcher for other people's urls that cannot be turned against this network (SSRF): http and
 * https only; each host name is resolved once, every address it has must be public, and the
 * connection goes to that checked address (no second lookup, so an answer that changes between
 * lookups changes nothing); every redirect is checked the same way; one deadline for the whole
 * fetch; at most `maxBytes` read, and only an unencoded body.
 */
export function createSafeFetch(options: SafeFetcherOptions): SafeFetch {
  const resolve = options.resolve ?? createDnsResolver({ timeoutMs: options.timeoutMs });
  const connect = options.connect ?? systemConnector;

  return async (start, { accept, maxBytes }) => {
    const signal = AbortSignal.timeout(options.timeoutMs);
    let url = parseFetchable(start);
    for (let hop = 0; ; hop++) {
      const address = await checkedAddress(url, resolve, options.policy, signal);
      const res = await send(url, address, { accept, userAgent: options.userAgent, connect, signal });
      const location = res.headers.location;
      if (REDIRECTS.has(res.statusCode ?? 0) && location) {
        res.destroy();
        if (hop >= options.maxRedirects) throw new AppError(400, 'The link redirects too many times');
        url = parseFetchable(redirectTarget(location, url));
        continue;
      }
      refuseEncoded(res);
      const contentType = String(res.headers['content-type'] ?? '');
      const limit = typeof maxBytes === 'number' ? maxBytes : maxBytes(contentType);
      const { body, truncated } = await readAtMost(res, limit, signal);
      return { url: url.href, status: res.statusCode ?? 0, contentType, body, truncated };
    }
  };
}

/**
 * Refuses a body in a Content-Encoding (gzip, br, ...) although only `identity` was asked for: read as
 * it is, it would be parsed as an empty page. Decompressing would need its own limit on what comes
 * out (a small bomb inflates to gigabytes); a server that ignores Accept-Encoding is rare enough to go
 * without a preview.
 */
function refuseEncoded(res: IncomingMessage): void {
  const encoding = String(res.headers['content-encoding'] ?? 'identity')
    .trim()
    .toLowerCase();
  if (encoding === 'identity' || encoding === '') return;
  res.destroy();
  throw new AppError(400, 'The link answered in an encoding that was not asked for');
}

/** A url the fetcher may try: absolute, http or https, no credentials. */
export function parseFetchable(value: string): URL {
  if (!URL.canParse(value)) throw new AppError(400, 'url must be an absolute http or https url');
  const url = new URL(value);
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new AppError(400, 'url must be an http or https url');
  if (url.username || url.password) throw new AppError(400, 'url must not carry credentials');
  return url;
}

/** Where a redirect points; a Location that is no url (a port past 65535, a lone `[`) fails the fetch like any other bad answer. */
function redirectTarget(location: string, from: URL): string {
  const target = URL.parse(location, from.href);
  if (!target) throw new AppError(400, 'The link could not be fetched');
  return target.href;
}

/**
 * The address to connect to. The WHATWG parser has already turned decimal, octal and hex IPv4
 * spellings into dotted form; a host name is resolved here once, and refused if any of its
 * addresses is not allowed (an answer that mixes public and private addresses is an attack).
 */
async function checkedAddress(url: URL, resolve: Resolver, policy: AddressPolicy, signal: AbortSignal): Promise<string> {
  const host = url.hostname.replace(/^\[|\]$/g, '');
  let addresses: string[];
  if (isIP(host)) addresses = [host];
  else {
    try {
      addresses = await resolve(host, signal);
    } catch (cause) {
      if (signal.aborted) throw new AppError(400, 'The link took too long to answer', { cause });
      throw new AppError(400, 'The link host could not be resolved', { cause });
    }
  }
  if (addresses.length === 0) throw new AppError(400, 'The link host could not be resolved');
  if (!addresses.every((a) => policy.allows(a))) throw new AppError(400, 'The link points to an address that is not allowed');
  return addresses[0] as string;
}

function send(
  url: URL,
  address: string,
  o: { accept: string; userAgent: string; connect: Connector; signal: AbortSignal },
): Promise<IncomingMessage> {
  const tls = url.protocol === 'https:';
  const port = Number(url.port || (tls ? 443 : 80));
  const client = tls ? https : http;
  return new Promise((resolvePromise, reject) => {
    const req = client.request({
      method: 'GET',
      host: url.hostname,
      port,
      path: `${url.pathname}${url.search}`,
      headers: { host: url.host, accept: o.accept, 'user-agent': o.userAgent, 'accept-encoding': 'identity' },
      createConnection: () => o.connect({ address, port, tls, servername: url.hostname }),
      signal: o.signal,
    });
    req.once('response', resolvePromise);
    req.once('error', (err) => reject(fetchError(err, o.signal)));
    req.end();
  });
}

async function readAtMost(res: IncomingMessage, maxBytes: number, signal: AbortSignal): Promise<{ body: Buffer; truncated: boolean }> {
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of res) {
      const buffer = chunk as Buffer;
      if (size + buffer.length > maxBytes) {
        chunks.push(buffer.subarray(0, maxBytes - size));
        res.destroy();
        return { body: Buffer.concat(chunks), truncated: true };
      }
      chunks.push(buffer);
      size += buffer.length;
    }
  } catch (err) {
    throw fetchError(err, signal);
  }
  return { body: Buffer.concat(chunks), truncated: false };
}

function fetchError(cause: unknown, signal: AbortSignal): AppError {
  if (signal.aborted) return new AppError(400, 'The link took too long to answer', { cause });
  return new AppError(400, 'The link could not be fetched', { cause });
}
