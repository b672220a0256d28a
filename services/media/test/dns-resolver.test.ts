import { createSocket } from 'node:dgram';
import { lookup } from 'node:dns/promises';
import * as dnsPacket from 'dns-packet';
import { afterAll, describe, expect, it } from 'vitest';
import { addressPolicy } from '../src/domain/address-policy.ts';
import { createDnsResolver, createSafeFetch } from '../src/domain/safe-fetch.ts';

type Zone = Record<string, { A?: string[]; AAAA?: string[] }>;
const NXDOMAIN = 3;

/** A name server on 127.0.0.1 for `zone`, on real UDP; it answers nothing while `silent`. */
async function startNameServer(zone: Zone) {
  const socket = createSocket('udp4');
  const state = { silent: false, queries: 0 };
  socket.on('message', (message, peer) => {
    state.queries++;
    if (state.silent) return;
    const query = dnsPacket.decode(message);
    const question = query.questions?.[0];
    const known = question ? zone[question.name] : undefined;
    const type = question?.type === 'AAAA' ? 'AAAA' : 'A';
    const records = known?.[type] ?? [];
    const answer = dnsPacket.encode({
      type: 'response',
      id: query.id,
      flags: dnsPacket.RECURSION_DESIRED | dnsPacket.RECURSION_AVAILABLE | (known ? 0 : NXDOMAIN),
      questions: query.questions,
      answers: records.map((data) => ({ type, class: 'IN' as const, name: question?.name ?? '', ttl: 60, data })),
    });
    socket.send(answer, peer.port, peer.address);
  });
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
  return {
    server: `127.0.0.1:${socket.address().port}`,
    state,
    close: () => new Promise<void>((resolve) => socket.close(() => resolve())),
  };
}

const names = await startNameServer({
  'site.example.test': { A: ['203.0.113.5'], AAAA: ['2001:db8::5'] },
  'v4only.example.test': { A: ['203.0.113.6'] },
});
afterAll(() => names.close());
const never = () => new AbortController().signal;
const since = (start: number) => Date.now() - start;

describe('the link fetcher resolves names with c-ares, under a deadline', () => {
  it('answers the A and AAAA records of a name, and the A records of a name without AAAA', async () => {
    const resolve = createDnsResolver({ timeoutMs: 2_000, servers: [names.server] });
    expect(await resolve('site.example.test', never())).toEqual(['203.0.113.5', '2001:db8::5']);
    expect(await resolve('v4only.example.test', never())).toEqual(['203.0.113.6']);
    await expect(resolve('missing.example.test', never())).rejects.toMatchObject({ code: 'ENOTFOUND' });
  });

  it('gives up within its timeout on a server that never answers, holding none of the threads dns.lookup needs', async () => {
    names.state.silent = true;
    try {
      const resolve = createDnsResolver({ timeoutMs: 500, servers: [names.server] });
      const start = Date.now();
      // More than libuv's four pool threads, which getaddrinfo would each have held.
      const pending = Array.from({ length: 8 }, (_, i) =>
        resolve(`hang${i}.example.test`, never()).then(
          () => 'answered',
          (err) => err.code,
        ),
      );
      const pooled = Date.now();
      await lookup('localhost');
      expect(since(pooled)).toBeLessThan(1_000);
      expect(await Promise.all(pending)).toEqual(Array(8).fill('ETIMEOUT'));
      expect(since(start)).toBeLessThan(3_000);
    } finally {
      names.state.silent = false;
    }
  });

  it('stops at once when its signal aborts, and the fetch says the link took too long', async () => {
    names.state.silent = true;
    try {
      const resolve = createDnsResolver({ timeoutMs: 30_000, servers: [names.server] });
      const start = Date.now();
      await expect(resolve('hang.example.test', AbortSignal.timeout(200))).rejects.toMatchObject({ code: 'ECANCELLED' });
      expect(since(start)).toBeLessThan(2_000);

      const fetchLink = createSafeFetch({ policy: addressPolicy([]), timeoutMs: 200, maxRedirects: 0, userAgent: 'test', resolve });
      const fetched = Date.now();
      await expect(fetchLink('http://hang.example.test/', { accept: 'text/html', maxBytes: 1_000 })).rejects.toMatchObject({
        status: 400,
        message: 'The link took too long to answer',
      });
      expect(since(fetched)).toBeLessThan(2_000);
    } finally {
      names.state.silent = false;
    }
  });
});
