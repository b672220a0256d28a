import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import {
  type ChannelMessage,
  type CreatedWebhook,
  type CreateWebhookBody,
  type ExecuteWebhookBody,
  Permission,
  type Webhook,
} from '@chat/contracts';
import { badRequest, notFound, type Queryable, unauthorized, withRetryingTx } from '@chat/kit';
import { v7 as uuidv7 } from 'uuid';
import {
  countWebhooks,
  deleteWebhookRow,
  findWebhook,
  findWebhookWithHash,
  insertWebhook,
  listWebhooks as listWebhookRows,
  lockChannelWebhooks,
} from '../db/webhooks.ts';
import { type ChannelAccess, loadChannelAccess, requirePermission } from './access.ts';
import type { Ctx, Domain } from './context.ts';
import { parseMentions, resolveMentions } from './mentions.ts';
import { postMessage, textChannelAccess } from './messages.ts';
import { has } from './permissions.ts';

/**
 * Webhooks: a token of 256 random bits shown once, stored only as its SHA-256, and checked in
 * constant time. An unknown webhook and a wrong token answer the same 401 after the same work.
 */

const TOKEN_BYTES = 32;
/** Discord's limit (its error 30007, "Maximum number of webhooks reached (15)"). */
const MAX_CHANNEL_WEBHOOKS = 15;

const hashToken = (token: string): Buffer => createHash('sha256').update(token, 'utf8').digest();

// Compared against when the webhook does not exist, so that path costs what a wrong token costs.
const NO_WEBHOOK_HASH = hashToken(randomBytes(TOKEN_BYTES).toString('base64url'));

function tokenMatches(storedHash: Buffer | undefined, token: string): boolean {
  const matches = timingSafeEqual(storedHash ?? NO_WEBHOOK_HASH, hashToken(token));
  return storedHash !== undefined && matches;
}

async function manageWebhooksAccess(db: Queryable, ctx: Ctx, channelId: string): Promise<ChannelAccess> {
  const access = await textChannelAccess(db, channelId, ctx.userId);
  requirePermission(access.channelPermissions, Permission.MANAGE_WEBHOOKS, 'MANAGE_WEBHOOKS');
  return access;
}

/** The caller holds the channel's webhooks lock, so concurrent creates count in turn. */
async function requireRoomForWebhook(tx: Queryable, channelId: string): Promise<void> {
  if ((await countWebhooks(tx, channelId)) >= MAX_CHANNEL_WEBHOOKS) {
    throw badRequest(`A channel has at most ${MAX_CHANNEL_WEBHOOKS} webhooks`);
  }
}

export async function createWebhook(d: Domain, ctx: Ctx, channelId: string, body: CreateWebhookBody): Promise<CreatedWebhook> {
  const token = randomBytes(TOKEN_BYTES).toString('base64url');
  const webhook = await withRetryingTx(d.pool, async (tx) => {
    const access = await manageWebhooksAccess(tx, ctx, channelId);
    await lockChannelWebhooks(tx, channelId);
    await requireRoomForWebhook(tx, channelId);
    return insertWebhook(tx, {
      id: uuidv7(),
      channelId,
      serverId: access.channel.serverId,
      name: body.name,
      avatarUrl: body.avatarUrl ?? null,
      createdBy: ctx.userId,
      tokenHash: hashToken(token),
    });
  });
  return { ...webhook, token, url: `/v1/webhooks/${webhook.id}/${token}` };
}

export async function listWebhooks(d: Domain, ctx: Ctx, channelId: string): Promise<Webhook[]> {
  await manageWebhooksAccess(d.pool, ctx, channelId);
  return listWebhookRows(d.pool, channelId);
}

/** 404 when the caller cannot see the webhook's channel, as if the webhook did not exist. */
export async function deleteWebhook(d: Domain, ctx: Ctx, id: string): Promise<void> {
  const webhook = await findWebhook(d.pool, id);
  const access = webhook && (await loadChannelAccess(d.pool, webhook.channelId, ctx.userId));
  if (!webhook || !access || !has(access.channelPermissions, Permission.VIEW_CHANNEL)) throw notFound('Webhook');
  requirePermission(access.channelPermissions, Permission.MANAGE_WEBHOOKS, 'MANAGE_WEBHOOKS');
  await deleteWebhookRow(d.pool, id);
}

/**
 * Posts as the webhook, in its channel, under the name and avatar the call gives or the webhook's.
 * No slowmode and no member checks (the token is the permission); @everyone never notifies.
 */
export async function executeWebhook(
  d: Domain,
  ctx: Pick<Ctx, 'requestId'>,
  id: string,
  token: string,
  body: ExecuteWebhookBody,
): Promise<ChannelMessage> {
  // Looked up in the transaction: run again after its channel's deletion, it finds no webhook.
  const stored = await withRetryingTx(d.pool, async (tx) => {
    const found = await findWebhookWithHash(tx, id);
    if (!tokenMatches(found?.tokenHash, token)) throw unauthorized('Unknown webhook or invalid token');
    const { webhook } = found as NonNullable<typeof found>;
    const mentions = await resolveMentions(tx, webhook.serverId, parseMentions(body.content), false);
    return postMessage(tx, ctx, {
      channelId: webhook.channelId,
      serverId: webhook.serverId,
      authorId: webhook.id,
      content: body.content,
      attachments: {},
      replyToId: null,
      mentions,
      webhook: { id: webhook.id, name: body.username ?? webhook.name, avatarUrl: body.avatarUrl ?? webhook.avatarUrl },
    });
  });
  return { ...stored, reactions: {} };
}
