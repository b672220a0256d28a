import type { Webhook } from '@chat/contracts';
import { exec, many, maybeOne, one, type Queryable } from '@chat/kit';
import { holdLock } from './sql.ts';

type WebhookRow = {
  id: string;
  channel_id: string;
  server_id: string;
  name: string;
  avatar_url: string | null;
  created_by: string;
  created_at: string;
};

// Never token_hash: no record read here can carry it by mistake.
const COLUMNS = 'id, channel_id, server_id, name, avatar_url, created_by, created_at';

const toWebhook = (r: WebhookRow): Webhook => ({
  id: r.id,
  channelId: r.channel_id,
  serverId: r.server_id,
  name: r.name,
  avatarUrl: r.avatar_url,
  createdBy: r.created_by,
  createdAt: r.created_at,
});

export type NewWebhook = Omit<Webhook, 'createdAt'> & { tokenHash: Buffer };

export async function insertWebhook(tx: Queryable, w: NewWebhook): Promise<Webhook> {
  const row = await one<WebhookRow>(
    tx,
    `INSERT INTO webhooks (id, channel_id, server_id, name, avatar_url, token_hash, created_by) VALUES ($1, $2, $3, $4, $5, $6, $7)
     RETURNING ${COLUMNS}`,
    [w.id, w.channelId, w.serverId, w.name, w.avatarUrl, w.tokenHash, w.createdBy],
  );
  return toWebhook(row);
}

/** Serialises the creation of a channel's webhooks (their number is bounded), across replicas. */
export async function lockChannelWebhooks(db: Queryable, channelId: string): Promise<void> {
  await holdLock(db, 'webhooks', channelId);
}

export async function countWebhooks(db: Queryable, channelId: string): Promise<number> {
  return (await one<{ n: number }>(db, 'SELECT count(*)::int AS n FROM webhooks WHERE channel_id = $1', [channelId])).n;
}

export async function listWebhooks(db: Queryable, channelId: string): Promise<Webhook[]> {
  const rows = await many<WebhookRow>(db, `SELECT ${COLUMNS} FROM webhooks WHERE channel_id = $1 ORDER BY created_at, id`, [channelId]);
  return rows.map(toWebhook);
}

export async function findWebhook(db: Queryable, id: string): Promise<Webhook | undefined> {
  const row = await maybeOne<WebhookRow>(db, `SELECT ${COLUMNS} FROM webhooks WHERE id = $1`, [id]);
  return row && toWebhook(row);
}

/** The webhook with its token hash, for checking a token; the hash never leaves the domain. */
export async function findWebhookWithHash(db: Queryable, id: string): Promise<{ webhook: Webhook; tokenHash: Buffer } | undefined> {
  const row = await maybeOne<WebhookRow & { token_hash: Buffer }>(db, `SELECT ${COLUMNS}, token_hash FROM webhooks WHERE id = $1`, [id]);
  return row && { webhook: toWebhook(row), tokenHash: row.token_hash };
}

export function deleteWebhookRow(tx: Queryable, id: string): Promise<number> {
  return exec(tx, 'DELETE FROM webhooks WHERE id = $1', [id]);
}
