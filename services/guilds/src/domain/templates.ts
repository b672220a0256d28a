import type { Channel, PermissionOverride } from '@chat/contracts';
import {
  DISCORD_CHANNEL_TYPE,
  type ExportedTemplate,
  type ImportedServer,
  type ImportReportItem,
  MANAGE_SERVER,
  type ParsedDiscordTemplate,
} from '@chat/contracts';
import { type Queryable, withTx } from '@chat/kit';
import { v7 as uuidv7 } from 'uuid';
import { insertCategory, listCategories } from '../db/categories.ts';
import { insertChannel, updateChannel } from '../db/channels.ts';
import { listOverrides, upsertOverride } from '../db/overrides.ts';
import { insertEveryoneRole, insertRoleAtBottom, listRoles } from '../db/roles.ts';
import { insertServer, toServer, updateServer } from '../db/servers.ts';
import { memberAccess, requirePermission, visibleChannels } from './access.ts';
import { type Ctx, type Domain, emit } from './context.ts';
import { addMember } from './membership.ts';
import { planTemplate, type TemplatePlan } from './template-plan.ts';

/** Creates the server a Discord template describes, for the caller, in one transaction. */
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
    // Roles and channels number their source ids separately; overrides are `channel:role`.
    const ids: CreatedIds = { role: new Map(), channel: new Map(), override: new Map() };
    await createRoles(tx, ctx, serverId, plan, ids.role);
    await addMember(tx, ctx, serverId, ctx.userId);
    await createChannels(tx, ctx, serverId, plan, ids.channel);
    for (const o of plan.overrides) {
      const override = await upsertOverride(tx, {
        id: uuidv7(),
        channelId: ids.channel.get(o.channel) as string,
        roleId: ids.role.get(o.role) as string,
        userId: null,
        allow: o.allow,
        deny: o.deny,
      });
      ids.override.set(`${o.channel}:${o.role}`, override.id);
      await emit(tx, ctx, 'guilds.override.updated', override);
    }
    const server = toServer(
      await updateServer(tx, serverId, {
        afkChannelId: plan.afkChannel ? (ids.channel.get(plan.afkChannel) ?? null) : null,
        entranceChannelId: plan.entranceChannel ? (ids.channel.get(plan.entranceChannel) ?? null) : null,
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

function createdId(ids: CreatedIds, item: ImportReportItem): string | null {
  if (item.kind === 'setting') return null;
  const map = item.kind === 'role' ? ids.role : item.kind === 'override' ? ids.override : ids.channel;
  return map.get(item.sourceId) ?? null;
}

async function createRoles(tx: Queryable, ctx: Ctx, serverId: string, plan: TemplatePlan, ids: Map<string, string>): Promise<void> {
  await insertEveryoneRole(tx, serverId, plan.everyonePermissions);
  if (plan.everyoneSourceId !== null) ids.set(plan.everyoneSourceId, serverId);
  // Each new role goes in just above @everyone, so the top one is created first.
  for (const role of [...plan.roles].reverse()) {
    const { sourceId, ...fields } = role;
    ids.set(sourceId, (await insertRoleAtBottom(tx, { id: uuidv7(), serverId, ...fields })).id);
  }
  for (const role of await listRoles(tx, serverId)) await emit(tx, ctx, 'guilds.role.created', role);
}

async function createChannels(tx: Queryable, ctx: Ctx, serverId: string, plan: TemplatePlan, ids: Map<string, string>): Promise<void> {
  for (const c of plan.categories) {
    const category = await insertCategory(tx, { id: uuidv7(), serverId, name: c.name });
    ids.set(c.sourceId, category.id);
    await emit(tx, ctx, 'guilds.category.created', category);
  }
  for (const c of plan.channels) {
    const categoryId = c.parent ? (ids.get(c.parent) ?? null) : null;
    const inserted = await insertChannel(tx, {
      id: uuidv7(),
      serverId,
      categoryId,
      name: c.name,
      channelType: c.channelType,
      topic: c.topic,
    });
    const channel = await updateChannel(tx, inserted.id, { isNsfw: c.isNsfw, slowmodeSeconds: c.slowmodeSeconds, userLimit: c.userLimit });
    ids.set(c.sourceId, channel.id);
    await emit(tx, ctx, 'guilds.channel.created', channel);
  }
}

/**
 * The server as a Discord template: roles numbered from 0 (@everyone) in position order,
 * categories and channels numbered from 1 in the order a client lists them, positions counted
 * within each parent. Temporary channels are left out (they exist only while in use), and so are
 * the channels the caller cannot view; an AFK or entrance channel among them is exported as none.
 */
export async function exportTemplate(d: Domain, ctx: Ctx, serverId: string): Promise<ExportedTemplate> {
  const access = await memberAccess(d.pool, serverId, ctx.userId);
  requirePermission(access.permissions, MANAGE_SERVER, 'MANAGE_SERVER');
  const server = toServer(access.server);
  // Only the channels the caller may view (all of them for the owner and ADMINISTRATOR): MANAGE_SERVER
  // alone must not reveal a hidden channel, its name, topic or overrides.
  const [roles, categories, channels] = await Promise.all([
    listRoles(d.pool, serverId),
    listCategories(d.pool, serverId),
    visibleChannels(d.pool, access, d.channelLists).then((visible) => visible.map((v) => v.channel).filter((c) => !c.isTemporary)),
  ]);
  const overrides = new Map<string, PermissionOverride[]>();
  for (const c of channels) overrides.set(c.id, await listOverrides(d.pool, c.id));

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
      afk_timeout: 300,
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
          permission_overwrites: (overrides.get(c.id) ?? [])
            .filter((o) => o.roleId !== null)
            .map((o) => ({
              id: roleNumber.get(o.roleId as string) as number,
              type: 0 as const,
              allow: String(o.allowBits),
              deny: String(o.denyBits),
            }))
            .sort((a, b) => a.id - b.id),
        })),
      ],
    },
  };
}
