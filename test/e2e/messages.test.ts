import { beforeAll, describe, expect, it } from 'vitest';
import { type ClientUser, failure, newClientUser, recordingClient } from './helpers.ts';

/** Channel messages, reactions, pins and webhooks through the gateway, with users registered at auth. */

let owner: ClientUser;
let member: ClientUser;
let channelId: string;

beforeAll(async () => {
  [owner, member] = [await newClientUser('msgowner'), await newClientUser('msgmember')];
  const server = await owner.client.servers.createServer({ body: { name: 'E2E messages', isPublic: true } });
  await member.client.servers.joinServer({ params: { serverId: server.id } });
  expect(member.status()).toBe(200);
  const channels = await member.client.servers.listChannels({ params: { serverId: server.id } });
  channelId = (channels.find((c) => c.channelType === 'text') as { id: string }).id;
});

describe('messages through the gateway', () => {
  it('posts a message that the other member then reads, reacts to and sees pinned', async () => {
    const posted = await member.client.messages.sendMessage({ params: { channelId }, body: { content: 'hello through the edge' } });
    expect(member.status()).toBe(201);
    expect(posted).toMatchObject({ channelId, authorId: member.id, content: 'hello through the edge', pinned: false, reactions: {} });
    const messageId = posted.id;

    // The emoji travels percent-encoded through the gateway's route table and proxy.
    await owner.client.messages.addReaction({ params: { channelId, messageId, emoji: '👍' } });
    expect(owner.status()).toBe(204);
    await owner.client.messages.pinMessage({ params: { channelId, messageId } });
    expect(owner.status()).toBe(204);

    const history = await owner.client.messages.listMessages({ params: { channelId }, query: { limit: 10 } });
    expect(owner.status()).toBe(200);
    const seen = history.find((m) => m.id === messageId);
    expect(seen).toMatchObject({ content: 'hello through the edge', pinned: true, reactions: { '👍': { count: 1, me: true } } });
    const asMember = await member.client.messages.listMessages({ params: { channelId }, query: { limit: 10 } });
    expect(asMember.find((m) => m.id === messageId)).toMatchObject({ reactions: { '👍': { count: 1, me: false } } });
    const pins = await member.client.messages.listPins({ params: { channelId } });
    expect(member.status()).toBe(200);
    expect(pins.map((m) => m.id)).toContain(messageId);
  });

  it('hides the channel from a stranger (404) and refuses a post without a token (401)', async () => {
    const stranger = await newClientUser('msgstranger');
    const read = await failure(stranger.client.messages.listMessages({ params: { channelId } }));
    expect(read.status).toBe(404);
    expect(read.body).toEqual({ error: expect.any(String) });
    const anonymous = await failure(
      recordingClient().client.messages.sendMessage({ params: { channelId }, body: { content: 'who am I' } }),
    );
    expect(anonymous.status).toBe(401);
    expect(anonymous.body).toEqual({ error: expect.any(String) });
  });

  it('runs a webhook by the token in its path, without a bearer token, in the Webhook tier', async () => {
    const created = await owner.client.messages.createWebhook({ params: { channelId }, body: { name: 'Deploy bot' } });
    expect(owner.status()).toBe(201);
    const { id, token } = created;

    const caller = recordingClient();
    const waited = await caller.client.messages.executeWebhook({
      params: { id, token },
      query: { wait: 'true' },
      body: { content: 'deployed' },
    });
    expect(caller.status()).toBe(200);
    expect(waited).toMatchObject({ channelId, content: 'deployed', webhookId: id, authorId: id, authorName: 'Deploy bot' });
    expect(caller.headers()?.get('x-ratelimit-limit')).toBe('30');

    const quiet = await caller.client.messages.executeWebhook({ params: { id, token }, body: { content: 'deployed again' } });
    expect(caller.status()).toBe(204);
    expect(quiet).toBeUndefined();

    const wrong = await failure(
      caller.client.messages.executeWebhook({ params: { id, token: 'x'.repeat(43) }, body: { content: 'forged' } }),
    );
    expect(wrong.status).toBe(401);
    expect(wrong.body).toEqual({ error: expect.any(String) });

    const history = await member.client.messages.listMessages({ params: { channelId }, query: { limit: 10 } });
    expect(history.map((m) => m.content)).toEqual(expect.arrayContaining(['deployed', 'deployed again']));
    expect(history.map((m) => m.content)).not.toContain('forged');
  });
});
