import type { MessageMentions } from '@chat/contracts';
import type { Queryable } from '@chat/kit';
import { withoutCode } from '@chat/messaging';
import { mentionTargets } from '../db/messages.ts';

/**
 * Mentions in Discord's markup: `<@userId>` (or `<@!userId>`), `<@&roleId>`, and `@everyone` /
 * `@here`. Parsing is pure; resolving keeps only what exists in the server and may notify.
 */

const UUID = '[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}';
const USER_MENTION = new RegExp(`<@!?(${UUID})>`, 'g');
const ROLE_MENTION = new RegExp(`<@&(${UUID})>`, 'g');
const EVERYONE_MENTION = /@(?:everyone|here)\b/;

export interface ParsedMentions {
  userIds: string[];
  roleIds: string[];
  everyone: boolean;
}

/** The mentions of a message; none in code (inline or a block), which shows them as written and notifies nobody, as on Discord. */
export function parseMentions(content: string): ParsedMentions {
  const text = withoutCode(content);
  const ids = (pattern: RegExp) => [...new Set([...text.matchAll(pattern)].map((m) => (m[1] as string).toLowerCase()))];
  return { userIds: ids(USER_MENTION), roleIds: ids(ROLE_MENTION), everyone: EVERYONE_MENTION.test(text) };
}

/**
 * Whether a message's @everyone/@here is an @here alone (code left out, as when parsing): Discord's
 * @here reaches only the members online. `mentions.everyone` stands for either.
 */
export function mentionsHereOnly(content: string): boolean {
  const text = withoutCode(content);
  return EVERYONE_MENTION.test(text) && !/@everyone\b/.test(text);
}

export const NO_MENTIONS: MessageMentions = { users: [], roles: [], everyone: false };

/**
 * What the message may notify: mentioned users who are members, and the server's roles that are
 * mentionable, or any role and @everyone for an author with MENTION_EVERYONE (Discord's rule).
 */
export async function resolveMentions(
  db: Queryable,
  serverId: string,
  parsed: ParsedMentions,
  mayMentionEveryone: boolean,
): Promise<MessageMentions> {
  const everyone = parsed.everyone && mayMentionEveryone;
  if (parsed.userIds.length === 0 && parsed.roleIds.length === 0) return { ...NO_MENTIONS, everyone };
  const targets = await mentionTargets(db, serverId, parsed.userIds, parsed.roleIds);
  return {
    users: targets.members,
    roles: targets.roles.filter((r) => r.mentionable || mayMentionEveryone).map((r) => r.id),
    everyone,
  };
}
