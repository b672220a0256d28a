import { notFound, type Queryable } from '@chat/kit';
import type { Logger } from 'pino';
import * as deletions from '../db/deletions.ts';

/**
 * How long a deletion is remembered after it was applied: longer than any control can be in flight
 * between guilds' answer and its commit (seconds; its RPC times out well before).
 */
const REMEMBER_DELETIONS_SECONDS = 60 * 60;

/**
 * Refuses a control of a channel that guilds deleted (or whose server it deleted) once that
 * deletion was applied here, though guilds let the control through a moment before: as guilds
 * answers for a deleted channel, 404. Runs in the control's transaction before the player is
 * created or locked; the server's shared lock makes a deletion being applied finish first.
 */
export async function assertChannelNotDeleted(tx: Queryable, channelId: string, serverId: string): Promise<void> {
  await deletions.shareServerLock(tx, serverId);
  if (await deletions.isDeleted(tx, channelId, serverId)) throw notFound('Channel');
}

/**
 * A deleted voice channel's player goes, with its queue, so that the clock stops advancing it. No
 * music.player.updated is published: the gateway sends a channel's player only to those who may
 * view the channel, and a deleted channel has no viewers; clients learn it is gone from
 * CHANNEL_DELETE. The event names any channel (guilds does not say its type): a text channel has no
 * player, and costs a remembered id.
 */
export async function removeChannelPlayer(tx: Queryable, channel: { id: string; serverId: string }, log?: Logger): Promise<void> {
  await deletions.holdServerLock(tx, channel.serverId);
  await deletions.recordChannelDeleted(tx, channel.id);
  const removed = await deletions.deleteChannelPlayer(tx, channel.id);
  await deletions.forgetDeletionsOlderThan(tx, REMEMBER_DELETIONS_SECONDS);
  if (removed > 0) log?.info({ channelId: channel.id }, 'removed the player of a deleted channel');
}

/** A deleted server's players go, each with its queue; no event, as for a deleted channel (SERVER_DELETE tells clients). */
export async function removeServerPlayers(tx: Queryable, serverId: string, log?: Logger): Promise<void> {
  await deletions.holdServerLock(tx, serverId);
  await deletions.recordServerDeleted(tx, serverId);
  const removed = await deletions.deleteServerPlayers(tx, serverId);
  await deletions.forgetDeletionsOlderThan(tx, REMEMBER_DELETIONS_SECONDS);
  if (removed > 0) log?.info({ serverId, players: removed }, 'removed the players of a deleted server');
}
