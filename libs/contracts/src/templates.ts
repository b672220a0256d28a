import { z } from 'zod';
import { shownName } from './common.ts';
import { Server } from './records.ts';

/**
 * Discord's server template object, as its API returns it from `GET /guilds/templates/{code}`:
 * what `POST /v1/servers/import` takes and `GET /v1/servers/{id}/template` gives. Fields this
 * platform has no use for are accepted and ignored; the ones it maps are checked.
 */

/**
 * Discord's limits on one server, kept alike by creating one at a time and by an import (so a
 * server's export stays within what an import takes): roles with @everyone, channels with
 * categories, and permission overrides of one channel.
 */
export const MAX_SERVER_ROLES = 250;
export const MAX_SERVER_CHANNELS = 500;
export const MAX_CHANNEL_OVERRIDES = 100;
/** Permission overwrites in one template, all channels together (each one is a row and an event). */
export const MAX_TEMPLATE_OVERWRITES = 2000;

/** Discord's channel types that a template can carry. */
export const DISCORD_CHANNEL_TYPE = {
  text: 0,
  voice: 2,
  category: 4,
  announcement: 5,
  stage: 13,
  forum: 15,
  media: 16,
} as const;

/** Template ids are small integers (0 is @everyone), or snowflake strings in older exports. */
const SourceId = z.union([z.number().int().min(0), z.string().regex(/^\d{1,20}$/, 'must be a number')]).transform(String);
/** Discord sends masks as decimal strings (they outgrow 2^53). */
const PermissionString = z
  .union([z.string().regex(/^\d{1,20}$/, 'must be a permission number'), z.number().int().min(0)])
  .transform(String);

export const DiscordTemplateRole = z.object({
  id: SourceId,
  /** As POST roles takes them: emoji and symbols are fine; controls, bidi overrides and blank-only names are not. */
  name: shownName(1, 100),
  permissions: PermissionString,
  color: z.number().int().min(0).max(0xffffff).default(0),
  hoist: z.boolean().default(false),
  mentionable: z.boolean().default(false),
});

export const DiscordOverwrite = z.object({
  id: SourceId,
  /** 0 or "role": a role; 1 or "member": a member of the source server. */
  type: z.union([z.literal(0), z.literal(1), z.literal('role'), z.literal('member')]),
  allow: PermissionString,
  deny: PermissionString,
});

export const DiscordTemplateChannel = z.object({
  id: SourceId,
  type: z.number().int().min(0).max(100),
  /** As POST channels and categories take them. */
  name: shownName(1, 100),
  position: z.number().int().min(0).default(0),
  topic: z.string().max(1024).nullish(),
  nsfw: z.boolean().default(false),
  rate_limit_per_user: z.number().int().min(0).max(21_600).default(0),
  user_limit: z.number().int().min(0).max(99).default(0),
  parent_id: SourceId.nullish(),
  permission_overwrites: z
    .array(DiscordOverwrite)
    .max(MAX_CHANNEL_OVERRIDES, `at most ${MAX_CHANNEL_OVERRIDES} permission overwrites per channel`)
    .default([]),
});

export const SerializedSourceGuild = z.object({
  /** As POST servers takes it. */
  name: shownName(2, 100),
  description: z.string().max(1000).nullish(),
  afk_timeout: z.number().int().min(0).default(300),
  afk_channel_id: SourceId.nullish(),
  system_channel_id: SourceId.nullish(),
  roles: z.array(DiscordTemplateRole).max(MAX_SERVER_ROLES, `at most ${MAX_SERVER_ROLES} roles`),
  channels: z.array(DiscordTemplateChannel).max(MAX_SERVER_CHANNELS, `at most ${MAX_SERVER_CHANNELS} channels`),
});

export const DiscordTemplate = z
  .object(
    {
      code: z.string().max(64).nullish(),
      name: z.string().max(100).nullish(),
      description: z.string().max(1000).nullish(),
      serialized_source_guild: SerializedSourceGuild,
    },
    { error: 'must be the template object itself: paste the JSON of the template (codes and links are not fetched)' },
  )
  .meta({ id: 'DiscordTemplate' });
export type DiscordTemplate = z.input<typeof DiscordTemplate>;
export type ParsedDiscordTemplate = z.output<typeof DiscordTemplate>;

export const ImportTemplateBody = z.object({ template: DiscordTemplate });

/** What became of one item of the source template. */
export const ImportReportItem = z.object({
  kind: z.enum(['role', 'category', 'channel', 'override', 'setting']),
  sourceId: z.string(),
  name: z.string(),
  outcome: z.enum(['created', 'changed', 'dropped']),
  /** The id it has here, when it was created. */
  id: z.string().nullable(),
  /** Why it was changed or dropped. */
  note: z.string().nullable(),
});
export type ImportReportItem = z.infer<typeof ImportReportItem>;

export const ImportedServer = z.object({ server: Server, report: z.array(ImportReportItem) }).meta({ id: 'ImportedServer' });
export type ImportedServer = z.infer<typeof ImportedServer>;

/**
 * What of the server the template format cannot carry as it is, named by the export (an import of
 * the export cannot know it): a flag expressed another way (`changed`) or left out (`dropped`).
 */
export const ExportReportItem = z.object({
  kind: z.enum(['channel', 'setting']),
  /** The id here: the channel's, or the server's for a setting. */
  id: z.string(),
  /** The channel's number in the template; null for a setting. */
  templateId: z.number().int().nullable(),
  /** The channel's name, or the setting's field. */
  name: z.string(),
  outcome: z.enum(['changed', 'dropped']),
  note: z.string(),
});
export type ExportReportItem = z.infer<typeof ExportReportItem>;

/**
 * The export: the same shape, numbers as Discord writes them, and `report` (not Discord's, ignored
 * by an import) naming what the template does not carry as it is.
 */
export const ExportedTemplate = z
  .object({
    code: z.string(),
    name: z.string(),
    description: z.string().nullable(),
    source_guild_id: z.string(),
    serialized_source_guild: z.object({
      name: z.string(),
      description: z.string().nullable(),
      afk_timeout: z.number().int(),
      afk_channel_id: z.number().int().nullable(),
      system_channel_id: z.number().int().nullable(),
      roles: z.array(
        z.object({
          id: z.number().int(),
          name: z.string(),
          permissions: z.string(),
          color: z.number().int(),
          hoist: z.boolean(),
          mentionable: z.boolean(),
        }),
      ),
      channels: z.array(
        z.object({
          id: z.number().int(),
          type: z.number().int(),
          name: z.string(),
          position: z.number().int(),
          topic: z.string().nullable(),
          nsfw: z.boolean(),
          rate_limit_per_user: z.number().int(),
          user_limit: z.number().int(),
          parent_id: z.number().int().nullable(),
          permission_overwrites: z.array(z.object({ id: z.number().int(), type: z.literal(0), allow: z.string(), deny: z.string() })),
        }),
      ),
    }),
    report: z.array(ExportReportItem),
  })
  .meta({ id: 'ExportedTemplate' });
export type ExportedTemplate = z.infer<typeof ExportedTemplate>;
