import {
  MENTION_BATCH_SIZE,
  type MentionVia,
  type MessageEventData,
  type MessageMentionedEvent,
  READ_STATE_SUBJECTS,
} from '@chat/contracts';
import { type Bus, enqueueEvent, type Queryable, seenStatuses } from '@chat/kit';
import { excerptOf, isWritten } from '@chat/messaging';
import type { z } from 'zod';
import { lockMentionSource, mentionNames } from '../db/messages.ts';
import { viewersAmong } from './audience.ts';
import { mentionsHereOnly } from './mentions.ts';

/**
 * The mentions of a posted channel message, resolved after its commit (a consumer of guilds'
 * own `guilds.message.created`, never on the request path): who is named, reached through a role,
 * @everyone/@here (already allowed or not when posting), or replied to, and may view the channel
 * now by the permission function of REST; through an @here only those of them online as others
 * see them (asked of the gateway before the transaction: onlineForHere). Published as
 * `guilds.message.mentioned` events of at most MENTION_BATCH_SIZE users each, through the outbox
 * of the consumer's transaction: an @everyone in a server of 10,000 members is one members query
 * and 20 outbox rows.
 */

type PostedMessage = z.output<typeof MessageEventData>;

/** Direct mentions outrank replies, replies roles, roles @everyone: each user is told once, by the strongest. */
const VIA_ORDER: MentionVia[] = ['user', 'reply', 'role', 'everyone'];

/**
 * Whether the message can reach anyone beyond its channel's readers: a mention or a reply, of what
 * a person wrote. A system message never notifies, though a `pinned` one points at the pinned
 * message with `replyToId` (Discord tells nobody of a pin).
 */
export function mayMention(message: Pick<PostedMessage, 'mentions' | 'replyToId' | 'type'>): boolean {
  const { mentions } = message;
  if (!isWritten(message.type)) return false;
  return mentions.everyone || mentions.users.length > 0 || mentions.roles.length > 0 || Boolean(message.replyToId);
}

/** An @everyone/@here that is an @here alone reaches only the members online (Discord's @here). */
export function reachesOnlineOnly(message: Pick<PostedMessage, 'mentions' | 'content'>): boolean {
  return message.mentions.everyone && mentionsHereOnly(message.content);
}

/**
 * Who an @here can reach: the channel's viewers online as others see them (rpc.gateway.presence.seen;
 * invisible is offline, and so is everyone when the gateway does not answer). Asked before the
 * consumer's transaction opens, so that no transaction waits on the gateway. Undefined when the
 * message has no @here alone.
 */
export async function onlineForHere(deps: { bus: Bus; pool: Queryable }, message: PostedMessage): Promise<ReadonlySet<string> | undefined> {
  if (!mayMention(message) || !reachesOnlineOnly(message)) return undefined;
  const viewers = await viewersAmong(deps.pool, message.channelId);
  const userIds = (viewers?.members ?? []).map((m) => m.userId).filter((id) => id !== message.authorId);
  const statusOf = await seenStatuses(deps.bus, userIds);
  return new Set(userIds.filter((id) => statusOf(id) !== 'offline'));
}

/**
 * `online`: what onlineForHere answered before the transaction. A viewer it does not hold (one
 * who joined since) is not reached by the @here.
 */
export async function publishMentions(tx: Queryable, message: PostedMessage, online?: ReadonlySet<string>): Promise<number> {
  const { mentions } = message;
  if (!mayMention(message)) return 0;
  const source = await lockMentionSource(tx, message.id);
  if (!source) return 0;
  const replyAuthorId = source.replyAuthorId;
  const named = replyAuthorId ? [...mentions.users, replyAuthorId] : mentions.users;
  const only = mentions.everyone ? undefined : { userIds: named, roleIds: mentions.roles };
  const viewers = await viewersAmong(tx, message.channelId, only);
  if (!viewers) return 0;
  const groups = new Map<MentionVia, string[]>();
  for (const member of viewers.members) {
    if (member.userId === message.authorId) continue;
    const via = viaOf(member, message, replyAuthorId);
    if (!via) continue;
    const group = groups.get(via);
    if (group) group.push(member.userId);
    else groups.set(via, [member.userId]);
  }
  if (reachesOnlineOnly(message))
    groups.set(
      'everyone',
      (groups.get('everyone') ?? []).filter((id) => online?.has(id)),
    );
  const excerpt = excerptOf(message.content, await mentionNames(tx, mentions.users, mentions.roles));
  let published = 0;
  for (const via of VIA_ORDER) {
    const userIds = groups.get(via) ?? [];
    for (let i = 0; i < userIds.length; i += MENTION_BATCH_SIZE) {
      const batch: MessageMentionedEvent = {
        messageId: message.id,
        channelId: message.channelId,
        serverId: message.serverId,
        authorId: message.authorId,
        via,
        excerpt,
        createdAt: message.createdAt,
        userIds: userIds.slice(i, i + MENTION_BATCH_SIZE),
      };
      await enqueueEvent(tx, READ_STATE_SUBJECTS.messageMentioned, batch);
      published++;
    }
  }
  return published;
}

function viaOf(
  member: { userId: string; roleIds: string[] },
  message: PostedMessage,
  replyAuthorId: string | null,
): MentionVia | undefined {
  const { mentions } = message;
  if (mentions.users.includes(member.userId)) return 'user';
  if (member.userId === replyAuthorId) return 'reply';
  if (member.roleIds.some((r) => mentions.roles.includes(r))) return 'role';
  return mentions.everyone ? 'everyone' : undefined;
}
