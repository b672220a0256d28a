import { PresenceSeenRpc, type SeenStatus, STREAMS, type UserEventData } from '@chat/contracts';
import { type ConsumerHandle, ensureStream, loadConfig, serveRpc } from '@chat/kit';
import { createTestIssuer, createTestRuntime, startAuthLookupStandIn, startMediaStandIn, type TestRuntime, until } from '@chat/testkit';
import type { FastifyInstance } from 'fastify';
import { v7 as uuidv7 } from 'uuid';
import { inject } from 'vitest';

import { buildApp } from '../src/app.ts';
import { startUserReadModel, type UserEventHandler } from '../src/bus/users.ts';
import { SocialConfig } from '../src/config.ts';

/**
 * The social service of one test file: its own database and bus namespace, the HTTP app, the
 * users read-model consumer, and helpers that act as auth (publishing user events on the real
 * AUTH stream) and as media (answering rpc.media.file.get on the real NATS).
 */
export async function createHarness(
  options: { handleUserEvent?: (log: TestRuntime['log']) => UserEventHandler; env?: Record<string, string>; clock?: () => Date } = {},
) {
  const runtime = await createTestRuntime({
    service: 'social',
    migrationsDir: new URL('../migrations', import.meta.url).pathname,
    stream: STREAMS.social,
    backing: inject('backing'),
  });
  const issuer = await createTestIssuer();
  const config = loadConfig(SocialConfig, { ...runtime.env, ...options.env });
  const tokens = issuer.verifier();
  const deps = { ...runtime, config, tokens, ...(options.clock ? { clock: options.clock } : {}) };
  const app: FastifyInstance = await buildApp(deps);
  await ensureStream(runtime.bus, STREAMS.auth);
  let consumer: ConsumerHandle | undefined = await startUserReadModel(runtime, options.handleUserEvent?.(runtime.log));
  const media = await startMediaStandIn(runtime);
  const auth = await startAuthLookupStandIn(runtime);

  async function close() {
    await media.stop();
    await auth.close();
    await consumer?.stop();
    await app.close();
    await runtime.close();
  }

  return {
    runtime,
    deps,
    app,
    media,
    auth,
    close,
    async stopConsumer() {
      await consumer?.stop();
      consumer = undefined;
    },
    async startConsumer(handle?: UserEventHandler) {
      consumer = await startUserReadModel(runtime, handle);
    },

    /** Publishes an auth user event (as auth's relay would) and answers its envelope. */
    async publishUserEvent(subject: 'auth.user.registered' | 'auth.user.updated', data: UserEventData) {
      const envelope = { id: uuidv7(), subject, occurredAt: new Date().toISOString(), data };
      await runtime.bus.js.publish(runtime.bus.subject(subject), JSON.stringify(envelope), { msgID: envelope.id });
      return envelope;
    },

    /** Registers a user with auth's event and waits until social's read-model has it. */
    async addUser(overrides: Partial<UserEventData> = {}): Promise<UserEventData & { token: string }> {
      const id = uuidv7();
      const data: UserEventData = {
        id,
        username: `user_${id.slice(-8)}`,
        displayName: `User ${id.slice(-4)}`,
        avatarUrl: null,
        badges: [],
        ...overrides,
      };
      const event = await this.publishUserEvent('auth.user.registered', data);
      await this.waitForUser(data.id, event.occurredAt);
      return { ...data, token: await issuer.sign(data.id) };
    },

    /** Waits until the read-model holds the user at (at least) the version of `occurredAt`. */
    async waitForUser(id: string, occurredAt: string) {
      await until(async () => {
        const { rows } = await runtime.pool.query('SELECT version FROM users WHERE id = $1', [id]);
        return rows[0] && new Date(rows[0].version) >= new Date(occurredAt);
      });
    },

    /** A JSON request as `user` (or anonymous). */
    async call(user: { token: string } | undefined, method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE', url: string, payload?: unknown) {
      const res = await app.inject({
        method,
        url,
        headers: user ? { authorization: `Bearer ${user.token}` } : {},
        ...(payload === undefined ? {} : { payload: payload as Record<string, unknown> }),
      });
      // biome-ignore lint/suspicious/noExplicitAny: tests read whatever the answer holds and assert on it
      return { status: res.statusCode, body: (res.body ? res.json() : undefined) as any };
    },

    /** The events written to the outbox, oldest first, optionally those of one subject. */
    async events(subject?: string): Promise<{ subject: string; data: Record<string, unknown> }[]> {
      const { rows } = await runtime.pool.query(
        `SELECT subject, payload->'data' AS data FROM outbox WHERE $1::text IS NULL OR subject = $1 ORDER BY seq`,
        [subject ?? null],
      );
      return rows;
    },

    signFor: (userId: string) => issuer.sign(userId),
  };
}

export type Harness = Awaited<ReturnType<typeof createHarness>>;

export { until as eventually };

/**
 * A stand-in for the gateway's rpc.gateway.presence.seen (it knows who is connected), answering as
 * the gateway does: `live` is each connected user's status (offline when absent); a question naming
 * a `viewerId` gets offline for every user but the viewer who is not among `known` (`${userId}:${viewerId}`:
 * friends or in a server together). `questions` holds what social asked, oldest first.
 */
export async function startPresenceStandIn(runtime: TestRuntime) {
  const live = new Map<string, SeenStatus>();
  const known = new Set<string>();
  const questions: { userIds: string[]; viewerId?: string | undefined }[] = [];
  const seenBy = (userId: string, viewerId: string | undefined): SeenStatus =>
    viewerId === undefined || userId === viewerId || known.has(`${userId}:${viewerId}`) ? (live.get(userId) ?? 'offline') : 'offline';
  serveRpc(runtime.bus, runtime.log, PresenceSeenRpc, async ({ userIds, viewerId }) => {
    questions.push({ userIds, viewerId });
    return { statuses: Object.fromEntries(userIds.map((id) => [id, seenBy(id, viewerId)])) };
  });
  await runtime.bus.nc.flush();
  return {
    live,
    questions,
    /** The two know each other (friends or in a server together): each sees the other's live status. */
    acquaint(a: string, b: string) {
      known.add(`${a}:${b}`).add(`${b}:${a}`);
    },
    /** The questions that named any of these users. */
    questionsAbout: (...userIds: string[]) => questions.filter((q) => q.userIds.some((id) => userIds.includes(id))),
  };
}
