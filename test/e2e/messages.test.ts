import { beforeAll, describe, expect, it } from 'vitest';
import { api, newUser, type TestUser } from './helpers.ts';

/** Channel messages, reactions, pins and webhooks through the gateway, with users registered at auth. */

let owner: TestUser;
let member: TestUser;
let channelId: string;

beforeAll(async () => {
  [owner, member] = [await newUser('msgowner'), await newUser('msgmember')];
  const server = (await api('POST', '/v1/servers', { user: owner, body: { name: 'E2E messages', isPublic: true } })).body;
  expect((await api('POST', `/v1/servers/${server.id}/join`, { user: member })).status).toBe(200);
  const channels = (await api('GET', `/v1/servers/${server.id}/channels`, { user: member })).body as { id: string; channelType: string }[];
  channelId = (channels.find((c) => c.channelType === 'text') as { id: string }).id;
});

describe('messages through the gateway', () => {
  it('posts a message that the other member then reads, reacts to and sees pinned', async () => {
    const posted = await api('POST', `/v1/channels/${channelId}/messages`, { user: member, body: { content: 'hello through the edge' } });
    expect(posted.status).toBe(201);
    expect(posted.body).toMatchObject({ channelId, authorId: member.id, content: 'hello through the edge', pinned: false, reactions: {} });
    const messageId = posted.body.id as string;

    // The emoji travels percent-encoded through the gateway's route table and proxy.
    const thumbs = encodeURIComponent('👍');
    expect((await api('PUT', `/v1/channels/${channelId}/messages/${messageId}/reactions/${thumbs}/@me`, { user: owner })).status).toBe(204);
    expect((await api('PUT', `/v1/channels/${channelId}/pins/${messageId}`, { user: owner })).status).toBe(204);

    const history = await api('GET', `/v1/channels/${channelId}/messages?limit=10`, { user: owner });
    expect(history.status).toBe(200);
    const seen = (history.body as { id: string }[]).find((m) => m.id === messageId);
    expect(seen).toMatchObject({ content: 'hello through the edge', pinned: true, reactions: { '👍': { count: 1, me: true } } });
    const asMember = (await api('GET', `/v1/channels/${channelId}/messages?limit=10`, { user: member })).body as { id: string }[];
    expect(asMember.find((m) => m.id === messageId)).toMatchObject({ reactions: { '👍': { count: 1, me: false } } });
    const pins = await api('GET', `/v1/channels/${channelId}/pins`, { user: member });
    expect(pins.status).toBe(200);
    expect((pins.body as { id: string }[]).map((m) => m.id)).toContain(messageId);
  });

  it('hides the channel from a stranger (404) and refuses a post without a token (401)', async () => {
    const stranger = await newUser('msgstranger');
    const read = await api('GET', `/v1/channels/${channelId}/messages`, { user: stranger });
    expect(read.status).toBe(404);
    expect(read.body).toEqual({ error: expect.any(String) });
    const anonymous = await api('POST', `/v1/channels/${channelId}/messages`, { body: { content: 'who am I' } });
    expect(anonymous.status).toBe(401);
    expect(anonymous.body).toEqual({ error: expect.any(String) });
  });

  it('runs a webhook by the token in its path, without a bearer token, in the Webhook tier', async () => {
    const created = await api('POST', `/v1/channels/${channelId}/webhooks`, { user: owner, body: { name: 'Deploy bot' } });
    expect(created.status).toBe(201);
    const { id, token } = created.body as { id: string; token: string };

    const waited = await api('POST', `/v1/webhooks/${id}/${token}?wait=true`, { body: { content: 'deployed' } });
    expect(waited.status).toBe(200);
    expect(waited.body).toMatchObject({ channelId, content: 'deployed', webhookId: id, authorId: id, authorName: 'Deploy bot' });
    expect(waited.headers.get('x-ratelimit-limit')).toBe('30');

    const quiet = await api('POST', `/v1/webhooks/${id}/${token}`, { body: { content: 'deployed again' } });
    expect(quiet.status).toBe(204);
    expect(quiet.body).toBeUndefined();

    const wrong = await api('POST', `/v1/webhooks/${id}/${'x'.repeat(43)}`, { body: { content: 'forged' } });
    expect(wrong.status).toBe(401);
    expect(wrong.body).toEqual({ error: expect.any(String) });

    const history = (await api('GET', `/v1/channels/${channelId}/messages?limit=10`, { user: member })).body as { content: string }[];
    expect(history.map((m) => m.content)).toEqual(expect.arrayContaining(['deployed', 'deployed again']));
    expect(history.map((m) => m.content)).not.toContain('forged');
  });
});
