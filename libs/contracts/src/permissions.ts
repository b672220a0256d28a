/**
 * Permission bits at Discord's positions, so that imported Discord templates map one to one.
 * Every bit used stays below 2^53: masks travel as JSON numbers and are combined with the helpers
 * below (bigint inside, because JavaScript's bitwise operators truncate to 32 bits).
 */
export const Permission = {
  CREATE_INSTANT_INVITE: 1n << 0n,
  KICK_MEMBERS: 1n << 1n,
  BAN_MEMBERS: 1n << 2n,
  ADMINISTRATOR: 1n << 3n,
  MANAGE_CHANNELS: 1n << 4n,
  MANAGE_GUILD: 1n << 5n,
  ADD_REACTIONS: 1n << 6n,
  VIEW_AUDIT_LOG: 1n << 7n,
  PRIORITY_SPEAKER: 1n << 8n,
  STREAM: 1n << 9n,
  VIEW_CHANNEL: 1n << 10n,
  SEND_MESSAGES: 1n << 11n,
  SEND_TTS_MESSAGES: 1n << 12n,
  MANAGE_MESSAGES: 1n << 13n,
  EMBED_LINKS: 1n << 14n,
  ATTACH_FILES: 1n << 15n,
  READ_MESSAGE_HISTORY: 1n << 16n,
  MENTION_EVERYONE: 1n << 17n,
  USE_EXTERNAL_EMOJIS: 1n << 18n,
  VIEW_GUILD_INSIGHTS: 1n << 19n,
  CONNECT: 1n << 20n,
  SPEAK: 1n << 21n,
  MUTE_MEMBERS: 1n << 22n,
  DEAFEN_MEMBERS: 1n << 23n,
  MOVE_MEMBERS: 1n << 24n,
  USE_VAD: 1n << 25n,
  CHANGE_NICKNAME: 1n << 26n,
  MANAGE_NICKNAMES: 1n << 27n,
  MANAGE_ROLES: 1n << 28n,
  MANAGE_WEBHOOKS: 1n << 29n,
  MANAGE_GUILD_EXPRESSIONS: 1n << 30n,
  USE_APPLICATION_COMMANDS: 1n << 31n,
} as const;

export type PermissionName = keyof typeof Permission;

/** MANAGE_SERVER is the spec's name for Discord's MANAGE_GUILD. */
export const MANAGE_SERVER = Permission.MANAGE_GUILD;

export const ALL_PERMISSIONS = Object.values(Permission).reduce((a, b) => a | b, 0n);

/** What @everyone may do in a new server (Discord's defaults, minus moderation). */
export const DEFAULT_EVERYONE_PERMISSIONS =
  Permission.CREATE_INSTANT_INVITE |
  Permission.ADD_REACTIONS |
  Permission.STREAM |
  Permission.VIEW_CHANNEL |
  Permission.SEND_MESSAGES |
  Permission.EMBED_LINKS |
  Permission.ATTACH_FILES |
  Permission.READ_MESSAGE_HISTORY |
  Permission.MENTION_EVERYONE |
  Permission.USE_EXTERNAL_EMOJIS |
  Permission.CONNECT |
  Permission.SPEAK |
  Permission.USE_VAD |
  Permission.CHANGE_NICKNAME |
  Permission.USE_APPLICATION_COMMANDS;

export const toMask = (bits: bigint): number => Number(bits);
export const fromMask = (mask: number): bigint => BigInt(mask);
export const has = (mask: bigint, bit: bigint): boolean => (mask & bit) === bit;
