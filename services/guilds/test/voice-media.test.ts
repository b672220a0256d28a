import { randomUUID } from 'node:crypto';
import { DEFAULT_EVERYONE_PERMISSIONS, type MediaGrant, Permission, toMask } from '@chat/contracts';
import { mediaGrantIssuer, mediaRooms } from '@chat/kit';
import { joinRoom, lastAttempt, liveKitRooms, participantIn, type RoomParticipant, until, untilGone } from '@chat/testkit';
import { TrackSource } from 'livekit-server-sdk';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { consumeVoiceMedia } from '../src/bus/voice-media.ts';
import { checkVoiceRooms, syncVoiceAccess } from '../src/domain/voice.ts';
import { startGuilds } from './harness.ts';

/**
 * The voice rooms on a real LiveKit (scripts/backing.sh starts one) follow the voice states: a
 * grant only lets its holder connect, so whoever a change takes out of a channel must be taken out
 * of its room by guilds, and a server mute must reach a participant who is already connected.
 */

const g = await startGuilds();
afterAll(() => g.close());
const rooms = liveKitRooms(inject('backing').livekit);

let owner: string;
let serverId: string;

beforeAll(async () => {
  owner = await g.knownUser('owner');
  serverId = (await g.call(owner, 'POST', '/v1/servers', { name: 'Voice rooms', isPublic: true })).body.id;
});

const voiceChannel = async (name = 'room') => (await g.newChannel(owner, serverId, name, 'voice')).id;

/** A new member of the server whom the read-model of users knows (a ban answers the user's record). */
async function newMember(): Promise<string> {
  const userId = await g.knownUser('member');
  expect((await g.call(userId, 'POST', `/v1/servers/${serverId}/join`)).status).toBe(200);
  return userId;
}

/** A member (a new one unless given) who joined the voice channel and connected to its room with the grant the join answered. */
async function connectedMember(
  channelId: string,
  userId?: string,
): Promise<{ userId: string; participant: RoomParticipant; grant: MediaGrant }> {
  const member = userId ?? (await newMember());
  const joined = await g.call(member, 'POST', '/v1/voice/join', { channelId });
  expect(joined.status).toBe(200);
  const participant = await joinRoom(joined.body.grant);
  await until(() => participantIn(rooms, channelId, member), { what: `${member} is in room ${channelId}` });
  return { userId: member, participant, grant: joined.body.grant };
}

/** Whether LiveKit still lists the user in the room, once it had time to take them out. */
const stillIn = async (room: string, userId: string) =>
  Boolean(
    await lastAttempt(
      () => participantIn(rooms, room, userId),
      (p) => !p,
    ),
  );

describe('voice rooms follow the voice states', () => {
  it.each([
    ['a moderator disconnects them', (userId: string) => g.call(owner, 'DELETE', `/v1/servers/${serverId}/voice-states/${userId}`)],
    ['they are kicked', (userId: string) => g.call(owner, 'DELETE', `/v1/servers/${serverId}/members/${userId}`)],
    ['they are banned', (userId: string) => g.call(owner, 'PUT', `/v1/servers/${serverId}/bans/${userId}`, {})],
    ['they leave voice', (userId: string) => g.call(userId, 'POST', '/v1/voice/leave')],
  ])('a member is taken out of the room when %s', async (_, change) => {
    const channelId = await voiceChannel();
    const { userId, participant } = await connectedMember(channelId);
    expect((await change(userId)).status).toBeLessThan(300);
    expect(await participant.disconnected()).toBe(true);
    expect(await stillIn(channelId, userId)).toBe(false);
  });

  it('a member moved to another channel, or who joins another, leaves the first room (and keeps the room they are in)', async () => {
    const [first, second, third] = [await voiceChannel('first'), await voiceChannel('second'), await voiceChannel('third')];
    const moved = await connectedMember(first);
    expect((await g.call(owner, 'POST', '/v1/voice/move', { userId: moved.userId, channelId: second })).status).toBe(200);
    expect(await moved.participant.disconnected()).toBe(true);
    expect(await stillIn(first, moved.userId)).toBe(false);

    const switching = await connectedMember(first);
    const there = await connectedMember(third, switching.userId);
    expect(await switching.participant.disconnected()).toBe(true);
    expect(await stillIn(first, switching.userId)).toBe(false);
    expect(await participantIn(rooms, third, switching.userId)).toBeDefined();
    there.participant.leave();
  });

  it('deleting a voice channel disconnects everyone in its room, and again whoever comes back with a kept grant', async () => {
    const channelId = await voiceChannel();
    const members = [await connectedMember(channelId), await connectedMember(channelId)];
    expect((await g.call(owner, 'DELETE', `/v1/channels/${channelId}`)).status).toBe(204);
    expect(await Promise.all(members.map((m) => m.participant.disconnected()))).toEqual([true, true]);
    for (const { userId } of members) await untilGone(rooms, channelId, userId);

    // Both leave events applied (the second closes the room again), then LiveKit opens the room again
    // for a kept grant: no channel, no state, yet the room is this replica's.
    const applied = async () =>
      (
        await g.db.query(
          `SELECT 1 FROM processed_events p JOIN outbox o ON o.id = p.event_id
            WHERE p.consumer = 'guilds-voice-media' AND o.subject = 'guilds.voice.left' AND o.payload->'data'->>'channelId' = $1`,
          [channelId],
        )
      ).rowCount === 2;
    await until(applied, { what: 'both leave events are applied' });
    const back = await joinRoom(members[0]!.grant);
    await until(() => participantIn(rooms, channelId, members[0]!.userId), { what: 'the member is back in the room' });
    expect(await checkVoiceRooms(g.rooms, g.db, { recentChanges: true })).toBeGreaterThanOrEqual(1);
    expect(await back.disconnected()).toBe(true);
  });

  it('deleting the server disconnects everyone in its voice rooms, and tells its members they left', async () => {
    const doomed = (await g.call(owner, 'POST', '/v1/servers', { name: 'Doomed', isPublic: true })).body.id as string;
    const channelId = (await g.newChannel(owner, doomed, 'room', 'voice')).id;
    const member = await g.knownUser('member');
    expect((await g.call(member, 'POST', `/v1/servers/${doomed}/join`)).status).toBe(200);
    const { participant } = await connectedMember(channelId, member);
    const ownerIn = await connectedMember(channelId, owner);

    expect((await g.call(owner, 'DELETE', `/v1/servers/${doomed}`)).status).toBe(204);
    expect(await Promise.all([participant.disconnected(), ownerIn.participant.disconnected()])).toEqual([true, true]);
    const { rows } = await g.db.query(
      "SELECT payload->'data'->>'userId' AS user_id, payload->'data'->'viewerIds' AS viewers FROM outbox WHERE subject = 'guilds.voice.left' AND payload->'data'->>'channelId' = $1",
      [channelId],
    );
    expect(rows.map((r) => r.user_id).sort()).toEqual([member, owner].sort());
    expect(rows[0].viewers.sort()).toEqual([member, owner].sort());
  });

  it('a member who connects again with the grant from before a server mute is muted again by the room check', async () => {
    const channelId = await voiceChannel();
    const { userId, participant, grant } = await connectedMember(channelId);
    const permission = async () => (await participantIn(rooms, channelId, userId))?.permission;
    expect((await g.call(owner, 'PATCH', `/v1/servers/${serverId}/voice-states/${userId}`, { mute: true })).status).toBe(200);
    expect(await lastAttempt(permission, (p) => p?.canPublish === false)).toMatchObject({ canPublish: false });
    participant.leave();
    await untilGone(rooms, channelId, userId);
    // The join's grant still lets them publish.
    const back = await joinRoom(grant);
    expect(await lastAttempt(permission, (p) => p !== undefined)).toMatchObject({ canPublish: true });

    expect(await checkVoiceRooms(g.rooms, g.db, { recentChanges: true })).toBe(1);
    expect(await permission()).toMatchObject({ canPublish: false, canSubscribe: true });
    // In line now: the next check changes nothing.
    expect(await checkVoiceRooms(g.rooms, g.db, { recentChanges: true })).toBe(0);
    back.leave();
  });

  it('a server mute or deafen reaches the connected participant at once, and so does lifting it', async () => {
    const channelId = await voiceChannel();
    const { userId, participant } = await connectedMember(channelId);
    const permission = async () => (await participantIn(rooms, channelId, userId))?.permission;
    expect(await permission()).toMatchObject({ canPublish: true, canSubscribe: true });
    const moderate = (body: object) => g.call(owner, 'PATCH', `/v1/servers/${serverId}/voice-states/${userId}`, body);

    expect((await moderate({ mute: true })).status).toBe(200);
    expect(await lastAttempt(permission, (p) => p?.canPublish === false)).toMatchObject({ canPublish: false, canSubscribe: true });
    expect((await moderate({ deaf: true })).status).toBe(200);
    expect(await lastAttempt(permission, (p) => p?.canSubscribe === false)).toMatchObject({ canPublish: false, canSubscribe: false });
    expect((await moderate({ mute: false, deaf: false })).status).toBe(200);
    expect(await lastAttempt(permission, (p) => p?.canPublish === true && p.canSubscribe)).toMatchObject({
      canPublish: true,
      canPublishData: true,
      canSubscribe: true,
    });
    // Still connected: a mute changes what they may do, not where they are.
    expect(await participantIn(rooms, channelId, userId)).toBeDefined();
    participant.leave();
  });

  it('the late event of an earlier leave does not take out a member who joined the room again', async () => {
    const channelId = await voiceChannel();
    const first = await connectedMember(channelId);
    await g.pauseConsumers();
    expect((await g.call(first.userId, 'POST', '/v1/voice/leave')).status).toBe(204);
    first.participant.leave();
    await untilGone(rooms, channelId, first.userId);
    const again = await connectedMember(channelId, first.userId);
    // The leave's event is applied only now, after the member is back in the room.
    const consumer = await consumeVoiceMedia({ ...g.runtime, rooms: g.rooms });
    try {
      const { rows } = await g.db.query("SELECT id FROM outbox WHERE subject = 'guilds.voice.left' ORDER BY seq DESC LIMIT 1");
      const applied = async () =>
        (await g.db.query("SELECT 1 FROM processed_events WHERE consumer = 'guilds-voice-media' AND event_id = $1", [rows[0].id]))
          .rowCount === 1;
      await until(applied, { what: 'the leave event is applied' });
      expect(await participantIn(rooms, channelId, first.userId)).toBeDefined();
    } finally {
      await consumer.stop();
      again.participant.leave();
      await g.resumeConsumers();
    }
  });
});

describe('what a connected member may publish follows their permissions', () => {
  const [SPEAK, STREAM] = [toMask(Permission.SPEAK), toMask(Permission.STREAM)];
  const permission = async (room: string, userId: string) => (await participantIn(rooms, room, userId))?.permission;
  const publishes = (room: string, userId: string, may: boolean) =>
    lastAttempt(
      () => permission(room, userId),
      (p) => p?.canPublish === may,
    );
  const setEveryone = (permissions: number) => g.call(owner, 'PATCH', `/v1/servers/${serverId}/roles/${serverId}`, { permissions });

  it("a change of @everyone's SPEAK reaches a member already connected, both ways", async () => {
    const channelId = await voiceChannel();
    const { userId, participant } = await connectedMember(channelId);
    expect(await permission(channelId, userId)).toMatchObject({ canPublish: true });
    try {
      expect((await setEveryone(toMask(DEFAULT_EVERYONE_PERMISSIONS & ~Permission.SPEAK))).status).toBe(200);
      expect(await publishes(channelId, userId, false)).toMatchObject({ canPublish: false, canSubscribe: true });
    } finally {
      expect((await setEveryone(toMask(DEFAULT_EVERYONE_PERMISSIONS))).status).toBe(200);
    }
    expect(await publishes(channelId, userId, true)).toMatchObject({ canPublish: true, canSubscribe: true });
    participant.leave();
  });

  it('role overrides, and taking the role that gave SPEAK from a member, giving it back and deleting the role, each reach the connection', async () => {
    const channelId = await voiceChannel();
    const speakers = await g.call(owner, 'POST', `/v1/servers/${serverId}/roles`, { name: 'speakers' });
    expect(speakers.status).toBe(201);
    const { userId, participant } = await connectedMember(channelId);
    const memberRole = `/v1/servers/${serverId}/members/${userId}/roles/${speakers.body.id}`;
    expect((await g.call(owner, 'PUT', memberRole)).status).toBe(204);
    // In this channel only the role's override lets anyone speak.
    const overrides = `/v1/channels/${channelId}/permissions`;
    expect((await g.call(owner, 'PUT', overrides, { roleId: serverId, allowBits: 0, denyBits: SPEAK })).status).toBe(200);
    expect(await publishes(channelId, userId, false)).toMatchObject({ canPublish: false });
    expect((await g.call(owner, 'PUT', overrides, { roleId: speakers.body.id, allowBits: SPEAK, denyBits: 0 })).status).toBe(200);
    expect(await publishes(channelId, userId, true)).toMatchObject({ canPublish: true });

    expect((await g.call(owner, 'DELETE', memberRole)).status).toBe(204);
    expect(await publishes(channelId, userId, false)).toMatchObject({ canPublish: false });
    expect((await g.call(owner, 'PUT', memberRole)).status).toBe(204);
    expect(await publishes(channelId, userId, true)).toMatchObject({ canPublish: true });
    expect((await g.call(owner, 'DELETE', `/v1/servers/${serverId}/roles/${speakers.body.id}`)).status).toBe(204);
    expect(await publishes(channelId, userId, false)).toMatchObject({ canPublish: false });
    participant.leave();
  });

  it("a member's override in the channel taking SPEAK, then STREAM, and its removal reach the connection; members elsewhere keep theirs", async () => {
    const [channelId, elsewhere] = [await voiceChannel(), await voiceChannel('elsewhere')];
    const { userId, participant } = await connectedMember(channelId);
    const other = await connectedMember(elsewhere);
    const override = (denyBits: number) =>
      g.call(owner, 'PUT', `/v1/channels/${channelId}/permissions`, { userId, allowBits: 0, denyBits });

    expect((await override(SPEAK)).status).toBe(200);
    expect(await publishes(channelId, userId, false)).toMatchObject({ canPublish: false });
    const streaming = await override(STREAM);
    expect(streaming.status).toBe(200);
    // Speaking again, but the microphone only.
    const microphoneOnly = await lastAttempt(
      () => permission(channelId, userId),
      (p) => p?.canPublish === true && p.canPublishSources.length === 1,
    );
    expect(microphoneOnly).toMatchObject({ canPublish: true, canPublishSources: [TrackSource.MICROPHONE] });
    expect((await g.call(owner, 'DELETE', `/v1/channels/${channelId}/permissions/${streaming.body.id}`)).status).toBe(204);
    expect(
      await lastAttempt(
        () => permission(channelId, userId),
        (p) => p?.canPublishSources.length === 0,
      ),
    ).toMatchObject({ canPublish: true, canPublishSources: [] });
    expect(await permission(elsewhere, other.userId)).toMatchObject({ canPublish: true, canPublishSources: [] });
    participant.leave();
    other.participant.leave();
  });
});

describe('a change of access that changes nobody', () => {
  it("tells the media server nothing when nobody's rights change (as when a role is renamed)", async () => {
    const channelId = await voiceChannel();
    const { userId, participant } = await connectedMember(channelId);
    // Not streaming here: a restriction, which a blind update would put to the media server again.
    const overrides = `/v1/channels/${channelId}/permissions`;
    expect((await g.call(owner, 'PUT', overrides, { userId, allowBits: 0, denyBits: toMask(Permission.STREAM) })).status).toBe(200);
    const microphoneOnly = (p: { canPublishSources: unknown[] } | undefined) => p?.canPublishSources.length === 1;
    expect(await lastAttempt(async () => (await participantIn(rooms, channelId, userId))?.permission, microphoneOnly)).toBeDefined();

    const replica = mediaRooms(g.config);
    await syncVoiceAccess(replica, g.db, { channelIds: [channelId] });
    await syncVoiceAccess(replica, g.db, { serverId });
    expect(await replica.occupied({ recentChanges: true })).toEqual([]);
    participant.leave();
  });
});

describe('the voice room check', () => {
  it('takes out whoever connected again with a grant from before they were taken out, and leaves members in their rooms and rooms that are no voice channel alone', async () => {
    const channelId = await voiceChannel();
    const [kicked, staying] = [await connectedMember(channelId), await connectedMember(channelId)];
    expect((await g.call(owner, 'DELETE', `/v1/servers/${serverId}/members/${kicked.userId}`)).status).toBe(204);
    expect(await kicked.participant.disconnected()).toBe(true);
    await untilGone(rooms, channelId, kicked.userId);
    // The kicked client kept its grant (or a token LiveKit refreshed for it), and connects again.
    const back = await joinRoom(kicked.grant);
    await until(() => participantIn(rooms, channelId, kicked.userId), { what: 'the kicked member is back in the room' });
    // A room named by an id that is no channel here (a call's, social's), with someone in it.
    const [callRoom, caller] = [randomUUID(), randomUUID()];
    const inCall = await joinRoom(await mediaGrantIssuer(g.config)({ room: callRoom, identity: caller, canPublish: true }));
    await until(() => participantIn(rooms, callRoom, caller), { what: 'the caller is in the call room' });

    expect(await checkVoiceRooms(g.rooms, g.db)).toBeGreaterThanOrEqual(1);
    expect(await back.disconnected()).toBe(true);
    expect(await stillIn(channelId, kicked.userId)).toBe(false);
    expect(await participantIn(rooms, channelId, staying.userId)).toBeDefined();
    expect(await participantIn(rooms, callRoom, caller)).toBeDefined();
    staying.participant.leave();
    inCall.leave();
  });

  it('of recent changes looks only at the rooms this replica took someone out of', async () => {
    const [emptied, untouched] = [await voiceChannel('emptied'), await voiceChannel('untouched')];
    const kicked = await connectedMember(emptied);
    expect((await g.call(owner, 'DELETE', `/v1/servers/${serverId}/members/${kicked.userId}`)).status).toBe(204);
    expect(await kicked.participant.disconnected()).toBe(true);
    await untilGone(rooms, emptied, kicked.userId);
    const back = await joinRoom(kicked.grant);
    // Someone in the other room without a voice state, whom no removal of this replica concerns.
    const stray = await newMember();
    const strayIn = await joinRoom(await mediaGrantIssuer(g.config)({ room: untouched, identity: stray, canPublish: true }));
    await until(
      async () => Boolean((await participantIn(rooms, emptied, kicked.userId)) && (await participantIn(rooms, untouched, stray))),
      {
        what: 'both are in the rooms',
      },
    );

    expect(await checkVoiceRooms(g.rooms, g.db, { recentChanges: true })).toBeGreaterThanOrEqual(1);
    expect(await back.disconnected()).toBe(true);
    expect(await participantIn(rooms, untouched, stray)).toBeDefined();
    // The check of every room finds the stray.
    expect(await checkVoiceRooms(g.rooms, g.db)).toBeGreaterThanOrEqual(1);
    expect(await strayIn.disconnected()).toBe(true);
  });
});
