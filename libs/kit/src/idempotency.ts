import { createCipheriv, createDecipheriv, createHash, hkdfSync, randomBytes } from 'node:crypto';
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
// The keys' advisory locks (space, hash): one lock space of the kit's, apart from the relay's and migrations'.
const LOCK_SPACE = 727_003;

/** The scope of a route whose keys belong to the caller (`idempotent: 'user'`). */
export function userIdempotencyScope(userId: string): string {
  return `user:${userId}`;
}

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
 * re-serialises its JSON still matches). A body left to the handler as a stream is known here only
 * by its declared length and type; a handler that reads it can do better (see
 * streamedRequestFingerprint).
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

/**
 * What makes two requests "the same" when the handler reads the body itself (an upload): method,
 * path with query, and `content`, what the handler read that makes the request what it is (a
 * file's hash and name, not the multipart framing around it, whose boundary a client draws anew
 * for each attempt).
 */
export function streamedRequestFingerprint(req: FastifyRequest, content: string): string {
  return createHash('sha256').update(`${req.method} ${req.url}\n${content}`).digest('base64url');
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

/** An answer kept under an Idempotency-Key. */
export interface StoredAnswer extends Record<string, unknown> {
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
 * their key may be used again. `sealed`: the answer holds a secret, stored as sealedClaim says.
 */
export async function runIdempotent(
  pool: Pool,
  req: FastifyRequest,
  reply: FastifyReply,
  scope: string,
  key: string,
  handle: () => Promise<{ status: number; body: unknown }>,
  { sealed = false }: { sealed?: boolean } = {},
): Promise<{ status: number; body: unknown; replayed: boolean }> {
  const plain = { scope, key, fingerprint: requestFingerprint(req) };
  const claim = sealed ? sealedClaim(plain) : plain;
  return withRequestTx(pool, async (tx) => {
    const { rows } = await tx.query<{ held: boolean }>('SELECT pg_try_advisory_xact_lock($1, hashtext($2)) AS held', lockOf(claim));
    if (!rows[0]?.held) throw new AppError(409, 'A request with this Idempotency-Key is still being processed; retry later');
    return answerOnce(tx, reply, claim, handle);
  });
}

/** Where a request keeps its answer under an Idempotency-Key, and what makes another request the same. */
export interface IdempotencyClaim {
  scope: string;
  key: string;
  /** requestFingerprint, or streamedRequestFingerprint for a request that reads its own body. */
  fingerprint: string;
  /** Set by sealedClaim: the AES-256-GCM key the answer is stored under. */
  sealingKey?: Buffer;
}

// A raw key is 1 to 255 visible ASCII characters: with a space, a sealed key's stored form is none of them.
const SEALED_KEY_PREFIX = 'sealed ';
const SEAL_IV_BYTES = 12;
const SEAL_TAG_BYTES = 16;

/**
 * The claim of a request whose answer holds a secret shown once (a webhook's token): the table
 * keeps neither the secret nor the client's key. The key column holds the key's SHA-256, and the
 * answer is stored encrypted (AES-256-GCM) under a key derived from the raw key and the scope
 * (HKDF-SHA256), so only a retry with the key, which only the client has, can read it again.
 */
export function sealedClaim(claim: IdempotencyClaim): IdempotencyClaim {
  const digest = createHash('sha256').update(claim.key).digest('base64url');
  const sealingKey = Buffer.from(hkdfSync('sha256', claim.key, claim.scope, 'idempotency-key answer', 32));
  return { ...claim, key: `${SEALED_KEY_PREFIX}${digest}`, sealingKey };
}

/** The answer's JSON, encrypted: iv, tag and ciphertext in one base64url string (a JSON string in the column). */
function sealAnswer(body: unknown, sealingKey: Buffer): string {
  const iv = randomBytes(SEAL_IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', sealingKey, iv);
  const sealed = Buffer.concat([cipher.update(JSON.stringify(body ?? null), 'utf8'), cipher.final()]);
  return Buffer.concat([iv, cipher.getAuthTag(), sealed]).toString('base64url');
}

function openAnswer(stored: unknown, sealingKey: Buffer): unknown {
  const bytes = Buffer.from(String(stored), 'base64url');
  const decipher = createDecipheriv('aes-256-gcm', sealingKey, bytes.subarray(0, SEAL_IV_BYTES));
  decipher.setAuthTag(bytes.subarray(SEAL_IV_BYTES, SEAL_IV_BYTES + SEAL_TAG_BYTES));
  const json = Buffer.concat([decipher.update(bytes.subarray(SEAL_IV_BYTES + SEAL_TAG_BYTES)), decipher.final()]).toString('utf8');
  return JSON.parse(json);
}

/**
 * Ends an idempotent request whose body the handler read before anything was written, holding no
 * connection meanwhile: an upload, whose transfer may take minutes, would otherwise keep a pool
 * connection idle in a transaction all along (runIdempotent's), and a few slow clients would take
 * them all. One short transaction waits for the key's lock (a request with the same key may be
 * committing), then replays an answer stored meanwhile (422 for another fingerprint) without
 * running `write`, or runs `write` (its withTx calls join the transaction) and stores its answer
 * with it. Two concurrent requests with one key thus apply once: the later one is answered as a
 * retry. The caller undoes what it did before this call (bytes it stored) when the answer is a
 * replay or the call throws.
 */
export async function commitIdempotent(
  pool: Pool,
  reply: FastifyReply,
  claim: IdempotencyClaim,
  write: (tx: Queryable) => Promise<{ status: number; body: unknown }>,
): Promise<{ status: number; body: unknown; replayed: boolean }> {
  return withRequestTx(pool, async (tx) => {
    await tx.query('SELECT pg_advisory_xact_lock($1, hashtext($2))', lockOf(claim));
    return answerOnce(tx, reply, claim, () => write(tx));
  });
}

/** The key's advisory lock (space, name), held by the transaction that answers under the key. */
const lockOf = ({ scope, key }: IdempotencyClaim) => [LOCK_SPACE, `${scope}\n${key}`];

/** Under the key's lock: the stored answer replayed (422 for another fingerprint), or `handle`'s answer stored with its writes. */
async function answerOnce(
  tx: Queryable,
  reply: FastifyReply,
  claim: IdempotencyClaim,
  handle: () => Promise<{ status: number; body: unknown }>,
): Promise<{ status: number; body: unknown; replayed: boolean }> {
  const stored = await findIdempotentAnswer(tx, claim.scope, claim.key);
  if (stored) {
    const replayed = replayAnswer(stored, claim.fingerprint, reply);
    return claim.sealingKey ? { ...replayed, body: openAnswer(replayed.body, claim.sealingKey) } : replayed;
  }
  const answer = await handle();
  await storeAnswer(tx, claim, answer);
  return { ...answer, replayed: false };
}

/**
 * A creating request whose slow work (asking other services) comes before its write: under an
 * Idempotency-Key only `write` runs in the key's transaction (commitIdempotent), so no pool
 * connection waits on that work, as the route option `idempotent: 'user'` would make it; without a
 * key, `write` just runs. `status` is the route's success status, which a replay answers again.
 */
export async function writeOnce<T>(
  pool: Pool,
  req: FastifyRequest,
  reply: FastifyReply,
  status: number,
  write: () => Promise<T>,
): Promise<T> {
  const key = idempotencyKeyOf(req);
  if (!key) return write();
  const claim = { scope: userIdempotencyScope(req.user.id), key, fingerprint: requestFingerprint(req) };
  const answer = await commitIdempotent(pool, reply, claim, async () => ({ status, body: await write() }));
  return answer.body as T;
}

/**
 * A stored answer given again, marked `Idempotent-Replayed`, to a request with its fingerprint;
 * 422 for another request under the same key.
 */
export function replayAnswer(
  stored: StoredAnswer,
  fingerprint: string,
  reply: FastifyReply,
): { status: number; body: unknown; replayed: true } {
  if (stored.fingerprint !== fingerprint) throw new AppError(422, 'This Idempotency-Key was already used for a different request');
  reply.header(REPLAYED_HEADER, 'true');
  return { status: stored.status, body: stored.response, replayed: true };
}

async function storeAnswer(
  tx: Queryable,
  { scope, key, fingerprint, sealingKey }: IdempotencyClaim,
  answer: { status: number; body: unknown },
): Promise<void> {
  const response = sealingKey ? sealAnswer(answer.body, sealingKey) : answer.body;
  await tx.query(
    `INSERT INTO idempotency_keys (scope, key, fingerprint, status, response) VALUES ($1, $2, $3, $4, $5)
     ON CONFLICT (scope, key) DO UPDATE SET fingerprint = $3, status = $4, response = $5, created_at = now()`,
    [scope, key, fingerprint, answer.status, response === undefined ? null : JSON.stringify(response)],
  );
}

/**
 * The answer stored under a key, unless it expired (an expired one is as good as absent). A handler
 * that reads its body before committing asks this first, so that a retry is answered without its
 * work being done again (nor counted against a quota the first request may have filled).
 */
export async function findIdempotentAnswer(tx: Queryable, scope: string, key: string): Promise<StoredAnswer | undefined> {
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
