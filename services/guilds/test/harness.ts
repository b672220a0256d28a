import { randomUUID } from 'node:crypto';
import { AUTH_SUBJECTS, STREAMS, type UserEventData } from '@chat/contracts';
import { ensureStream, loadConfig, mediaRooms } from '@chat/kit';
import { createTestIssuer, createTestRuntime, startAuthLookupStandIn, until } from '@chat/testkit';
import { v7 as uuidv7 } from 'uuid';
import { inject } from 'vitest';

import { buildApp } from '../src/app.ts';
import { startBus } from '../src/bus/index.ts';
import { GuildsConfig } from '../src/config.ts';

/**
 * The guilds service of one test file: its own database and bus namespace, the app, its RPC
 * answers and its consumer of auth's user events, and helpers to call it as a given user.
 */
export async function startGuilds() {
  const runtime = await createTestRuntime({
    service: 'guilds',
    migrationsDir: new URL('../migrations', import.meta.url).pathname,
    stream: STREAMS.guilds,
    backing: inject('backing'),
  });
  const issuer = await createTestIssuer();
  const config = loadConfig(GuildsConfig, runtime.env);
  const tokens = issuer.verifier();
  const app = await buildApp({ ...runtime, config, tokens });
  const rooms = mediaRooms(config);
  let consumers = await startBus({ ...runtime, rooms });
  const auth = await startAuthLookupStandIn(runtime);
  const tokenCache = new Map<string, string>();

  const call = callerOf(app);

  /** A second guilds process on the same database (another replica): what it keeps in memory is its own. */
  async function replica() {
    const other = await buildApp({ ...runtime, config, tokens });
    return { call: callerOf(other), close: () => other.close() };
  }

  function callerOf(target: typeof app) {
    return (userId: string | null, method: string, url: string, payload?: unknown, extraHeaders: Record<string, string> = {}) =>
      callAs(target, userId, method, url, payload, extraHeaders);
  }

  async function callAs(
    target: typeof app,
    userId: string | null,
    method: string,
    url: string,
    payload?: unknown,
    extraHeaders: Record<string, string> = {},
  ) {
    const headers: Record<string, string> = { ...extraHeaders };
    if (userId) {
      if (!tokenCache.has(userId)) tokenCache.set(userId, await issuer.sign(userId));
      headers.authorization = `Bearer ${tokenCache.get(userId)}`;
    }
    const res = await target.inject({
      method: method as 'GET',
      url,
      headers,
      ...(payload === undefined ? {} : { payload: payload as object }),
    });
    // biome-ignore lint/suspicious/noExplicitAny: tests read whatever the answer holds and assert on it
    const body = res.body ? (res.json() as any) : undefined;
    return { status: res.statusCode, body, headers: res.headers };
  }

  /** Publishes auth's event about a user to this namespace's AUTH stream, as auth would. */
  async function publishUser(user: UserEventData, subject: string = AUTH_SUBJECTS.userRegistered, occurredAt = new Date().toISOString()) {
    await ensureStream(runtime.bus, STREAMS.auth);
    const envelope = { id: uuidv7(), subject, occurredAt, data: user };
    await runtime.bus.js.publish(runtime.bus.subject(subject), JSON.stringify(envelope), { msgID: envelope.id });
  }

  /** A user id that the read-model knows (auth's registered event applied). */
  async function knownUser(name = 'user'): Promise<string> {
    const id = randomUUID();
    await publishUser({ id, username: `${name}_${id.slice(0, 6)}`, displayName: `${name} ${id.slice(0, 4)}`, avatarUrl: null, badges: [] });
    await until(async () => (await runtime.pool.query('SELECT 1 FROM users WHERE id = $1', [id])).rowCount === 1);
    return id;
  }

  /** A new channel of the server, created by its owner (201 asserted). */
  async function newChannel(
    owner: string,
    serverId: string,
    name: string,
    channelType: 'text' | 'voice' = 'text',
  ): Promise<{ id: string }> {
    const res = await call(owner, 'POST', `/v1/servers/${serverId}/channels`, { name, channelType });
    if (res.status !== 201) throw new Error(`creating channel ${name} answered ${res.status}`);
    return res.body;
  }

  /** A new user who joined the (public) server. */
  async function newMemberOf(serverId: string): Promise<string> {
    const id = newId();
    const res = await call(id, 'POST', `/v1/servers/${serverId}/join`);
    if (res.status !== 200) throw new Error(`joining answered ${res.status}`);
    return id;
  }

  /** Events of a subject that this request wrote into the outbox. */
  async function outbox(subject: string): Promise<{ data: Record<string, unknown> }[]> {
    const { rows } = await runtime.pool.query('SELECT payload FROM outbox WHERE subject = $1 ORDER BY seq', [subject]);
    return rows.map((r) => r.payload);
  }

  /** Pauses the users consumer (as when the bus is slow or the consumer is behind). */
  async function pauseConsumers() {
    await Promise.all(consumers.map((c) => c.stop()));
    consumers = [];
  }

  /** Starts the consumers again after pauseConsumers. */
  async function resumeConsumers() {
    consumers = await startBus({ ...runtime, rooms });
  }

  async function close() {
    await Promise.all(consumers.map((c) => c.stop()));
    await app.close();
    await runtime.close();
    await auth.close();
  }

  return {
    runtime,
    config,
    rooms,
    app,
    call,
    replica,
    publishUser,
    knownUser,
    newChannel,
    newMemberOf,
    outbox,
    pauseConsumers,
    resumeConsumers,
    auth,
    close,
    db: runtime.pool,
  };
}

export type Guilds = Awaited<ReturnType<typeof startGuilds>>;

export { until };

export const newId = () => randomUUID();
