import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { html, startPageServer } from '../../services/media/test/page-server.ts';
import { api, conversationOnceKnown, newUser, type TestUser } from './helpers.ts';

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

describe('embeds on posted messages', () => {
  it('a channel message with a link gains its preview shortly after posting, and posting did not wait', async () => {
    const guild = (await api('POST', '/v1/servers', { user, body: { name: 'Embeds' } })).body;
    const channels = (await api('GET', `/v1/servers/${guild.id}/channels`, { user })).body as { id: string; channelType: string }[];
    const text = channels.find((c) => c.channelType === 'text') as { id: string };
    const posted = await api('POST', `/v1/channels/${text.id}/messages`, { user, body: { content: `look ${pageUrl()}` } });
    expect(posted.status).toBe(201);
    expect(posted.body.embeds).toEqual([]);
    await vi.waitFor(
      async () => {
        const [message] = (await api('GET', `/v1/channels/${text.id}/messages`, { user })).body;
        expect(message.embeds).toEqual([expect.objectContaining({ url: pageUrl(), title: 'An article', siteName: 'Local news' })]);
      },
      { timeout: 15_000, interval: 200 },
    );
  });

  it('a direct message with a link gains its preview too', async () => {
    const friend = await newUser('embedfriend');
    const conversationId = await conversationOnceKnown(user, friend);
    const sent = await api('POST', '/v1/dm/messages', { user, body: { conversationId, content: pageUrl() } });
    expect(sent.status).toBe(201);
    await vi.waitFor(
      async () => {
        const [message] = (await api('GET', `/v1/dm/conversations/${conversationId}/messages`, { user: friend })).body;
        expect(message.embeds).toEqual([expect.objectContaining({ url: pageUrl(), title: 'An article' })]);
      },
      { timeout: 15_000, interval: 200 },
    );
  });
});

function pageUrl(): string {
  return `${server.origin}/article`;
}
