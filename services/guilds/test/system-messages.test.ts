import { Permission, toMask } from '@chat/contracts';
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

describe('editing a system message', () => {
  it('answers 403 to the joining user who authored member_join, even in a read-only channel, and changes nothing', async () => {
    const lobby = (await g.call(owner, 'POST', `/v1/servers/${server.id}/channels`, { name: 'lobby', channelType: 'text' })).body;
    const readOnly = { roleId: server.id, allowBits: 0, denyBits: toMask(Permission.SEND_MESSAGES) };
    expect((await g.call(owner, 'PUT', `/v1/channels/${lobby.id}/permissions`, readOnly)).status).toBe(200);
    await g.call(owner, 'PATCH', `/v1/servers/${server.id}`, { entranceChannelId: lobby.id });
    const joiner = newId();
    expect((await g.call(joiner, 'POST', `/v1/servers/${server.id}/join`)).status).toBe(200);
    const [join] = (await g.db.query('SELECT id FROM messages WHERE channel_id = $1 AND author_id = $2', [lobby.id, joiner])).rows;
    const updatesBefore = (await g.outbox('guilds.message.updated')).length;

    const edited = await g.call(joiner, 'PATCH', `/v1/channels/${lobby.id}/messages/${join.id}`, {
      content: 'free nitro at https://phish.test',
    });
    expect(edited.status).toBe(403);
    expect(edited.body).toEqual({ error: 'Cannot edit a system message' });
    expect(await messagesIn(lobby.id)).toEqual([{ author_id: joiner, content: '', type: 'member_join', reply_to_id: null }]);
    expect((await g.db.query('SELECT edited_at FROM messages WHERE id = $1', [join.id])).rows).toEqual([{ edited_at: null }]);
    expect(await g.outbox('guilds.message.updated')).toHaveLength(updatesBefore);
  });

  it('answers 403 to who pinned for the pinned message, while the pinned message itself stays editable', async () => {
    const text = (await g.call(owner, 'POST', `/v1/servers/${server.id}/channels`, { name: 'pins', channelType: 'text' })).body;
    const first = await g.call(owner, 'POST', `/v1/channels/${text.id}/messages`, { content: 'keep this' });
    expect((await g.call(owner, 'PUT', `/v1/channels/${text.id}/pins/${first.body.id}`)).status).toBe(204);
    const [pin] = (await g.db.query("SELECT id FROM messages WHERE channel_id = $1 AND type = 'pinned'", [text.id])).rows;

    const edited = await g.call(owner, 'PATCH', `/v1/channels/${text.id}/messages/${pin.id}`, { content: 'rewritten' });
    expect(edited.status).toBe(403);
    expect(edited.body).toEqual({ error: 'Cannot edit a system message' });
    const own = await g.call(owner, 'PATCH', `/v1/channels/${text.id}/messages/${first.body.id}`, { content: 'kept' });
    expect(own.status).toBe(200);
    expect(own.body).toMatchObject({ content: 'kept', type: 'default' });
    expect(await messagesIn(text.id)).toEqual([
      { author_id: owner, content: 'kept', type: 'default', reply_to_id: null },
      { author_id: owner, content: '', type: 'pinned', reply_to_id: first.body.id },
    ]);
  });

  it('still lets members react to, pin and reply to a system message (as Discord does)', async () => {
    const welcome = (await g.call(owner, 'POST', `/v1/servers/${server.id}/channels`, { name: 'hello', channelType: 'text' })).body;
    await g.call(owner, 'PATCH', `/v1/servers/${server.id}`, { entranceChannelId: welcome.id });
    const joiner = newId();
    expect((await g.call(joiner, 'POST', `/v1/servers/${server.id}/join`)).status).toBe(200);
    const [join] = (await g.db.query('SELECT id FROM messages WHERE channel_id = $1', [welcome.id])).rows;

    expect(
      (await g.call(owner, 'PUT', `/v1/channels/${welcome.id}/messages/${join.id}/reactions/${encodeURIComponent('👋')}/@me`)).status,
    ).toBe(204);
    expect((await g.call(owner, 'PUT', `/v1/channels/${welcome.id}/pins/${join.id}`)).status).toBe(204);
    const reply = await g.call(owner, 'POST', `/v1/channels/${welcome.id}/messages`, { content: 'welcome!', replyToId: join.id });
    expect(reply.status).toBe(201);
    expect(reply.body).toMatchObject({ type: 'reply', replyToId: join.id });
    const [row] = (await g.db.query('SELECT pinned_at IS NOT NULL AS pinned FROM messages WHERE id = $1', [join.id])).rows;
    expect(row).toEqual({ pinned: true });
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
