import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { html, startPageServer } from '../../services/media/test/page-server.ts';
import { api, newUser, type TestUser } from './helpers.ts';

let server: Awaited<ReturnType<typeof startPageServer>>;
let user: TestUser;

beforeAll(async () => {
  server = await startPageServer({
    '/article': html('<meta property="og:title" content="An article"><meta property="og:site_name" content="Local news">'),
  });
  user = await newUser('preview');
});
afterAll(() => server.close());

describe('link previews through the gateway', () => {
  it('previews a page', async () => {
    const res = await api('GET', `/v1/link-preview?url=${encodeURIComponent(`${server.origin}/article`)}`, { user });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      url: `${server.origin}/article`,
      title: 'An article',
      description: null,
      siteName: 'Local news',
      imageUrl: null,
      type: 'website',
    });
  });

  it('refuses a private address with 400 and an error body', async () => {
    const res = await api('GET', `/v1/link-preview?url=${encodeURIComponent('http://169.254.169.254/latest/meta-data/')}`, { user });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error: 'The link points to an address that is not allowed' });
  });

  it('needs a token', async () => {
    const res = await api('GET', `/v1/link-preview?url=${encodeURIComponent(`${server.origin}/article`)}`);
    expect(res.status).toBe(401);
  });
});
