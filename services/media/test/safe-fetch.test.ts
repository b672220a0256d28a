import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { addressPolicy } from '../src/domain/address-policy.ts';
import { type Connector, createSafeFetch, type Resolver, systemConnector } from '../src/domain/safe-fetch.ts';
import { html, redirect, startPageServer } from './page-server.ts';

// Every refused address below is checked with a spy on the connect step: no test ever sends a
// packet anywhere but to the page server on 127.0.0.1.

let server: Awaited<ReturnType<typeof startPageServer>>;

beforeAll(async () => {
  server = await startPageServer({
    '/': html('<title>home</title>'),
    '/big': (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.write(`<title>big</title>${'x'.repeat(64 * 1024)}`);
      for (let i = 0; i < 48; i++) res.write('y'.repeat(64 * 1024));
      res.end();
    },
    '/stall': (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.write('<title>never ends');
    },
    '/to-metadata': redirect('http://169.254.169.254/latest/meta-data/'),
    '/to-private-name': redirect('http://intranet.test/admin'),
    '/loop': redirect('/loop'),
    '/to-no-url': redirect('http://[::1'),
  });
});
afterAll(() => server.close());

function fetcher(options: { allow?: string[]; resolve?: Resolver; timeoutMs?: number } = {}) {
  const connect = vi.fn<Connector>(systemConnector);
  const fetch = createSafeFetch({
    policy: addressPolicy(options.allow ?? ['127.0.0.1']),
    timeoutMs: options.timeoutMs ?? 5_000,
    maxRedirects: 5,
    userAgent: 'test',
    resolve: options.resolve ?? (async () => ['127.0.0.1']),
    connect,
  });
  return { fetch, connect, get: (url: string, maxBytes = 1024 * 1024) => fetch(url, { accept: 'text/html', maxBytes }) };
}

describe('the safe fetcher refuses addresses that are not public before connecting', () => {
  const refused = [
    'http://127.0.0.1/',
    'http://2130706433/',
    'http://0x7f.0.0.1/',
    'http://0177.0.0.1/',
    'http://127.1/',
    'http://0.0.0.0/',
    'http://10.1.2.3/',
    'http://172.16.0.1/',
    'http://192.168.1.1/',
    'http://169.254.169.254/latest/meta-data/',
    'http://100.100.100.200/',
    'http://224.0.0.1/',
    'http://255.255.255.255/',
    'http://[::1]/',
    'http://[::]/',
    'http://[::ffff:127.0.0.1]/',
    'http://[::ffff:a9fe:a9fe]/',
    'http://[::127.0.0.1]/',
    'http://[fe80::1]/',
    'http://[fd00:ec2::254]/',
    'http://[ff02::1]/',
    'http://[64:ff9b::a00:1]/',
  ];
  it.each(refused)('%s', async (url) => {
    const f = fetcher({ allow: [] });
    await expect(f.get(url)).rejects.toMatchObject({ status: 400, message: 'The link points to an address that is not allowed' });
    expect(f.connect).not.toHaveBeenCalled();
  });

  it('refuses a host name when any of its addresses is private', async () => {
    const f = fetcher({ allow: [], resolve: async () => ['93.184.215.14', '10.0.0.7'] });
    await expect(f.get('http://mixed.test/')).rejects.toMatchObject({ status: 400 });
    expect(f.connect).not.toHaveBeenCalled();
  });

  it.each([
    'javascript:alert(1)',
    'file:///etc/passwd',
    'ftp://example.test/',
    'data:text/html,hi',
    'gopher://x.test/',
    '/relative',
    'http://user:pw@example.test/',
  ])('refuses %s without resolving it', async (url) => {
    const resolve = vi.fn<Resolver>(async () => ['127.0.0.1']);
    const f = fetcher({ resolve });
    await expect(f.get(url)).rejects.toMatchObject({ status: 400 });
    expect(resolve).not.toHaveBeenCalled();
    expect(f.connect).not.toHaveBeenCalled();
  });
});

describe('the safe fetcher follows what it may and stops what it must', () => {
  it('fetches an allowed page, connecting to the address it resolved and checked', async () => {
    const f = fetcher();
    const page = await f.get(`http://pages.test:${server.port}/`);
    expect(page).toMatchObject({ status: 200, contentType: 'text/html; charset=utf-8', truncated: false });
    expect(page.body.toString()).toBe('<title>home</title>');
    expect(f.connect).toHaveBeenCalledTimes(1);
    expect(f.connect.mock.calls[0]?.[0]).toMatchObject({ address: '127.0.0.1', port: server.port, tls: false, servername: 'pages.test' });
  });

  it('resolves a name once, so an answer that changes to a private address is never used', async () => {
    const answers = [['127.0.0.1'], ['10.9.9.9']];
    const resolve = vi.fn<Resolver>(async () => answers.shift() ?? ['10.9.9.9']);
    const f = fetcher({ resolve });
    const page = await f.get(`http://rebind.test:${server.port}/`);
    expect(page.status).toBe(200);
    expect(resolve).toHaveBeenCalledTimes(1);
    expect(f.connect.mock.calls.map((c) => c[0].address)).toEqual(['127.0.0.1']);
  });

  it('checks every redirect: a redirect into the metadata address is refused', async () => {
    const f = fetcher();
    await expect(f.get(`${server.origin}/to-metadata`)).rejects.toMatchObject({ status: 400 });
    expect(f.connect.mock.calls.map((c) => c[0].address)).toEqual(['127.0.0.1']);
  });

  it('checks every redirect: a redirect to a name that resolves privately is refused', async () => {
    const resolve = vi.fn<Resolver>(async (host) => (host === 'intranet.test' ? ['192.168.0.10'] : ['127.0.0.1']));
    const f = fetcher({ resolve });
    await expect(f.get(`${server.origin}/to-private-name`)).rejects.toMatchObject({ status: 400 });
    expect(resolve).toHaveBeenCalledWith('intranet.test', expect.any(AbortSignal));
    expect(f.connect).toHaveBeenCalledTimes(1);
  });

  it('fails like any bad answer on a redirect whose Location is no url, connecting nowhere else', async () => {
    const f = fetcher();
    await expect(f.get(`${server.origin}/to-no-url`)).rejects.toMatchObject({ status: 400, message: 'The link could not be fetched' });
    expect(f.connect).toHaveBeenCalledTimes(1);
  });

  it('stops after five redirects', async () => {
    const f = fetcher();
    await expect(f.get(`${server.origin}/loop`)).rejects.toMatchObject({ status: 400, message: 'The link redirects too many times' });
    expect(f.connect).toHaveBeenCalledTimes(6);
  });

  it('reads at most the byte limit of a large page and says it was cut', async () => {
    const f = fetcher();
    const page = await f.get(`${server.origin}/big`, 100 * 1024);
    expect(page.truncated).toBe(true);
    expect(page.body.length).toBe(100 * 1024);
    expect(page.body.subarray(0, 18).toString()).toBe('<title>big</title>');
  });

  it('gives up on a page that does not finish within the deadline', async () => {
    const f = fetcher({ timeoutMs: 300 });
    await expect(f.get(`${server.origin}/stall`)).rejects.toMatchObject({ status: 400, message: 'The link took too long to answer' });
  });
});
