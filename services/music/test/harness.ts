import { randomUUID } from 'node:crypto';
import { MUSIC_SUBJECTS, PlayerUpdatedEvent, STREAMS, type VoiceAccessReply, VoiceAccessRpc } from '@chat/contracts';
import {
  connectBus,
  createPool,
  type EventEnvelope,
  loadConfig,
  notFound,
  type Runtime,
  runtimeChecks,
  serveRpc,
  startOutboxRelay,
} from '@chat/kit';
import { createTestIssuer, createTestRuntime, type TestRuntime, until } from '@chat/testkit';
import type { FastifyInstance } from 'fastify';
import { v7 as uuidv7 } from 'uuid';
import { inject } from 'vitest';
import { buildApp } from '../src/app.ts';
import { MusicConfig } from '../src/config.ts';

type Channel = VoiceAccessReply['channel'];
type UserAccess = Omit<VoiceAccessReply, 'channel'>;

/**
 * Stand-in for the guilds service, which is built concurrently: it answers
 * rpc.guilds.voice.access on the real NATS, in this test file's bus namespace, through the kit's
 * own serveRpc, so the status of its errors crosses the hop exactly as guilds' will. Tests set
 * up channels and what each user may do there, and so drive every case of the access rule.
 */
export class StandInGuilds {
  private readonly channels = new Map<string, { channel: Channel; users: Map<string, UserAccess> }>();
  /** Runs before each answer, while the asking request waits for it (a test looks at what it holds). */
  answering?: () => Promise<void>;

  serve(runtime: Runtime): void {
    serveRpc(runtime.bus, runtime.log, VoiceAccessRpc, async ({ channelId, userId }) => {
      await this.answering?.();
      const known = this.channels.get(channelId);
      if (!known) throw notFound('Channel');
      const access = known.users.get(userId) ?? { isMember: false, inChannel: false, canManageChannel: false, isDj: false };
      return { channel: known.channel, ...access } satisfies VoiceAccessReply;
    });
  }

  /** A channel of a server (a fresh voice channel of a fresh server unless told otherwise). */
  addChannel(overrides: Partial<Channel> = {}): Channel {
    const channel: Channel = { id: uuidv7(), serverId: uuidv7(), channelType: 'voice', ownerId: null, musicLocked: false, ...overrides };
    this.channels.set(channel.id, { channel, users: new Map() });
    return channel;
  }

  /** What a user is in a channel; a member sitting in it unless told otherwise. */
  setUser(channelId: string, userId: string, access: Partial<UserAccess> = {}): void {
    const known = this.channels.get(channelId);
    if (!known) throw new Error(`stand-in guilds: unknown channel ${channelId}`);
    known.users.set(userId, { isMember: true, inChannel: true, canManageChannel: false, isDj: false, ...access });
  }

  /** A voice channel with `userIds` sitting in it. */
  voiceChannelWith(userIds: string[], overrides: Partial<Channel> = {}): Channel {
    const channel = this.addChannel(overrides);
    for (const userId of userIds) this.setUser(channel.id, userId);
    return channel;
  }
}

/**
 * The player's clock in tests: the system's time until a test sets it, then only what the test
 * says (`set`, `advance`), so pauses, resumes and positions are exact and nothing sleeps.
 */
export class TestClock {
  private fixedMs: number | null = null;
  readonly now = (): Date => new Date(this.fixedMs ?? Date.now());

  /** Stops the clock at `at` (now by default). */
  set(at: Date = new Date()): Date {
    this.fixedMs = at.getTime();
    return at;
  }

  /** Moves a stopped clock forward. */
  advance(ms: number): void {
    if (this.fixedMs === null) throw new Error('set the clock before advancing it');
    this.fixedMs += ms;
  }

  /** Back to the system's time. */
  release(): void {
    this.fixedMs = null;
  }
}

export interface MusicInstance {
  app: FastifyInstance;
  close(): Promise<void>;
}

export interface MusicTest {
  runtime: TestRuntime;
  guilds: StandInGuilds;
  /** The clock of every instance of this test (the app and each startInstance). */
  clock: TestClock;
  /** The instance built on the test runtime (closed by close()). */
  app: FastifyInstance;
  /** Another instance on the same database and namespace, with its own pool, bus and relay: a restart. */
  startInstance(): Promise<MusicInstance>;
  auth(userId: string): Promise<{ authorization: string }>;
  /** Every music.player.updated event on the stream so far, oldest first. */
  playerEvents(): Promise<PlayerUpdatedEvent[]>;
  /** Publishes a guilds event as guilds' outbox relay does; answers its id. */
  publishGuildsEvent(subject: string, data: unknown): Promise<string>;
  /** Whether music's inbox has applied the event. */
  applied(eventId: string): Promise<boolean>;
  close(): Promise<void>;
}

/** One test file's music service: fresh database and namespace, stand-in guilds, a built app. */
export async function startMusicTest(): Promise<MusicTest> {
  const runtime = await createTestRuntime({
    service: 'music',
    migrationsDir: new URL('../migrations', import.meta.url).pathname,
    stream: STREAMS.music,
    backing: inject('backing'),
  });
  const issuer = await createTestIssuer();
  const config = loadConfig(MusicConfig, runtime.env);
  const tokens = issuer.verifier();
  const guilds = new StandInGuilds();
  guilds.serve(runtime);
  const clock = new TestClock();
  const app = await buildApp({ ...runtime, config, tokens, now: clock.now });

  async function startInstance(): Promise<MusicInstance> {
    const pool = createPool(runtime.databaseUrl, 5);
    const bus = await connectBus({ url: config.NATS_URL, namespace: runtime.namespace, name: 'music-test-instance', log: runtime.log });
    const relay = startOutboxRelay({ pool, bus, log: runtime.log, pollMs: 200 });
    const checks = runtimeChecks(pool, bus);
    const instance = await buildApp({ log: runtime.log, pool, bus, relay, checks, config, tokens, now: clock.now });
    return {
      app: instance,
      async close() {
        await instance.close();
        await relay.stop();
        await bus.close();
        await pool.end();
      },
    };
  }

  async function playerEvents(): Promise<PlayerUpdatedEvent[]> {
    await allEventsPublished();
    const stream = runtime.bus.name(STREAMS.music.name);
    const { state } = await runtime.bus.jsm.streams.info(stream);
    const events: PlayerUpdatedEvent[] = [];
    for (let seq = state.first_seq; seq <= state.last_seq && state.messages > 0; seq++) {
      const msg = await runtime.bus.jsm.streams.getMessage(stream, { seq });
      if (msg && runtime.bus.logical(msg.subject) === MUSIC_SUBJECTS.playerUpdated) {
        events.push(PlayerUpdatedEvent.parse(msg.json<EventEnvelope>().data));
      }
    }
    return events;
  }

  async function publishGuildsEvent(subject: string, data: unknown): Promise<string> {
    const envelope = { id: randomUUID(), subject, occurredAt: new Date().toISOString(), data };
    await runtime.bus.js.publish(runtime.bus.subject(subject), JSON.stringify(envelope), { msgID: envelope.id });
    return envelope.id;
  }

  const applied = async (eventId: string) =>
    (await runtime.pool.query('SELECT 1 FROM processed_events WHERE event_id = $1', [eventId])).rowCount === 1;

  /** Flushes this relay until no row is unsent (another instance's relay may hold some for a moment). */
  async function allEventsPublished(): Promise<void> {
    await until(
      async () => {
        await runtime.relay.flush();
        const { rows } = await runtime.pool.query('SELECT count(*)::int AS unsent FROM outbox WHERE sent_at IS NULL');
        return rows[0].unsent === 0;
      },
      { intervalMs: 20, what: 'the outbox has no unsent events' },
    );
  }

  return {
    runtime,
    guilds,
    clock,
    app,
    publishGuildsEvent,
    applied,
    startInstance,
    auth: async (userId) => ({ authorization: `Bearer ${await issuer.sign(userId)}` }),
    playerEvents,
    async close() {
      await app.close();
      await runtime.close();
    },
  };
}
