import { AckableRpc, MESSAGES_SUBJECTS, MemberCheckRpc, ServerChannelsAmongRpc, STREAMS, VisibleChannelsRpc } from '@chat/contracts';
import { type ConsumerHandle, ensureStream, notFound, serveRpc } from '@chat/kit';
import { v7 as uuidv7 } from 'uuid';
import { afterAll } from 'vitest';
import { type ApplyEvent, type ConsumerName, consumeForReadStates, READ_STATE_CONSUMERS } from '../src/bus/read-states.ts';
import { createHarness, type Harness } from './harness.ts';

type ChannelKind = 'text' | 'voice';

/** A social harness with the read-state fixtures, both closed after the file's tests. */
export async function readStatesHarness() {
  const h = await createHarness();
  const rs = await withReadStates(h);
  afterAll(async () => {
    await rs.close();
    await h.close();
  });
  return { h, rs };
}

/**
 * What the read-state and notification tests add to the social harness: social's consumers of
 * them, guilds as far as social sees it (events on the real GUILDS stream of the test's namespace,
 * an answer to rpc.guilds.channels.visible from a table of who may view what, one to
 * rpc.guilds.member.check from a table of each server's members: a server with none is unknown,
 * one to rpc.guilds.server.channels.among from a table of channels: any other id is a channel of a
 * server no test names, and one to rpc.guilds.channel.ackable from the messages published here:
 * a message is in the channel its guilds.message.created named, until its guilds.message.deleted).
 */
export async function withReadStates(h: Harness) {
  await ensureStream(h.runtime.bus, STREAMS.guilds);
  const consumers = new Map<ConsumerName, ConsumerHandle>();
  const start = async (name: ConsumerName, wrap?: (apply: ApplyEvent) => ApplyEvent) =>
    consumers.set(name, await consumeForReadStates(h.runtime, name, wrap));
  for (const name of Object.keys(READ_STATE_CONSUMERS) as ConsumerName[]) await start(name);

  /** `${userId}:${channelId}` pairs that guilds would answer as not viewable. */
  const hidden = new Set<string>();
  /** Channels deleted: guilds answers them as viewable to nobody. */
  const deletedChannels = new Set<string>();
  serveRpc(h.runtime.bus, h.runtime.log, VisibleChannelsRpc, async ({ userId, channelIds }) => ({
    channelIds: channelIds.filter((id) => !hidden.has(`${userId}:${id}`) && !deletedChannels.has(id)),
  }));
  /** Each server's member ids. */
  const members = new Map<string, Set<string>>();
  // Guilds' ids are uuid columns: an id in upper case names the same server.
  serveRpc(h.runtime.bus, h.runtime.log, MemberCheckRpc, async ({ serverId, userId }) => {
    const of = members.get(serverId.toLowerCase());
    if (!of) throw notFound('Server');
    return { isMember: of.has(userId.toLowerCase()), isOwner: false };
  });
  /** Each channel's server and type, as guilds would answer them. */
  const channels = new Map<string, { serverId: string; channelType: ChannelKind }>();
  serveRpc(h.runtime.bus, h.runtime.log, ServerChannelsAmongRpc, async ({ serverId, channelIds }) => ({
    channelIds: channelIds.filter((id) => channels.get(id)?.serverId === serverId),
  }));
  /** Each published channel message's channel, while it is not deleted. */
  const messageChannels = new Map<string, string>();
  serveRpc(h.runtime.bus, h.runtime.log, AckableRpc, async ({ userId, channelId, messageId }) => ({
    viewable: !hidden.has(`${userId}:${channelId}`) && !deletedChannels.has(channelId),
    holdsMessage: messageChannels.get(messageId) === channelId,
  }));
  const learnMessage = (subject: string, data: unknown) => {
    const message = data as { id: string; channelId: string };
    if (subject === MESSAGES_SUBJECTS.messageCreated) messageChannels.set(message.id, message.channelId);
    if (subject === MESSAGES_SUBJECTS.messageDeleted) messageChannels.delete(message.id);
  };
  const questions: string[][] = [];
  const sub = h.runtime.bus.nc.subscribe(h.runtime.bus.subject(VisibleChannelsRpc.subject), {
    callback: (_err, msg) => {
      questions.push(msg.json<{ channelIds: string[] }>().channelIds);
    },
  });
  await h.runtime.bus.nc.flush();

  return {
    hidden,
    deletedChannels,
    /** `user` joins the server (guilds answers them as a member); answers the user. */
    joined<U extends { id: string }>(user: U, serverId: string): U {
      members.set(serverId, (members.get(serverId) ?? new Set()).add(user.id));
      return user;
    },
    /** Guilds has this channel in this server (text unless said). */
    channel(channelId: string, serverId: string, channelType: ChannelKind = 'text'): string {
      channels.set(channelId, { serverId, channelType });
      return channelId;
    },
    /** `user` is no member (left, kicked); the server stays known. */
    left(user: { id: string }, serverId: string) {
      members.get(serverId)?.delete(user.id);
    },
    /** The server is gone: guilds answers it as unknown. */
    deleted(serverId: string) {
      members.delete(serverId);
    },
    /** The channel id lists social asked guilds about, oldest first. */
    questions,
    /** Publishes an event as its owner's relay would (GUILDS or SOCIAL stream by its subject). */
    async publish(subject: string, data: unknown, occurredAt = new Date().toISOString()) {
      learnMessage(subject, data);
      const envelope = { id: uuidv7(), subject, occurredAt, data };
      await h.runtime.bus.js.publish(h.runtime.bus.subject(subject), JSON.stringify(envelope), { msgID: envelope.id });
      return envelope;
    },
    start,
    async stop(name: ConsumerName) {
      await consumers.get(name)?.stop();
      consumers.delete(name);
    },
    async close() {
      sub.unsubscribe();
      await Promise.all([...consumers.values()].map((c) => c.stop()));
    },
  };
}
