import { Permission, toMask } from '@chat/contracts';
import { TokenVerifier } from 'livekit-server-sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGuilds } from './harness.ts';

/** STREAM (video and screen share) in a voice channel's media grant: without it, the microphone only. */

const g = await startGuilds();
afterAll(() => g.close());

const verifier = new TokenVerifier('devkey', 'secret');
let owner: string;
let serverId: string;

beforeAll(async () => {
  owner = await g.knownUser('owner');
  serverId = (await g.call(owner, 'POST', '/v1/servers', { name: 'Streams', isPublic: true })).body.id;
});

/** A voice channel whose @everyone override denies these bits. */
async function voiceDenying(bits: bigint): Promise<string> {
  const { id } = await g.newChannel(owner, serverId, 'room', 'voice');
  const put = await g.call(owner, 'PUT', `/v1/channels/${id}/permissions`, { roleId: serverId, allowBits: 0, denyBits: toMask(bits) });
  expect(put.status).toBe(200);
  return id;
}

/** What a new member's join grant, and the grant asked afterwards, allow. */
async function grantsIn(channelId: string) {
  const member = await g.newMemberOf(serverId);
  const joined = await g.call(member, 'POST', '/v1/voice/join', { channelId });
  expect(joined.status).toBe(200);
  const again = await g.call(member, 'POST', '/v1/voice/grant');
  expect(again.status).toBe(200);
  return [(await verifier.verify(joined.body.grant.token)).video, (await verifier.verify(again.body.token)).video];
}

describe('STREAM in voice media grants', () => {
  it('a member with SPEAK but without STREAM may publish the microphone only', async () => {
    const channelId = await voiceDenying(Permission.STREAM);
    for (const video of await grantsIn(channelId)) {
      expect(video).toMatchObject({ room: channelId, canPublish: true, canPublishSources: ['microphone'] });
    }
  });

  it('a member with SPEAK and STREAM is not limited to sources', async () => {
    const channelId = await voiceDenying(0n);
    for (const video of await grantsIn(channelId)) {
      expect(video).toMatchObject({ canPublish: true, canPublishData: true });
      expect(video?.canPublishSources).toBeUndefined();
    }
  });

  it('a member without SPEAK publishes nothing, STREAM or not', async () => {
    for (const bits of [Permission.SPEAK, Permission.SPEAK | Permission.STREAM]) {
      for (const video of await grantsIn(await voiceDenying(bits))) {
        expect(video).toMatchObject({ canPublish: false, canPublishData: false });
        expect(video?.canPublishSources).toBeUndefined();
      }
    }
  });
});
