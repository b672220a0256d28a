import type { MediaGrant } from '@chat/contracts';
import { type ParticipantInfo, RoomServiceClient } from 'livekit-server-sdk';
import WebSocket from 'ws';
import type { LiveKit } from './backing.ts';
import { until } from './poll.ts';

/**
 * A participant of a LiveKit room connected by its signalling socket alone, as a client's first
 * step: LiveKit lists it as joined, applies permissions to it and can disconnect it, which is all
 * the services manage. No media flows (that needs WebRTC, which the tests do not run).
 */
export interface RoomParticipant {
  /** Whether LiveKit closed the connection (after telling the participant to leave) within `timeoutMs`. */
  disconnected(timeoutMs?: number): Promise<boolean>;
  leave(): void;
}

/** Connects to the grant's room with its token; resolves once LiveKit accepted the connection. */
export async function joinRoom(grant: MediaGrant): Promise<RoomParticipant> {
  const socket = new WebSocket(`${grant.url}/rtc?access_token=${encodeURIComponent(grant.token)}&protocol=15&sdk=js&auto_subscribe=1`);
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  await new Promise<void>((resolve, reject) => {
    socket.once('open', () => resolve());
    socket.once('error', reject);
  });
  const disconnected = (timeoutMs = 10_000) =>
    Promise.race([closed.then(() => true), new Promise<boolean>((resolve) => setTimeout(() => resolve(false), timeoutMs).unref())]);
  return { disconnected, leave: () => socket.close() };
}

/** LiveKit's room API, to see what a test did to the rooms. */
export function liveKitRooms(livekit: LiveKit): RoomServiceClient {
  return new RoomServiceClient(livekit.url, livekit.apiKey, livekit.apiSecret, { failover: false });
}

/** The room's participant of that identity as LiveKit lists it, if connected (an unopened room has none). */
export async function participantIn(rooms: RoomServiceClient, room: string, identity: string): Promise<ParticipantInfo | undefined> {
  return (await rooms.listParticipants(room)).find((p) => p.identity === identity);
}

/**
 * Waits until LiveKit lists nobody of that identity in the room. A test connects the same identity
 * again only after this: LiveKit drops a closing participant from its lists by identity, late, and a
 * connection made before that can be dropped with it and never listed again.
 */
export async function untilGone(rooms: RoomServiceClient, room: string, identity: string): Promise<void> {
  await until(async () => !(await participantIn(rooms, room, identity)), { what: `${identity} is out of room ${room}` });
}
