import {
  ALL_PERMISSIONS,
  DISCORD_CHANNEL_TYPE,
  type ImportReportItem,
  MAX_SERVER_ROLES,
  MAX_TEMPLATE_OVERWRITES,
  type ParsedDiscordTemplate,
} from '@chat/contracts';
import { badRequest } from '@chat/kit';

/**
 * A Discord template turned into what this platform will create, before anything is written:
 * every rule of the mapping lives here, as a pure function, and the report says what became of
 * each source item. A template that cannot be imported as a whole is refused with a 400 naming
 * the field, so nothing is created.
 */

type Source = ParsedDiscordTemplate['serialized_source_guild'];
type SourceChannel = Source['channels'][number];

export interface PlannedRole {
  sourceId: string;
  name: string;
  color: number;
  hoist: boolean;
  mentionable: boolean;
  permissions: bigint;
}

export interface PlannedChannel {
  sourceId: string;
  name: string;
  channelType: 'text' | 'voice';
  /** The source id of its category, or null. */
  parent: string | null;
  /** Its index among the channels of its category (the uncategorised ones forming one group). */
  position: number;
  topic: string | null;
  isNsfw: boolean;
  slowmodeSeconds: number;
  userLimit: number;
}

export interface PlannedOverride {
  channel: string;
  /** The source id of the role (the @everyone role's source id for @everyone). */
  role: string;
  allow: bigint;
  deny: bigint;
}

export interface TemplatePlan {
  name: string;
  description: string | null;
  everyonePermissions: bigint;
  everyoneSourceId: string | null;
  /** Bottom to top, @everyone excluded. */
  roles: PlannedRole[];
  categories: { sourceId: string; name: string }[];
  /** Ordered within each parent. */
  channels: PlannedChannel[];
  overrides: PlannedOverride[];
  afkChannel: string | null;
  entranceChannel: string | null;
  afkTimeoutSeconds: number;
  /** What became of every source item; `id` is filled in when it is created. */
  report: ImportReportItem[];
}

/** The AFK timeouts a server may have (Discord's own choices). */
export const AFK_TIMEOUTS = [60, 300, 900, 1800, 3600] as const;

const TEXT_LIKE: Record<number, string | null> = {
  [DISCORD_CHANNEL_TYPE.text]: null,
  [DISCORD_CHANNEL_TYPE.announcement]: 'an announcement channel became a text channel',
  [DISCORD_CHANNEL_TYPE.forum]: 'a forum channel became a text channel',
  [DISCORD_CHANNEL_TYPE.media]: 'a media channel became a text channel',
};
const VOICE_LIKE: Record<number, string | null> = {
  [DISCORD_CHANNEL_TYPE.voice]: null,
  [DISCORD_CHANNEL_TYPE.stage]: 'a stage channel became a voice channel',
};

export function planTemplate(template: ParsedDiscordTemplate): TemplatePlan {
  const source = template.serialized_source_guild;
  const report: ImportReportItem[] = [];
  const item = (kind: ImportReportItem['kind'], sourceId: string, name: string, note: string | null, dropped = false) =>
    report.push({ kind, sourceId, name, outcome: dropped ? 'dropped' : note ? 'changed' : 'created', id: null, note });

  requireUnique(
    source.roles.map((r) => r.id),
    'roles',
  );
  requireUnique(
    source.channels.map((c) => c.id),
    'channels',
  );
  source.channels.forEach((c, i) => {
    requireUnique(
      c.permission_overwrites.map((o) => o.id),
      `channels.${i}.permission_overwrites`,
    );
  });
  checkParents(source.channels);
  checkOverwriteCount(source.channels);

  const everyone = source.roles.find((r) => r.id === '0') ?? null;
  let everyonePermissions = 0n;
  if (everyone) {
    const mapped = mapPermissions(everyone.permissions);
    everyonePermissions = mapped.bits;
    item('role', everyone.id, everyone.name, mapped.note);
  }
  const roles = source.roles
    .filter((r) => r !== everyone)
    .map((r) => {
      const mapped = mapPermissions(r.permissions);
      item('role', r.id, r.name, mapped.note);
      return { sourceId: r.id, name: r.name, color: r.color, hoist: r.hoist, mentionable: r.mentionable, permissions: mapped.bits };
    });
  // @everyone is made when the template has none, and counts towards the server's limit as it does when present.
  if (roles.length + 1 > MAX_SERVER_ROLES)
    throw badRequest(`template.serialized_source_guild.roles: at most ${MAX_SERVER_ROLES} roles, @everyone included`);

  const byPosition = (a: SourceChannel, b: SourceChannel) => a.position - b.position;
  const categories = source.channels.filter((c) => c.type === DISCORD_CHANNEL_TYPE.category).sort(byPosition);
  for (const c of categories) item('category', c.id, c.name, null);
  const categoryIds = new Set(categories.map((c) => c.id));

  const channels: PlannedChannel[] = [];
  const siblings = new Map<string | null, number>();
  for (const c of [...source.channels].sort(byPosition)) {
    if (c.type === DISCORD_CHANNEL_TYPE.category) continue;
    const channelType = c.type in TEXT_LIKE ? 'text' : c.type in VOICE_LIKE ? 'voice' : undefined;
    if (!channelType) {
      item('channel', c.id, c.name, `channel type ${c.type} has no counterpart here`, true);
      continue;
    }
    item('channel', c.id, c.name, (channelType === 'text' ? TEXT_LIKE[c.type] : VOICE_LIKE[c.type]) ?? null);
    const parent = c.parent_id && categoryIds.has(c.parent_id) ? c.parent_id : null;
    const position = siblings.get(parent) ?? 0;
    siblings.set(parent, position + 1);
    channels.push({
      sourceId: c.id,
      name: c.name,
      channelType,
      parent,
      position,
      topic: channelType === 'text' ? (c.topic ?? null) : null,
      isNsfw: c.nsfw,
      slowmodeSeconds: channelType === 'text' ? c.rate_limit_per_user : 0,
      userLimit: channelType === 'voice' ? c.user_limit : 0,
    });
  }

  const roleIds = new Set(source.roles.map((r) => r.id));
  const channelIds = new Set(channels.map((c) => c.sourceId));
  const overrides: PlannedOverride[] = [];
  for (const c of source.channels) {
    for (const o of c.permission_overwrites) {
      const name = `${c.name}: ${o.type === 1 || o.type === 'member' ? 'member' : 'role'} ${o.id}`;
      const sourceId = `${c.id}:${o.id}`;
      if (o.type === 1 || o.type === 'member') item('override', sourceId, name, 'member overrides name people of the source server', true);
      else if (categoryIds.has(c.id)) item('override', sourceId, name, 'categories hold no overrides here; set them on the channels', true);
      else if (!channelIds.has(c.id)) item('override', sourceId, name, 'its channel was dropped', true);
      else if (!roleIds.has(o.id)) item('override', sourceId, name, 'it names no role of the template', true);
      else {
        const allow = mapPermissions(o.allow);
        const deny = mapPermissions(o.deny);
        item('override', sourceId, name, allow.note ?? deny.note);
        overrides.push({ channel: c.id, role: o.id, allow: allow.bits, deny: deny.bits });
      }
    }
  }

  const planned = new Map(channels.map((c) => [c.sourceId, c]));
  const setting = (field: string, id: string | null | undefined, type: 'text' | 'voice', target: string): string | null => {
    if (!id) return null;
    const ok = planned.get(id)?.channelType === type;
    item('setting', field, field, ok ? `became ${target}` : `names no ${type} channel of the template`, !ok);
    return ok ? id : null;
  };
  const afkTimeoutSeconds = nearestAfkTimeout(source.afk_timeout);
  if (afkTimeoutSeconds !== source.afk_timeout)
    item('setting', 'afk_timeout', 'afk_timeout', `${source.afk_timeout} s became ${afkTimeoutSeconds} s`);

  return {
    name: source.name,
    description: source.description ?? template.description ?? null,
    everyonePermissions,
    everyoneSourceId: everyone?.id ?? null,
    roles,
    categories: categories.map((c) => ({ sourceId: c.id, name: c.name })),
    channels,
    overrides,
    afkChannel: setting('afk_channel_id', source.afk_channel_id, 'voice', 'afkChannelId'),
    entranceChannel: setting('system_channel_id', source.system_channel_id, 'text', 'entranceChannelId'),
    afkTimeoutSeconds,
    report,
  };
}

/** Discord's bits that this platform has too; the others are named in the report. */
export function mapPermissions(value: string): { bits: bigint; note: string | null } {
  const bits = BigInt(value);
  const lacking = bits & ~ALL_PERMISSIONS;
  if (lacking === 0n) return { bits, note: null };
  const positions = [...lacking.toString(2)].reverse().flatMap((b, i) => (b === '1' ? [i] : []));
  return { bits: bits & ALL_PERMISSIONS, note: `permission bits this platform lacks were dropped: ${positions.join(', ')}` };
}

function nearestAfkTimeout(seconds: number): number {
  return AFK_TIMEOUTS.reduce((best, t) => (Math.abs(t - seconds) < Math.abs(best - seconds) ? t : best));
}

function requireUnique(ids: string[], field: string): void {
  const seen = new Set<string>();
  for (const id of ids) {
    if (seen.has(id)) throw badRequest(`template.serialized_source_guild.${field}: id ${id} appears twice`);
    seen.add(id);
  }
}

/**
 * Each overwrite is a row and an event: bounded per import as roles and channels are (the contract
 * bounds them per channel), so one request cannot hold a connection for long.
 */
function checkOverwriteCount(channels: SourceChannel[]): void {
  const count = channels.reduce((n, c) => n + c.permission_overwrites.length, 0);
  if (count > MAX_TEMPLATE_OVERWRITES)
    throw badRequest(
      `template.serialized_source_guild.channels: at most ${MAX_TEMPLATE_OVERWRITES} permission overwrites in all (${count})`,
    );
}

/** Only categories may be parents, and a category has none (so there can be no cycle). */
function checkParents(channels: SourceChannel[]): void {
  const byId = new Map(channels.map((c) => [c.id, c]));
  channels.forEach((c, i) => {
    if (!c.parent_id) return;
    const field = `template.serialized_source_guild.channels.${i}.parent_id`;
    if (c.type === DISCORD_CHANNEL_TYPE.category) throw badRequest(`${field}: a category cannot have a parent`);
    if (byId.get(c.parent_id)?.type !== DISCORD_CHANNEL_TYPE.category) throw badRequest(`${field}: must name a category of the template`);
  });
}
