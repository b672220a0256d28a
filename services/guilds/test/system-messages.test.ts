import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId, startGuilds } from './harness.ts';

const g = await startGuilds();
afterAll(() => g.close());

type Row = Record<string, unknown>;
const owner = newId();
let server: { id: string };
let entrance: { id: string };

const messagesIn = async (channelId: string) =>
  (await g.db.query('SELECT author_id, content, type, reply_to_id FROM messages WHERE channel_id = $1 ORDER BY id', [channelId])).rows;

beforeAll(async () => {
  server = (await g.call(owner, 'POST', '/v1/servers', { name: 'Welcome', isPublic: true })).body;
  entrance = (await g.call(owner, 'POST', `/v1/servers/${server.id}/channels`, { name: 'welcome', channelType: 'text' })).body;
});

describe('member_join', () => {
  it('is not posted while no entrance channel is set', async () => {
    expect((await g.call(newId(), 'POST', `/v1/servers/${server.id}/join`)).status).toBe(200);
    expect(await messagesIn(entrance.id)).toEqual([]);
  });

  it('is posted in the entrance channel for a public join, an invite and an approved request, by the joining user', async () => {
    const set = await g.call(owner, 'PATCH', `/v1/servers/${server.id}`, { entranceChannelId: entrance.id });
    expect(set.body.entranceChannelId).toBe(entrance.id);
    const [publicJoiner, invited, approved] = [newId(), newId(), newId()];

    const joined = await g.call(publicJoiner, 'POST', `/v1/servers/${server.id}/join`);
    expect(joined.body.entranceChannelId).toBe(entrance.id);
    const invite = (await g.call(owner, 'POST', `/v1/servers/${server.id}/invites`, {})).body;
    expect((await g.call(invited, 'POST', `/v1/invites/${invite.code}/accept`)).status).toBe(200);
    await g.call(owner, 'PATCH', `/v1/servers/${server.id}`, { requireApproval: true });
    const request = (await g.call(approved, 'POST', `/v1/servers/${server.id}/join-requests`, {})).body;
    expect(await messagesIn(entrance.id)).toHaveLength(2);
    expect((await g.call(owner, 'POST', `/v1/servers/${server.id}/join-requests/${request.id}/approve`)).status).toBe(200);
    await g.call(owner, 'PATCH', `/v1/servers/${server.id}`, { requireApproval: false });

    expect(await messagesIn(entrance.id)).toEqual(
      [publicJoiner, invited, approved].map((author) => ({ author_id: author, content: '', type: 'member_join', reply_to_id: null })),
    );
    const listed = await g.call(approved, 'GET', `/v1/channels/${entrance.id}/messages`);
    expect(listed.body).toContainEqual(expect.objectContaining({ authorId: approved, content: '', type: 'member_join' }));
    const created = (await g.outbox('guilds.message.created')).map((e) => e.data).filter((d: Row) => d.channelId === entrance.id);
    expect(created.map((d: Row) => [d.authorId, d.type])).toEqual([publicJoiner, invited, approved].map((a) => [a, 'member_join']));
  });

  it('is not posted when the entrance channel was deleted', async () => {
    const doomed = (await g.call(owner, 'POST', `/v1/servers/${server.id}/channels`, { name: 'doomed', channelType: 'text' })).body;
    await g.call(owner, 'PATCH', `/v1/servers/${server.id}`, { entranceChannelId: doomed.id });
    expect((await g.call(owner, 'DELETE', `/v1/channels/${doomed.id}`)).status).toBe(204);
    const before = (await g.db.query('SELECT count(*)::int AS n FROM messages')).rows[0].n;
    expect((await g.call(newId(), 'POST', `/v1/servers/${server.id}/join`)).status).toBe(200);
    expect((await g.db.query('SELECT count(*)::int AS n FROM messages')).rows[0].n).toBe(before);
  });
});

describe('message types', () => {
  it('are default, reply, and pinned for a pin (by who pinned, pointing at the message), once per pin', async () => {
    const text = (await g.call(owner, 'POST', `/v1/servers/${server.id}/channels`, { name: 'talk', channelType: 'text' })).body;
    const first = await g.call(owner, 'POST', `/v1/channels/${text.id}/messages`, { content: 'hello' });
    expect(first.body.type).toBe('default');
    const reply = await g.call(owner, 'POST', `/v1/channels/${text.id}/messages`, { content: 'again', replyToId: first.body.id });
    expect(reply.body.type).toBe('reply');

    expect((await g.call(owner, 'PUT', `/v1/channels/${text.id}/pins/${first.body.id}`)).status).toBe(204);
    expect((await g.call(owner, 'PUT', `/v1/channels/${text.id}/pins/${first.body.id}`)).status).toBe(204);
    expect((await g.call(owner, 'DELETE', `/v1/channels/${text.id}/pins/${first.body.id}`)).status).toBe(204);
    expect(await messagesIn(text.id)).toEqual([
      { author_id: owner, content: 'hello', type: 'default', reply_to_id: null },
      { author_id: owner, content: 'again', type: 'reply', reply_to_id: first.body.id },
      { author_id: owner, content: '', type: 'pinned', reply_to_id: first.body.id },
    ]);
  });
});
