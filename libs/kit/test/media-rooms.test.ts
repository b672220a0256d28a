import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { joinRoom, liveKitRooms, participantIn, until } from '@chat/testkit';
import { afterAll, describe, expect, inject, it, vi } from 'vitest';
import { mediaGrantConfig, mediaGrantIssuer, mediaRooms, rejoinWindowMs, samePermissions } from '../src/media-grants.ts';

/** The room API against the LiveKit scripts/backing.sh starts, and against servers that fail. */

const livekit = inject('backing').livekit;
const config = mediaGrantConfig.parse({ LIVEKIT_URL: livekit.url, LIVEKIT_API_KEY: livekit.apiKey, LIVEKIT_API_SECRET: livekit.apiSecret });
const rooms = mediaRooms(config);
const observed = liveKitRooms(livekit);
const servers: Server[] = [];
afterAll(() => Promise.all(servers.map((s) => new Promise((resolve) => s.close(resolve)))));

/** An HTTP server on this machine that answers every request with this status. */
async function answering(status: number): Promise<string> {
  const server = createServer((_req, res) =>
    res.writeHead(status, { 'content-type': 'application/json' }).end('{"code":"internal","msg":"down"}'),
  );
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/**
 * A stand-in for LiveKit's room API (Twirp's JSON over HTTP) with `count` rooms of one participant
 * each, that counts the most participant listings it had in flight at once: the real server cannot
 * say how many requests it was sent together.
 */
async function roomApiOf(count: number): Promise<{ url: string; mostAtOnce: () => number }> {
  let inFlight = 0;
  let most = 0;
  const server = createServer((req, res) => {
    const answer = (body: object) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    if (req.url?.endsWith('/ListRooms')) return answer({ rooms: Array.from({ length: count }, (_, i) => ({ name: `room-${i}` })) });
    most = Math.max(most, ++inFlight);
    setTimeout(() => {
      inFlight--;
      answer({ participants: [{ identity: 'frank' }] });
    }, 20);
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, mostAtOnce: () => most };
}

describe('media rooms', () => {
  it('disconnects a connected participant, and is done when they or their room are not there', async () => {
    const room = `room-${crypto.randomUUID()}`;
    const participant = await joinRoom(await mediaGrantIssuer(config)({ room, identity: 'alice', canPublish: true }));
    await until(() => participantIn(observed, room, 'alice'));
    expect((await rooms.occupied()).find((o) => o.room === room)).toEqual({
      room,
      occupants: [{ identity: 'alice', permissions: { canPublish: true, canSubscribe: true } }],
    });
    await rooms.remove(room, 'alice');
    expect(await participant.disconnected()).toBe(true);
    await expect(rooms.remove(room, 'alice')).resolves.toBeUndefined();
    await expect(rooms.allow(`room-${crypto.randomUUID()}`, 'bob', { canPublish: false })).resolves.toBeUndefined();
    await expect(rooms.close(`room-${crypto.randomUUID()}`)).resolves.toBeUndefined();
  });

  it('gives a connected participant the permissions a grant would carry', async () => {
    const room = `room-${crypto.randomUUID()}`;
    const participant = await joinRoom(await mediaGrantIssuer(config)({ room, identity: 'carol', canPublish: true }));
    await until(() => participantIn(observed, room, 'carol'));
    await rooms.allow(room, 'carol', { canPublish: true, canPublishSources: ['microphone'], canSubscribe: false });
    expect((await participantIn(observed, room, 'carol'))?.permission).toMatchObject({
      canPublish: true,
      canPublishData: true,
      canSubscribe: false,
      canPublishSources: [2], // TrackSource.MICROPHONE
    });
    await rooms.close(room);
    expect(await participant.disconnected()).toBe(true);
  });

  it('lists, for the recent changes, only the rooms where it took someone out, gave someone less than everything or closed the room, for as long as a kept token may bring them back', async () => {
    const [emptied, muted, untouched, closed] = ['emptied', 'muted', 'untouched', 'closed'].map(
      (name) => `${name}-${crypto.randomUUID()}`,
    ) as [string, string, string, string];
    const issue = mediaGrantIssuer(config);
    const grants = {
      alice: await issue({ room: emptied, identity: 'alice', canPublish: true }),
      dave: await issue({ room: muted, identity: 'dave', canPublish: true }),
      bob: await issue({ room: untouched, identity: 'bob', canPublish: true }),
      carol: await issue({ room: closed, identity: 'carol', canPublish: true }),
    };
    const connected = await Promise.all(Object.values(grants).map((grant) => joinRoom(grant)));
    const allIn = async () =>
      Boolean((await participantIn(observed, emptied, 'alice')) && (await participantIn(observed, closed, 'carol')));
    await until(async () => (await allIn()) && Boolean(await participantIn(observed, muted, 'dave')));
    const replica = mediaRooms(config);
    await replica.remove(emptied, 'alice');
    await replica.allow(muted, 'dave', { canPublish: false });
    await replica.close(closed);
    // Taking out, or muting, someone who is not there changes nothing to watch; nor does giving
    // someone everything (a kept token allows no more).
    await replica.remove(untouched, 'nobody');
    await replica.allow(untouched, 'nobody', { canPublish: false });
    await replica.allow(untouched, 'bob', { canPublish: true });
    // Both taken out come back with the grant they kept.
    const back = [await joinRoom(grants.alice), await joinRoom(grants.carol)];
    await until(allIn);

    const recent = await replica.occupied({ recentChanges: true });
    const byRoom = (a: { room: string }, b: { room: string }) => a.room.localeCompare(b.room);
    expect(recent.map((r) => ({ room: r.room, identities: r.occupants.map((o) => o.identity) })).sort(byRoom)).toEqual(
      [
        { room: emptied, identities: ['alice'] },
        { room: muted, identities: ['dave'] },
        { room: closed, identities: ['carol'] },
      ].sort(byRoom),
    );
    expect(recent.find((r) => r.room === muted)?.occupants[0]?.permissions).toEqual({ canPublish: false, canSubscribe: true });
    // Another replica took nobody out.
    expect(await mediaRooms(config).occupied({ recentChanges: true })).toEqual([]);
    // Once a kept token can no longer let anyone in, the rooms are no longer watched.
    const now = Date.now();
    vi.spyOn(Date, 'now').mockReturnValue(now + rejoinWindowMs(config) + 1);
    try {
      expect(await replica.occupied({ recentChanges: true })).toEqual([]);
    } finally {
      vi.restoreAllMocks();
    }
    for (const participant of [...connected, ...back]) participant.leave();
  });

  it('lists every occupied room however many there are, asking the media server about 16 at a time', async () => {
    const names = Array.from({ length: 40 }, (_, i) => `many-${i}-${crypto.randomUUID()}`);
    const issue = mediaGrantIssuer(config);
    const connected = await Promise.all(names.map(async (room) => joinRoom(await issue({ room, identity: 'erin', canPublish: false }))));
    await until(async () => (await Promise.all(names.map((room) => participantIn(observed, room, 'erin')))).every(Boolean), {
      what: 'all 40 rooms are occupied',
    });
    const listed = (await rooms.occupied()).filter((o) => names.includes(o.room));
    expect(listed.map((o) => o.room).sort()).toEqual([...names].sort());
    expect(listed.every((o) => o.occupants.length === 1 && o.occupants[0]?.identity === 'erin')).toBe(true);
    for (const participant of connected) participant.leave();

    const api = await roomApiOf(100);
    const crowded = await mediaRooms({ ...config, LIVEKIT_API_URL: api.url }).occupied();
    expect(crowded.map((o) => o.room)).toEqual(Array.from({ length: 100 }, (_, i) => `room-${i}`));
    expect(api.mostAtOnce()).toBeGreaterThan(1);
    expect(api.mostAtOnce()).toBeLessThanOrEqual(16);
  });

  it('tells permissions that allow the same from those that do not', () => {
    expect(samePermissions({ canPublish: true }, { canPublish: true, canSubscribe: true })).toBe(true);
    expect(
      samePermissions(
        { canPublish: true, canPublishSources: ['microphone', 'camera'] },
        { canPublish: true, canPublishSources: ['camera', 'microphone'] },
      ),
    ).toBe(true);
    // Sources mean nothing for one who may not publish.
    expect(samePermissions({ canPublish: false, canPublishSources: ['microphone'] }, { canPublish: false })).toBe(true);
    expect(samePermissions({ canPublish: true }, { canPublish: false })).toBe(false);
    expect(samePermissions({ canPublish: true }, { canPublish: true, canPublishSources: ['microphone'] })).toBe(false);
    expect(samePermissions({ canPublish: false }, { canPublish: false, canSubscribe: false })).toBe(false);
    // A grant lasts MEDIA_GRANT_TTL_SECONDS; LiveKit's refreshed tokens 10 minutes.
    expect(rejoinWindowMs({ MEDIA_GRANT_TTL_SECONDS: 300 })).toBe(11 * 60_000);
    expect(rejoinWindowMs({ MEDIA_GRANT_TTL_SECONDS: 3600 })).toBe(61 * 60_000);
  });

  it('counts a media server that refuses the connection as one with nobody connected, and throws on its failures', async () => {
    const closedPort = await answering(200).then(async (url) => {
      await new Promise((resolve) => servers.pop()?.close(resolve));
      return url;
    });
    const stopped = mediaRooms({ ...config, LIVEKIT_API_URL: closedPort });
    await expect(stopped.remove('room', 'alice')).resolves.toBeUndefined();
    await expect(stopped.occupied()).resolves.toEqual([]);
    const failing = mediaRooms({ ...config, LIVEKIT_API_URL: await answering(500) });
    await expect(failing.remove('room', 'alice')).rejects.toThrow();
    await expect(failing.allow('room', 'alice', { canPublish: true })).rejects.toThrow();
    await expect(failing.occupied()).rejects.toThrow();
  });
});
