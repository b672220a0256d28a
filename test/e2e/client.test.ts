import { randomBytes } from 'node:crypto';
import { ApiError, type ChatClient, createClient } from '@chat/client';
import { describe, expect, it } from 'vitest';
import { gateway, randomIp } from './helpers.ts';

// @chat/client against the real platform: a session from registration to a conversation in a
// channel, a token refreshed on a 401, and the server's errors as ApiError.

/** A client of its own client IP (the e2e gateway trusts 127.0.0.1 as a proxy) with a registered user. */
async function signedUp(): Promise<{ client: ChatClient; userId: string }> {
  const client = createClient({ baseUrl: gateway, headers: { 'x-forwarded-for': randomIp() } });
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
