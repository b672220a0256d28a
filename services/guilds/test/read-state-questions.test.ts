import { AckableRpc, ServerChannelsAmongRpc } from '@chat/contracts';
import { requestRpc } from '@chat/kit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId, startGuilds } from './harness.ts';

/**
 * The questions social asks guilds for read states and notification settings, answered by the
 * same permission function as REST: may the user mark this channel read at this message
 * (rpc.guilds.channel.ackable), and which of these ids are channels of this server
 * (rpc.guilds.server.channels.among, one question for all of them).
 */

const g = await startGuilds();
afterAll(() => g.close());

const [owner, member, stranger] = [newId(), newId(), newId()];
let serverId: string;
let text: { id: string };
let other: { id: string };
let voice: { id: string };
let hidden: { id: string };

const post = async (channelId: string) =>
  (await g.call(owner, 'POST', `/v1/channels/${channelId}/messages`, { content: 'hi' })).body.id as string;
const ackable = (userId: string, channelId: string, messageId: string) =>
  requestRpc(g.runtime.bus, AckableRpc, { userId, channelId, messageId });

beforeAll(async () => {
  serverId = (await g.call(owner, 'POST', '/v1/servers', { name: 'Acks', isPublic: true })).body.id;
  expect((await g.call(member, 'POST', `/v1/servers/${serverId}/join`)).status).toBe(200);
  const channel = async (name: string, channelType: string) =>
    (await g.call(owner, 'POST', `/v1/servers/${serverId}/channels`, { name, channelType })).body as { id: string };
  [text, other, voice, hidden] = [
    await channel('text', 'text'),
    await channel('other', 'text'),
    await channel('voice', 'voice'),
    await channel('staff', 'text'),
  ];
  expect((await g.call(owner, 'PATCH', `/v1/channels/${hidden.id}`, { isHidden: true })).status).toBe(200);
});

describe('rpc.guilds.channel.ackable', () => {
  it('answers yes for a viewer of the channel and one of its messages', async () => {
    expect(await ackable(member, text.id, await post(text.id))).toEqual({ viewable: true, holdsMessage: true });
  });

  it('answers that the channel does not hold a message of another channel, nor a voice channel any', async () => {
    const elsewhere = await post(other.id);
    expect(await ackable(member, text.id, elsewhere)).toEqual({ viewable: true, holdsMessage: false });
    expect(await ackable(member, voice.id, elsewhere)).toEqual({ viewable: true, holdsMessage: false });
  });

  it('answers that a deleted message is held no more', async () => {
    const gone = await post(text.id);
    expect((await g.call(owner, 'DELETE', `/v1/channels/${text.id}/messages/${gone}`)).status).toBe(204);
    expect(await ackable(member, text.id, gone)).toEqual({ viewable: true, holdsMessage: false });
  });

  it('answers not viewable for a hidden channel, a non-member and an unknown channel', async () => {
    const inHidden = await post(hidden.id);
    expect(await ackable(member, hidden.id, inHidden)).toMatchObject({ viewable: false });
    expect(await ackable(stranger, text.id, await post(text.id))).toMatchObject({ viewable: false });
    expect(await ackable(member, newId(), inHidden)).toEqual({ viewable: false, holdsMessage: false });
  });
});

describe('rpc.guilds.server.channels.among', () => {
  it('answers the ids that are channels of the server, leaving out other servers’ and unknown ones', async () => {
    const elsewhere = (await g.call(owner, 'POST', '/v1/servers', { name: 'Else', isPublic: true })).body.id as string;
    const foreign = (await g.call(owner, 'POST', `/v1/servers/${elsewhere}/channels`, { name: 'x', channelType: 'text' })).body
      .id as string;
    const reply = await requestRpc(g.runtime.bus, ServerChannelsAmongRpc, {
      serverId,
      channelIds: [text.id, foreign, newId(), voice.id, text.id],
    });
    expect(reply.channelIds.sort()).toEqual([text.id, voice.id].sort());
  });
});
