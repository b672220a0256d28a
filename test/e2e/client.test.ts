import { randomBytes } from 'node:crypto';
import { ApiError, type ChatClient, type ClientOptions, createClient, type TokenPair } from '@chat/client';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type FaultProxy, startFaultProxy } from './fault-proxy.ts';
import { gateway, randomIp } from './helpers.ts';

// @chat/client against the real platform: a session from registration to a conversation in a
// channel, a token refreshed on a 401, the server's errors as ApiError, files as bytes, and the
// retries through a proxy that loses answers and resets connections.

/**
 * A client of its own client IP (the e2e gateway trusts 127.0.0.1 as a proxy) with a registered
 * user; `baseUrl` may be the fault proxy.
 */
async function signedUp(baseUrl = gateway, options: Partial<ClientOptions> = {}): Promise<{ client: ChatClient; userId: string }> {
  const client = createClient({ baseUrl, headers: { 'x-forwarded-for': randomIp() }, retryDelayMs: 20, ...options });
  const username = `cl_${randomBytes(5).toString('hex')}`;
  const registered = await client.auth.register({
    body: { username, email: `${username}@example.test`, password: `pw-${randomBytes(8).toString('hex')}` },
  });
  if (!('user' in registered)) throw new Error('email verification is on in the e2e platform');
  return { client, userId: registered.user.id };
}

describe('@chat/client', () => {
  it('signs up, creates a server and a channel, posts and reads messages', async () => {
    const { client, userId } = await signedUp();
    expect(client.tokens?.token).toEqual(expect.any(String));

    const server = await client.servers.createServer({ body: { name: 'Client test' } });
    expect(server.ownerId).toBe(userId);
    const channel = await client.servers.createChannel({ params: { serverId: server.id }, body: { name: 'general', channelType: 'text' } });
    const first = await client.messages.sendMessage({ params: { channelId: channel.id }, body: { content: 'hello from the client' } });
    const second = await client.messages.sendMessage({ params: { channelId: channel.id }, body: { content: 'and again' } });
    expect(first.authorId).toBe(userId);

    const newestFirst = await client.messages.listMessages({ params: { channelId: channel.id }, query: { limit: 10 } });
    expect(newestFirst.map((m) => m.content)).toEqual(['and again', 'hello from the client']);
    const after = await client.messages.listMessages({ params: { channelId: channel.id }, query: { after: first.id } });
    expect(after.map((m) => m.id)).toEqual([second.id]);
  });

  it('refreshes an access token the gateway refuses and carries on, with the rotated pair', async () => {
    const { client } = await signedUp();
    const original = client.tokens!;
    client.setTokens({ token: `${original.token}x`, refreshToken: original.refreshToken });

    const me = await client.auth.me();
    expect(me.username).toMatch(/^cl_/);
    expect(client.tokens?.refreshToken).not.toBe(original.refreshToken);
    expect(client.tokens?.token).not.toBe(original.token);

    // The rotated-out refresh token is dead: presenting it ends the session (token family).
    const stale = createClient({ baseUrl: gateway, headers: { 'x-forwarded-for': randomIp() } });
    await expect(stale.auth.refresh({ body: { refreshToken: original.refreshToken } })).rejects.toMatchObject({ status: 401 });
  });

  it("throws ApiError with the gateway's status and message", async () => {
    const { client } = await signedUp();
    const missing = await client.servers.getServer({ params: { serverId: crypto.randomUUID() } }).catch((e: unknown) => e);
    expect(missing).toBeInstanceOf(ApiError);
    expect(missing).toMatchObject({ status: 404, route: 'GET /v1/servers/:serverId' });
    expect((missing as ApiError).message).toMatch(/not found/i);

    const invalid = await client.servers.createServer({ body: { name: '' } }).catch((e: unknown) => e);
    expect(invalid).toMatchObject({ status: 400, message: expect.stringContaining('name') });
  });
});

/** A server of `client`'s and its text channel. */
async function channelOf(client: ChatClient): Promise<string> {
  const server = await client.servers.createServer({ body: { name: 'Client retries' } });
  const channels = await client.servers.listChannels({ params: { serverId: server.id } });
  const text = channels.find((c) => c.channelType === 'text');
  if (!text) throw new Error('a new server has a text channel');
  return text.id;
}

describe('@chat/client through lost answers and failures', () => {
  let proxy: FaultProxy;
  beforeAll(async () => {
    proxy = await startFaultProxy(gateway);
  });
  afterEach(() => proxy.clear());
  afterAll(() => proxy?.close());

  it('retries a message whose connection was reset after the request, with the same key: one message', async () => {
    const { client } = await signedUp(proxy.url);
    const channelId = await channelOf(client);
    const path = `/v1/channels/${channelId}/messages`;
    proxy.inject('POST', path, { kind: 'reset' });

    const sent = await client.messages.sendMessage({ params: { channelId }, body: { content: 'through a reset' } });

    const posts = proxy.requests('POST', path);
    expect(posts).toHaveLength(2);
    expect(posts[1]?.idempotencyKey).toBe(posts[0]?.idempotencyKey);
    const listed = await client.messages.listMessages({ params: { channelId }, query: { limit: 10 } });
    expect(listed.map((m) => m.id)).toEqual([sent.id]);
  });

  it('waits while the first attempt of a message is still running (409) and answers the stored message', async () => {
    const { client } = await signedUp(proxy.url);
    const channelId = await channelOf(client);
    const path = `/v1/channels/${channelId}/messages`;
    // The first attempt is done but its answer lost (504); the retry meets the 409 a still-running
    // first attempt gets (the kit's, injected: the platform is too fast to show it on demand); the
    // next one gets the stored answer.
    const stillRunning = { error: 'A request with this Idempotency-Key is still being processed; retry later' };
    proxy.inject('POST', path, { kind: 'lose', status: 504 }, { kind: 'refuse', status: 409, body: stillRunning });

    const sent = await client.messages.sendMessage({ params: { channelId }, body: { content: 'slow one' } });

    const posts = proxy.requests('POST', path);
    expect(posts).toHaveLength(3);
    expect(new Set(posts.map((p) => p.idempotencyKey)).size).toBe(1);
    const listed = await client.messages.listMessages({ params: { channelId }, query: { limit: 10 } });
    expect(listed.map((m) => [m.id, m.content])).toEqual([[sent.id, 'slow one']]);
  });

  it('opens one conversation through a lost answer (502): createConversation carries a key', async () => {
    const [{ client }, a, b] = await Promise.all([signedUp(proxy.url), signedUp(), signedUp()]);
    proxy.inject('POST', '/v1/dm/conversations', { kind: 'lose', status: 502 });

    const conversation = await client.social.createConversation({ body: { userIds: [a.userId, b.userId] } });

    const posts = proxy.requests('POST', '/v1/dm/conversations');
    expect(posts).toHaveLength(2);
    expect(posts[0]?.idempotencyKey).toEqual(expect.any(String));
    expect(posts[1]?.idempotencyKey).toBe(posts[0]?.idempotencyKey);
    const listed = await client.social.listConversations();
    expect(listed.map((c) => c.id)).toEqual([conversation.id]);
  });

  it('keeps the session when the refresh route answers 503, and refreshes once it is back', async () => {
    const told: (TokenPair | undefined)[] = [];
    const { client } = await signedUp(proxy.url, { maxRetries: 1, onTokens: (pair) => told.push(pair) });
    const original = client.tokens!;
    client.setTokens({ token: `${original.token}x`, refreshToken: original.refreshToken });
    told.length = 0;
    const unavailable = { kind: 'refuse', status: 503 } as const;
    proxy.inject('POST', '/v1/auth/refresh', unavailable, unavailable);

    await expect(client.auth.me()).rejects.toMatchObject({ status: 503, route: 'POST /v1/auth/refresh' });
    expect(client.tokens?.refreshToken).toBe(original.refreshToken);
    expect(told).toEqual([]);

    const me = await client.auth.me();
    expect(me.username).toMatch(/^cl_/);
    expect(client.tokens?.refreshToken).not.toBe(original.refreshToken);
    expect(told).toEqual([client.tokens]);
  });
});

describe('@chat/client token routes, files and waits', () => {
  it('keeps the pair of an explicit auth.refresh: the next refresh presents it and the session lives on', async () => {
    const { client } = await signedUp();
    const old = client.tokens!;
    const fresh = await client.auth.refresh({ body: { refreshToken: old.refreshToken } });
    expect(client.tokens).toEqual({ token: fresh.token, refreshToken: fresh.refreshToken });

    // The access token expires: the client refreshes with the live refresh token, not the rotated-out one.
    client.setTokens({ token: `${fresh.token}x`, refreshToken: fresh.refreshToken });
    expect((await client.auth.me()).username).toMatch(/^cl_/);
    const other = createClient({ baseUrl: gateway, headers: { 'x-forwarded-for': randomIp() } });
    await expect(other.auth.refresh({ body: { refreshToken: client.tokens!.refreshToken } })).resolves.toMatchObject({
      token: expect.any(String),
    });
  });

  it('hands back the bytes of a served file unchanged', async () => {
    const { client } = await signedUp();
    // A 1x1 PNG: binary, not UTF-8.
    const png = Buffer.from(
      '89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c4890000000d4944415478da63f8cfc0f01f0005000201e2216bc40000000049454e44ae426082',
      'hex',
    );
    const form = new FormData();
    form.append('file', new Blob([png], { type: 'image/png' }), 'dot.png');
    const uploaded = await client.media.upload({ body: form });

    const served = await client.media.serve({ params: { id: uploaded.id, filename: uploaded.filename } });

    expect(served).toBeInstanceOf(Uint8Array);
    expect(Buffer.from(served).equals(png)).toBe(true);
  });

  it('tells the app how long to wait with a 429 it throws (the login tier)', async () => {
    const anonymous = createClient({ baseUrl: gateway, headers: { 'x-forwarded-for': randomIp() }, maxRetries: 0 });
    let limited: ApiError | undefined;
    for (let i = 0; i < 10 && !limited; i++) {
      const failed = await anonymous.auth.login({ body: { login: `nobody_${i}`, password: 'wrong-password-1' } }).catch((e: unknown) => e);
      if (failed instanceof ApiError && failed.status === 429) limited = failed;
    }
    expect(limited?.retryAfter).toBeGreaterThan(0);
    expect(limited?.retryAfter).toBeLessThanOrEqual(60);
  });
});
