import { createHash } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { maybeOne, type Pool, type Queryable, withRequestTx } from './db.ts';
import { AppError } from './errors.ts';

/**
 * Whose keys a route's Idempotency-Key lives among: the caller's (`user`), or a scope the route
 * derives from the request (a webhook's id for webhook execution).
 */
export type IdempotencyScope = 'user' | ((req: FastifyRequest) => string);

export const IDEMPOTENCY_HEADER = 'idempotency-key';
/** Set on an answer that repeats a stored one. */
export const REPLAYED_HEADER = 'idempotent-replayed';
/** How long a key is remembered (the IETF draft leaves it to the server; Stripe and others use 24 h). */
export const IDEMPOTENCY_TTL_HOURS = 24;

const KEY = /^[\x21-\x7e]{1,255}$/;
// pg_try_advisory_xact_lock(space, hash): one lock space of the kit's, apart from the relay's and migrations'.
const LOCK_SPACE = 727_003;

/** The key of a request: absent, or 1 to 255 visible ASCII characters (a structured-field string's quotes are dropped). */
export function idempotencyKeyOf(req: FastifyRequest): string | undefined {
  const raw = req.headers[IDEMPOTENCY_HEADER];
  if (raw === undefined) return undefined;
  const value = (Array.isArray(raw) ? raw.join(',') : raw).trim().replace(/^"(.*)"$/, '$1');
  if (!KEY.test(value)) throw new AppError(400, 'Idempotency-Key must be 1 to 255 visible ASCII characters');
  return value;
}

/**
 * What makes two requests "the same": method, path with query, and body (keys sorted, so a client that
 * re-serialises its JSON still matches). An upload's body is a stream read only by its handler:
 * its declared length and type stand for it.
 */
export function requestFingerprint(req: FastifyRequest): string {
  const body =
    req.body === undefined
      ? { length: req.headers['content-length'] ?? null, type: String(req.headers['content-type'] ?? '').split(';')[0] }
      : req.body;
  return createHash('sha256')
    .update(`${req.method} ${req.url}\n${canonicalJson(body)}`)
    .digest('base64url');
}

function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

interface StoredAnswer extends Record<string, unknown> {
  fingerprint: string;
  status: number;
  response: unknown;
}

/**
 * Runs an idempotent request (IETF draft "The Idempotency-Key HTTP Header Field"): the whole
 * handler runs in one transaction (its withTx calls join it) that also records the answer, so the
 * write and its key commit together. A retry with the same key and body within 24 h gets the first
 * answer again (same status and body, `Idempotent-Replayed: true`) and writes nothing; the same key
 * with another body is 422; while the first request still runs, 409. Failed requests record nothing:
 * their key may be used again.
 */
export async function runIdempotent(
  pool: Pool,
  req: FastifyRequest,
  reply: FastifyReply,
  scope: string,
  key: string,
  handle: () => Promise<{ status: number; body: unknown }>,
): Promise<{ status: number; body: unknown; replayed: boolean }> {
  const fingerprint = requestFingerprint(req);
  return withRequestTx(pool, async (tx) => {
    const { rows } = await tx.query<{ held: boolean }>('SELECT pg_try_advisory_xact_lock($1, hashtext($2)) AS held', [
      LOCK_SPACE,
      `${scope}\n${key}`,
    ]);
    if (!rows[0]?.held) throw new AppError(409, 'A request with this Idempotency-Key is still being processed; retry later');
    const stored = await storedAnswer(tx, scope, key);
    if (stored) {
      if (stored.fingerprint !== fingerprint) {
        throw new AppError(422, 'This Idempotency-Key was already used for a different request');
      }
      reply.header(REPLAYED_HEADER, 'true');
      return { status: stored.status, body: stored.response, replayed: true };
    }
    const answer = await handle();
    await tx.query(
      `INSERT INTO idempotency_keys (scope, key, fingerprint, status, response) VALUES ($1, $2, $3, $4, $5)
       ON CONFLICT (scope, key) DO UPDATE SET fingerprint = $3, status = $4, response = $5, created_at = now()`,
      [scope, key, fingerprint, answer.status, answer.body === undefined ? null : JSON.stringify(answer.body)],
    );
    return { ...answer, replayed: false };
  });
}

/** The answer stored under a key, unless it expired (an expired one is as good as absent). */
async function storedAnswer(tx: Queryable, scope: string, key: string): Promise<StoredAnswer | undefined> {
  return maybeOne<StoredAnswer>(
    tx,
    `SELECT fingerprint, status, response FROM idempotency_keys
     WHERE scope = $1 AND key = $2 AND created_at > now() - make_interval(hours => $3)`,
    [scope, key, IDEMPOTENCY_TTL_HOURS],
  );
}

/** Deletes keys older than 24 h, at most `limit` at a time; answers how many went. */
export async function purgeIdempotencyKeys(db: Queryable, limit = 1_000): Promise<number> {
  const { rowCount } = await db.query(
    `DELETE FROM idempotency_keys WHERE ctid IN (
       SELECT ctid FROM idempotency_keys WHERE created_at <= now() - make_interval(hours => $1) LIMIT $2)`,
    [IDEMPOTENCY_TTL_HOURS, limit],
  );
  return rowCount ?? 0;
}
