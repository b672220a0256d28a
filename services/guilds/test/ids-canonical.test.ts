import { GUILDS_SUBJECTS, MESSAGES_SUBJECTS } from '@chat/contracts';
import { afterAll, describe, expect, it } from 'vitest';
import { newId, startGuilds } from './harness.ts';

/**
 * Ids written in upper case name the same record as in lower case, and everything that leaves
 * (answers, events the gateway keys its audience cache by) names it in lower case.
 */

const g = await startGuilds();
afterAll(() => g.close());

const upper = (id: string) => id.toUpperCase();

async function serverWithMember() {
  const [owner, member] = [newId(), await g.knownUser('member')];
  const server = (await g.call(owner, 'POST', '/v1/servers', { name: 'Ids', isPublic: true })).body as { id: string };
  expect((await g.call(member, 'POST', `/v1/servers/${server.id}/join`)).status).toBe(200);
  const channel = await g.newChannel(owner, server.id, 'general');
  return { owner, member, serverId: server.id, channelId: channel.id };
}

const eventsAbout = async (subject: string, key: string, value: string) =>
  (await g.outbox(subject)).map((e) => e.data).filter((d) => String(d[key]).toLowerCase() === value);

describe('ids in upper case', () => {
  it('a post through an upper-case channel id answers and tells the channel id in lower case', async () => {
    const { owner, channelId } = await serverWithMember();
    const posted = await g.call(owner, 'POST', `/v1/channels/${upper(channelId)}/messages`, { content: 'hi' });
    expect(posted.status).toBe(201);
    expect(posted.body.channelId).toBe(channelId);
    const [event] = (await g.outbox(MESSAGES_SUBJECTS.messageCreated)).map((e) => e.data).filter((d) => d.id === posted.body.id);
    expect(event).toMatchObject({ id: posted.body.id, channelId });
    const read = await g.call(owner, 'GET', `/v1/channels/${upper(channelId)}`);
    expect(read.status).toBe(200);
    expect(read.body.id).toBe(channelId);
  });

  it('a kick and a ban through an upper-case server id tell the server id in lower case (the gateway’s audience key)', async () => {
    const kicked = await serverWithMember();
    const kick = await g.call(kicked.owner, 'DELETE', `/v1/servers/${upper(kicked.serverId)}/members/${upper(kicked.member)}`);
    expect(kick.status).toBe(204);
    expect(await eventsAbout(GUILDS_SUBJECTS.memberLeft, 'serverId', kicked.serverId)).toEqual([
      expect.objectContaining({ serverId: kicked.serverId, userId: kicked.member, reason: 'kicked' }),
    ]);
    const banned = await serverWithMember();
    const ban = await g.call(banned.owner, 'PUT', `/v1/servers/${upper(banned.serverId)}/bans/${upper(banned.member)}`, {});
    expect(ban.status).toBe(200);
    expect(ban.body).toMatchObject({ serverId: banned.serverId, userId: banned.member });
    expect(await eventsAbout(GUILDS_SUBJECTS.memberBanned, 'serverId', banned.serverId)).toEqual([
      expect.objectContaining({ serverId: banned.serverId, userId: banned.member }),
    ]);
  });

  it('a member sets their own nickname through their id in upper case, and the event names them in lower case', async () => {
    const { serverId, member } = await serverWithMember();
    const own = await g.call(member, 'PATCH', `/v1/servers/${upper(serverId)}/members/${upper(member)}`, { nickname: 'me' });
    expect(own.status).toBe(200);
    expect(own.body).toMatchObject({ serverId, userId: member, nickname: 'me' });
    expect(await eventsAbout(GUILDS_SUBJECTS.memberUpdated, 'userId', member)).toEqual([
      expect.objectContaining({ serverId, userId: member, nickname: 'me' }),
    ]);
  });

  it('takes one role in two spellings as one DJ role', async () => {
    const { owner, serverId } = await serverWithMember();
    const role = (await g.call(owner, 'POST', `/v1/servers/${serverId}/roles`, { name: 'dj' })).body as { id: string };
    const patched = await g.call(owner, 'PATCH', `/v1/servers/${serverId}`, { djRoleIds: [role.id, upper(role.id)] });
    expect(patched.status).toBe(200);
    expect(patched.body.djRoleIds).toEqual([role.id]);
    const { rows } = await g.db.query('SELECT dj_role_ids FROM servers WHERE id = $1', [serverId]);
    expect(rows[0].dj_role_ids).toEqual([role.id]);
  });
});
