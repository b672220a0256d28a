import { randomBytes, randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { MESSAGES_SUBJECTS, PASSWORD_HASH_OPTIONS } from '@chat/contracts';
import { createPool, migrate, outboxRow, type Pool } from '@chat/kit';
import { type Backing, createTestDatabase, removeBucket } from '@chat/testkit';
import { type Algorithm, hash, verify } from '@node-rs/argon2';
import { Client } from 'minio';
import { v7 as uuidv7 } from 'uuid';
import { perSecond } from './rates.ts';
import type { BenchContext, ScenarioLoad } from './scenario.ts';

/**
 * The building block a scenario is made of, measured alone in the same run: what the platform's
 * figure is compared with besides its own service (a write with a raw INSERT, a login with the
 * password hash it verifies, an upload with a raw put into MinIO).
 */
export type Reference = OperationReference | HttpReference;

interface ReferenceInfo {
  /** Unique; scenarios naming the same reference at the same concurrency share one measurement. */
  name: string;
  summary: string;
  /** What one operation is, in the table: rows, verifications, puts. */
  unit: string;
  /** The payload of one operation, when it moves a file: the table then shows MiB/s too. */
  bytesPerOperation?: number;
}

/** A building block measured in the bench process: `prepare` returns the operation, closed-loop callers repeat it. */
export interface OperationReference extends ReferenceInfo {
  /** Prepares what the operation needs (a database, a hash, a bucket) on the run's backing parts; `cleanUp` removes it. */
  prepare(backing: Backing): Promise<{ operation: () => Promise<unknown>; cleanUp(): Promise<void> }>;
}

/**
 * A building block that is itself an HTTP request through the platform (the edge around the
 * cheapest real query): sent by autocannon as the scenarios' requests are, so the ratio compares
 * loads generated the same way.
 */
export interface HttpReference extends ReferenceInfo {
  /** Prepares the data through the platform, as a scenario's setup does. */
  load(ctx: BenchContext): Promise<ScenarioLoad>;
}

export interface ReferenceFigures {
  perSecond: number;
  p50: number;
  p99: number;
  operations: number;
}

export function defineReference<R extends Reference>(reference: R): R {
  return reference;
}

/** `callers` concurrent loops of `operation` for the duration, each waiting for its last answer. */
export async function closedLoop(callers: number, durationSeconds: number, operation: () => Promise<unknown>): Promise<ReferenceFigures> {
  const latencies: number[] = [];
  const deadline = Date.now() + durationSeconds * 1000;
  const caller = async () => {
    while (Date.now() < deadline) {
      const started = performance.now();
      await operation();
      latencies.push(performance.now() - started);
    }
  };
  await Promise.all(Array.from({ length: callers }, caller));
  latencies.sort((a, b) => a - b);
  const at = (q: number) => Math.round(latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? 0);
  return { perSecond: perSecond(latencies.length / durationSeconds), p50: at(0.5), p99: at(0.99), operations: latencies.length };
}

/** A database of its own with a pool of 10 (the services' pool size), and the clean-up that drops it. */
async function databaseOfItsOwn(backing: Backing, label: string): Promise<{ pool: Pool; cleanUp(): Promise<void> }> {
  const database = await createTestDatabase(backing.postgresUrl, label);
  const pool = createPool(database.url, 10);
  const cleanUp = async () => {
    await pool.end();
    await database.drop();
  };
  return { pool, cleanUp };
}

/** Single-row INSERTs of a 200-byte body over a pool of 10 (the services' pool size), in a database of its own. */
export const rawInsert = defineReference({
  name: 'raw INSERT',
  summary: 'single-row INSERT of a 200-byte body over a pool of 10, no HTTP, no service code',
  unit: 'rows',
  async prepare(backing) {
    const { pool, cleanUp } = await databaseOfItsOwn(backing, 'bench_insert');
    await pool.query('CREATE TABLE rows (id bigserial PRIMARY KEY, body text NOT NULL, created_at timestamptz NOT NULL DEFAULT now())');
    const body = 'x'.repeat(200);
    return { operation: () => pool.query('INSERT INTO rows (body) VALUES ($1)', [body]), cleanUp };
  },
});

// Read as files, as the guilds service applies them: the bench does not import a service's source.
const GUILDS_MIGRATIONS = fileURLToPath(new URL('../../services/guilds/migrations', import.meta.url));
// Named, so prepared once per connection as the service's own is.
const POST_STATEMENT = {
  name: 'bench_post_channel_message',
  text: 'SELECT * FROM post_channel_message($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19)',
};

/**
 * The database's part of a channel post alone: guilds' one statement (post_channel_message: the
 * access version, the channel's lock, the latest id, the message and its outbox row) into one
 * channel over a pool of 10, on guilds' own migrated schema in a database of its own, with the
 * arguments the service passes. What a post through the platform adds to it is everything else.
 */
export const postStatement = defineReference({
  name: 'post statement',
  summary: "guilds' one-statement post (post_channel_message) into one channel over a pool of 10, guilds' schema, no HTTP, no service code",
  unit: 'posts',
  async prepare(backing) {
    const { pool, cleanUp } = await databaseOfItsOwn(backing, 'bench_post');
    await migrate(pool, GUILDS_MIGRATIONS);
    const [serverId, channelId, authorId] = [uuidv7(), uuidv7(), uuidv7()];
    await pool.query('INSERT INTO users (id, username, display_name, version) VALUES ($1, $2, $2, now())', [authorId, 'bench_post']);
    await pool.query('INSERT INTO servers (id, name, owner_id) VALUES ($1, $2, $3)', [serverId, 'Bench post', authorId]);
    await pool.query("INSERT INTO channels (id, server_id, name, channel_type, position) VALUES ($1, $2, 'general', 'text', 0)", [
      channelId,
      serverId,
    ]);
    const content = 'a message of about the length people type in chat';
    const mentions = { users: [], roles: [], everyone: false };
    const post = async () => {
      const [id, createdAt] = [uuidv7(), new Date().toISOString()];
      const draft = {
        id,
        channelId,
        serverId,
        authorId,
        authorName: 'Unknown user',
        authorAvatar: null,
        content,
        attachments: {},
        replyToId: null,
        mentions,
        pinned: false,
        editedAt: null,
        createdAt,
        webhookId: null,
        type: 'default',
        embeds: [],
      };
      const event = outboxRow(MESSAGES_SUBJECTS.messageCreated, draft, randomUUID());
      const { rows } = await pool.query<{ outcome: string }>({
        ...POST_STATEMENT,
        values: [
          ...[0, 0, id, channelId, serverId, authorId, content, {}, null, mentions, 'default', null, null, null, createdAt],
          ...[event.id, event.subject, event.payload, event.headers],
        ],
      });
      // A refused post (a stale version) would measure the refusal.
      if (rows[0]?.outcome !== 'posted') throw new Error(`post statement answered ${rows[0]?.outcome}`);
    };
    return { operation: post, cleanUp };
  },
});

/** Auth's own password check (argon2id, m=19 MiB, t=2, p=1) in this process: the floor of a login. */
export const argon2Verify = defineReference({
  name: 'argon2id verify',
  summary: "auth's password check alone (argon2id m=19 MiB t=2 p=1, on libuv's thread pool), no HTTP, no database",
  unit: 'verifications',
  async prepare() {
    const password = 'bench-password-1';
    const hashed = await hash(password, { ...PASSWORD_HASH_OPTIONS, algorithm: PASSWORD_HASH_OPTIONS.algorithm as Algorithm });
    return {
      operation: async () => {
        if (!(await verify(hashed, password))) throw new Error('argon2 verification failed');
      },
      cleanUp: async () => {},
    };
  },
});

/** Raw puts of a file of `bytes` random bytes into a bucket of its own in the backing MinIO, as the minio client sends them. */
export function minioPut(bytes: number) {
  return defineReference({
    name: `MinIO put ${bytes / 1024 / 1024} MiB`,
    summary: `putObject of ${bytes} random bytes straight into MinIO with the minio client, no HTTP hop, no parsing`,
    unit: 'puts',
    bytesPerOperation: bytes,
    async prepare(backing) {
      const s3 = new Client(backing.minio);
      const bucket = `bench-put-${randomBytes(5).toString('hex')}`;
      await s3.makeBucket(bucket);
      const body = randomBytes(bytes);
      let next = 0;
      return {
        operation: () => s3.putObject(bucket, `put-${next++}`, body, bytes, { 'Content-Type': 'application/octet-stream' }),
        cleanUp: async () => {
          await removeBucket(s3, bucket);
        },
      };
    },
  });
}

/**
 * The edge's building block: gateway hop + token check + rate check + one primary-key SELECT.
 * `GET /v1/users/@me` is exactly that: the gateway classifies the route, runs its one Redis script
 * (window and session denylist), checks the token (claims cached until exp) and proxies to auth,
 * whose route checks the token again (cached), reads the user by primary key and answers it
 * through its contract. Every read scenario names it, so its "x ref" is how close the read gets to
 * the cheapest authenticated request the platform serves.
 */
export const edgePkSelect = defineReference({
  name: 'edge + PK SELECT',
  summary: 'GET /v1/users/@me through the gateway: hop, token check, rate check, one primary-key SELECT in auth',
  unit: 'requests',
  async load(ctx) {
    const user = await ctx.registerUser('ref');
    return { requests: [{ method: 'GET', path: '/v1/users/@me', headers: { authorization: `Bearer ${user.token}` } }] };
  },
});
