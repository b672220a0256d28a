import type { Category, Channel, PermissionOverride, Role, Server } from '@chat/contracts';
import {
  DISCORD_CHANNEL_TYPE,
  type ExportedTemplate,
  type ExportReportItem,
  type GUILDS_EVENTS,
  type ImportedServer,
  type ImportReportItem,
  MANAGE_SERVER,
  type ParsedDiscordTemplate,
  Permission,
} from '@chat/contracts';
import { enqueueEvents, type OutboxRow, outboxRow, type Queryable, withTx } from '@chat/kit';
import { v7 as uuidv7 } from 'uuid';
import type { z } from 'zod';
import { insertCategoriesInOrder, listCategories } from '../db/categories.ts';
import { insertPlacedChannels } from '../db/channels.ts';
import { insertRoleOverrides, overridesOfServer } from '../db/overrides.ts';
import { insertEveryoneRole, insertRolesAt, listRoles } from '../db/roles.ts';
import { insertServer, markFreshServer, toServer, updateServer } from '../db/servers.ts';
import { memberAccess, requirePermission, visibleChannels } from './access.ts';
import { type Ctx, type Domain, emit } from './context.ts';
import { addMember } from './membership.ts';
import { planTemplate, type TemplatePlan } from './template-plan.ts';

/**
 * Creates the server a Discord template describes, for the caller, in one transaction. Each kind
 * of row is one statement and so are its events (one per role, category, channel and override, as
 * when they are made one by one), so the cost grows with the template's size, not its square.
 */
export function importTemplate(d: Domain, ctx: Ctx, template: ParsedDiscordTemplate): Promise<ImportedServer> {
  const plan = planTemplate(template);
  return withTx(d.pool, async (tx) => {
    const serverId = uuidv7();
    await insertServer(tx, {
      id: serverId,
      name: plan.name,
      description: plan.description,
      iconUrl: null,
      ownerId: ctx.userId,
      isPublic: false,
      requireApproval: false,
      tags: [],
    });
    // Its rows bump no version: nobody can hold a snapshot of a server before this commit (migration 0213).
    await markFreshServer(tx, serverId);
    // Roles and channels number their source ids separately; overrides are `channel:role`.
    const ids: CreatedIds = { role: new Map(), channel: new Map(), override: new Map() };
    const roles = await createRoles(tx, serverId, plan, ids.role);
    await enqueueEvents(
      tx,
      roles.map((r) => eventOf(ctx, 'guilds.role.created', r)),
    );
    await addMember(tx, ctx, serverId, ctx.userId);
    const { categories, channels } = await createChannels(tx, serverId, plan, ids.channel);
    const overrides = await createOverrides(tx, plan, ids);
    await enqueueEvents(tx, [
      ...categories.map((c) => eventOf(ctx, 'guilds.category.created', c)),
      ...channels.map((c) => eventOf(ctx, 'guilds.channel.created', c)),
      ...overrides.map((o) => eventOf(ctx, 'guilds.override.updated', o)),
    ]);
    const server = toServer(
      await updateServer(tx, serverId, {
        afkChannelId: plan.afkChannel ? (ids.channel.get(plan.afkChannel) ?? null) : null,
        entranceChannelId: plan.entranceChannel ? (ids.channel.get(plan.entranceChannel) ?? null) : null,
        afkTimeoutSeconds: plan.afkTimeoutSeconds,
      }),
    );
    await emit(tx, ctx, 'guilds.server.created', server);
    const report = plan.report.map((item) => (item.outcome === 'dropped' ? item : { ...item, id: createdId(ids, item) }));
    return { server, report };
  });
}

interface CreatedIds {
  role: Map<string, string>;
  channel: Map<string, string>;
  override: Map<string, string>;
}

type Subject = keyof typeof GUILDS_EVENTS;

/** The outbox row of a guilds event, its payload parsed by its contract (as `emit` does), for writing many at once. */
function eventOf<S extends Subject>(ctx: Ctx, subject: S, data: z.input<(typeof GUILDS_EVENTS)[S]>): OutboxRow {
  return outboxRow(subject, data, ctx.requestId);
}

function createdId(ids: CreatedIds, item: ImportReportItem): string | null {
  if (item.kind === 'setting') return null;
  const map = item.kind === 'role' ? ids.role : item.kind === 'override' ? ids.override : ids.channel;
  return map.get(item.sourceId) ?? null;
}

/** A new id for a source item, remembered under its source id. */
function newIdFor(ids: Map<string, string>, sourceId: string): string {
  const id = uuidv7();
  ids.set(sourceId, id);
  return id;
}

/** @everyone, then the others at their final positions: the plan lists them bottom to top, as the template does. */
async function createRoles(tx: Queryable, serverId: string, plan: TemplatePlan, ids: Map<string, string>): Promise<Role[]> {
  const everyone = await insertEveryoneRole(tx, serverId, plan.everyonePermissions);
  if (plan.everyoneSourceId !== null) ids.set(plan.everyoneSourceId, serverId);
  const roles = plan.roles.map(({ sourceId, ...fields }, i) => ({ id: newIdFor(ids, sourceId), serverId, position: i + 1, ...fields }));
  return [everyone, ...(await insertRolesAt(tx, serverId, roles))];
}

async function createChannels(
  tx: Queryable,
  serverId: string,
  plan: TemplatePlan,
  ids: Map<string, string>,
): Promise<{ categories: Category[]; channels: Channel[] }> {
  const categories = await insertCategoriesInOrder(
    tx,
    serverId,
    plan.categories.map((c) => ({ id: newIdFor(ids, c.sourceId), name: c.name })),
  );
  const channels = await insertPlacedChannels(
    tx,
    plan.channels.map(({ sourceId, parent, ...fields }) => ({
      ...fields,
      id: newIdFor(ids, sourceId),
      serverId,
      categoryId: parent ? (ids.get(parent) ?? null) : null,
    })),
  );
  return { categories, channels };
}

/** The plan names each (channel, role) once (a repeat is refused), so these are all new rows. */
function createOverrides(tx: Queryable, plan: TemplatePlan, ids: CreatedIds): Promise<PermissionOverride[]> {
  return insertRoleOverrides(
    tx,
    plan.overrides.map((o) => ({
      id: newIdFor(ids.override, `${o.channel}:${o.role}`),
      channelId: ids.channel.get(o.channel) as string,
      roleId: ids.role.get(o.role) as string,
      allow: o.allow,
      deny: o.deny,
    })),
  );
}

/**
 * The server as a Discord template: roles numbered from 0 (@everyone) in position order,
 * categories and channels numbered from 1 in the order a client lists them, positions counted
 * within each parent. Temporary channels are left out (they exist only while in use), and so are
 * the channels the caller cannot view; an AFK or entrance channel among them is exported as none.
 * What the format cannot carry as it is, `report` names (exportReport).
 */
export async function exportTemplate(d: Domain, ctx: Ctx, serverId: string): Promise<ExportedTemplate> {
  const access = await memberAccess(d.pool, serverId, ctx.userId);
  requirePermission(access.permissions, MANAGE_SERVER, 'MANAGE_SERVER');
  const server = toServer(access.server);
  // Only the channels the caller may view (all of them for the owner and ADMINISTRATOR): MANAGE_SERVER
  // alone must not reveal a hidden channel, its name, topic or overrides.
  const [roles, categories, channels, overrides] = await Promise.all([
    listRoles(d.pool, serverId),
    listCategories(d.pool, serverId),
    visibleChannels(d.pool, access, d.channelLists).then((visible) => visible.map((v) => v.channel).filter((c) => !c.isTemporary)),
    overridesOfServer(d.pool, serverId),
  ]);

  const roleNumber = new Map([...roles].sort((a, b) => a.position - b.position).map((r, i) => [r.id, i]));
  const channelNumber = new Map<string, number>();
  for (const id of [...categories.map((c) => c.id), ...channels.map((c) => c.id)]) channelNumber.set(id, channelNumber.size + 1);
  const siblings = (c: Channel) => channels.filter((o) => o.categoryId === c.categoryId);
  const number = (id: string | null) => (id ? (channelNumber.get(id) ?? null) : null);

  return {
    code: server.id,
    name: server.name,
    description: server.description,
    source_guild_id: server.id,
    serialized_source_guild: {
      name: server.name,
      description: server.description,
      afk_timeout: server.afkTimeoutSeconds,
      afk_channel_id: number(server.afkChannelId),
      system_channel_id: number(server.entranceChannelId),
      roles: [...roles]
        .sort((a, b) => a.position - b.position)
        .map((r) => ({
          id: roleNumber.get(r.id) as number,
          name: r.name,
          permissions: String(r.permissions),
          color: r.color,
          hoist: r.hoist,
          mentionable: r.mentionable,
        })),
      channels: [
        ...categories.map((k, i) => ({
          id: channelNumber.get(k.id) as number,
          type: DISCORD_CHANNEL_TYPE.category,
          name: k.name,
          position: i,
          topic: null,
          nsfw: false,
          rate_limit_per_user: 0,
          user_limit: 0,
          parent_id: null,
          permission_overwrites: [],
        })),
        ...channels.map((c) => ({
          id: channelNumber.get(c.id) as number,
          type: c.channelType === 'text' ? DISCORD_CHANNEL_TYPE.text : DISCORD_CHANNEL_TYPE.voice,
          name: c.name,
          position: siblings(c).indexOf(c),
          topic: c.topic,
          nsfw: c.isNsfw,
          rate_limit_per_user: c.slowmodeSeconds,
          user_limit: c.userLimit,
          parent_id: number(c.categoryId),
          permission_overwrites: overwritesOf(
            c,
            overrides.filter((o) => o.channelId === c.id),
            serverId,
          )
            .map((o) => ({ id: roleNumber.get(o.roleId) as number, type: 0 as const, allow: String(o.allow), deny: String(o.deny) }))
            .sort((a, b) => a.id - b.id),
        })),
      ],
    },
    report: exportReport(server, channels, channelNumber),
  };
}

/**
 * The role overwrites of a channel as a template carries them. A hidden channel becomes an @everyone
 * overwrite denying VIEW_CHANNEL (added to the one it has), which shows it to the same members except
 * those who saw it only through MANAGE_CHANNELS: stricter, never wider. When its @everyone overwrite
 * allows VIEW_CHANNEL, hiding shows it to everyone anyway, and it is left as it is.
 */
function overwritesOf(
  channel: Channel,
  overrides: PermissionOverride[],
  everyoneId: string,
): { roleId: string; allow: bigint; deny: bigint }[] {
  const overwrites = overrides.flatMap((o) =>
    o.roleId ? [{ roleId: o.roleId, allow: BigInt(o.allowBits), deny: BigInt(o.denyBits) }] : [],
  );
  if (!channel.isHidden) return overwrites;
  const everyone = overwrites.find((o) => o.roleId === everyoneId);
  if (!everyone) return [...overwrites, { roleId: everyoneId, allow: 0n, deny: Permission.VIEW_CHANNEL }];
  if ((everyone.allow & Permission.VIEW_CHANNEL) === 0n) everyone.deny |= Permission.VIEW_CHANNEL;
  return overwrites;
}

/**
 * What the template format cannot carry as it is: a hidden channel (changed, see overwritesOf), and
 * what has no counterpart in Discord's format and no exact permission form, so it is left out: a
 * locked voice channel (isLocked admits only members who may move members, which no overwrite says),
 * musicLocked, and the server's join-to-create channel and DJ roles.
 */
function exportReport(server: Server, channels: Channel[], channelNumber: Map<string, number>): ExportReportItem[] {
  const report: ExportReportItem[] = [];
  const channelItem = (c: Channel, outcome: ExportReportItem['outcome'], note: string) =>
    report.push({ kind: 'channel', id: c.id, templateId: channelNumber.get(c.id) ?? null, name: c.name, outcome, note });
  for (const c of channels) {
    if (c.isHidden) channelItem(c, 'changed', HIDDEN_NOTE);
    if (c.isLocked) channelItem(c, 'dropped', 'isLocked is not exported: no overwrite admits only the members who may move members');
    if (c.musicLocked) channelItem(c, 'dropped', 'musicLocked is not exported: a template has no music settings');
  }
  const setting = (name: string, note: string) =>
    report.push({ kind: 'setting', id: server.id, templateId: null, name, outcome: 'dropped', note });
  if (server.jtcChannelId) setting('jtcChannelId', 'the join-to-create channel is not exported: a template has no such setting');
  if (server.djRoleIds.length > 0) setting('djRoleIds', 'DJ roles are not exported: a template has no music settings');
  return report;
}

const HIDDEN_NOTE =
  'isHidden became an @everyone overwrite denying VIEW_CHANNEL (unless it allows VIEW_CHANNEL): members who saw it only through MANAGE_CHANNELS will not see it after an import';
