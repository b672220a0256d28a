import { AUTH_SUBJECTS, SessionRevokedData, STREAMS } from '@chat/contracts';
import { DeliverPolicy } from '@nats-io/jetstream';
import type { JWTVerifyGetKey } from 'jose';
import type { Logger } from 'pino';
import { type Bus, type BusTask, type EventEnvelope, ensureStream, PULL_EXPIRES_MS, whenConnected } from './bus.ts';
import { revocationRetentionMs, type TokenVerifier, tokenVerifierFor } from './tokens.ts';

/** A revoked session as the processes learn it from `auth.session.revoked`. */
export interface Revocation extends SessionRevokedData {
  /** When auth revoked it (epoch ms). */
  revokedAtMs: number;
  /** Until when a token of the session could still be presented: the revocation matters until then. */
  untilMs: number;
}

/** The sessions revoked recently enough that one of their access tokens may still be unexpired. */
export interface RevocationList {
  isRevoked(sessionId: string): boolean;
  /** Runs for each revocation as it arrives, replayed ones included (the gateway copies them into Redis). */
  onRevoked(listener: (revocation: Revocation) => void): void;
  stop(): Promise<void>;
}

/**
 * Keeps every session revoked within `retentionMs` (the longest access-token lifetime plus the
 * verifiers' clock tolerance) in this process's memory, fed by an ordered consumer of
 * `auth.session.revoked` that starts `retentionMs` in the past: a process that starts (or
 * restarts) knows the revocations whose tokens could still be presented, and learns new ones
 * within milliseconds of the outbox relay publishing them. Memory only: it keeps working while
 * Redis is down, and a request that reaches a service directly is refused as at the gateway.
 */
export async function watchRevocations(options: {
  bus: Bus;
  log: Logger;
  retentionMs: number;
  now?: () => number;
}): Promise<RevocationList> {
  const { bus, retentionMs } = options;
  const now = options.now ?? Date.now;
  const log = options.log.child({ consumer: 'session-revocations' });
  const revoked = new Map<string, number>();
  const listeners: ((revocation: Revocation) => void)[] = [];
  if (retentionMs > bus.retentionMs) {
    log.warn(
      { retentionMs, eventRetentionMs: bus.retentionMs },
      'access tokens outlive EVENT_RETENTION_DAYS: a restarted process cannot replay revocations older than that',
    );
  }

  const remember = (revocation: Revocation) => {
    if (revocation.untilMs <= now()) return;
    revoked.set(revocation.sessionId, revocation.untilMs);
    if (revoked.size % 1_024 === 0) forgetExpired();
    for (const listener of listeners) listener(revocation);
  };
  const forgetExpired = () => {
    const at = now();
    for (const [sessionId, until] of revoked) if (until <= at) revoked.delete(sessionId);
  };

  // Where the list has read to: a reader opened after a reconnect reads on from the next event.
  let lastSeq = 0;
  const read = async (): Promise<BusTask> => {
    await ensureStream(bus, STREAMS.auth);
    const from =
      lastSeq > 0
        ? { deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: lastSeq + 1 }
        : { deliver_policy: DeliverPolicy.StartTime, opt_start_time: new Date(now() - retentionMs).toISOString() };
    const consumer = await bus.js.consumers.get(bus.name(STREAMS.auth.name), {
      filter_subjects: bus.subject(AUTH_SUBJECTS.sessionRevoked),
      ...from,
    });
    const messages = await consumer.consume({ expires: PULL_EXPIRES_MS });
    const done = (async () => {
      for await (const msg of messages) {
        lastSeq = Math.max(lastSeq, msg.seq);
        const revocation = revocationOf(msg.data, retentionMs);
        if (revocation) remember(revocation);
        else log.error({ seq: msg.seq }, 'auth.session.revoked message is not a valid event; ignored');
      }
    })().catch((err) => log.error({ err }, 'session revocation consumer stopped'));
    return {
      async stop() {
        await messages.close();
        await done;
      },
    };
  };

  // Starts once the bus is there: a process starts and serves without it (until then it knows no
  // revocation; the gateway's Redis denylist still refuses at the edge).
  let task = await whenConnected(bus, log, 'session revocations', read);
  // The library's ordered consumer is meant to recover from a reconnect by itself, but on a loaded
  // machine one stayed silent for over 50 s after it (a revoked session's socket stayed open): after
  // every reconnect the list reads on with a consumer of its own, from the event after the last it read.
  let down = false;
  let reopening = Promise.resolve();
  const unsubscribe = bus.onConnection((up) => {
    if (!up) {
      down = true;
      return;
    }
    if (!down) return;
    down = false;
    // The old reader is not waited for: closing it may hang on what failed to recover.
    const old = task;
    void old.stop().catch((err) => log.warn({ err }, 'session revocation reader did not stop cleanly'));
    reopening = reopening.then(async () => {
      task = await whenConnected(bus, log, 'session revocations', read);
    });
  });

  return {
    isRevoked(sessionId) {
      const until = revoked.get(sessionId);
      if (until === undefined) return false;
      if (until > now()) return true;
      revoked.delete(sessionId);
      return false;
    },
    onRevoked: (listener) => void listeners.push(listener),
    async stop() {
      unsubscribe();
      await reopening;
      await task.stop();
    },
  };
}

function revocationOf(data: Uint8Array, retentionMs: number): Revocation | undefined {
  try {
    const event = JSON.parse(new TextDecoder().decode(data)) as EventEnvelope;
    const parsed = SessionRevokedData.safeParse(event?.data);
    const revokedAtMs = Date.parse(event?.occurredAt);
    return parsed.success && Number.isFinite(revokedAtMs) ? { ...parsed.data, revokedAtMs, untilMs: revokedAtMs + retentionMs } : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The token verifier of a process, with the session revocations it must honour: what every
 * process that verifies access tokens builds at boot. Stop `revocations` on shutdown (it is a
 * consumer).
 */
export async function startTokenVerifier(options: {
  config: Parameters<typeof tokenVerifierFor>[0] & { ACCESS_TOKEN_MAX_TTL_SECONDS: number };
  bus: Bus;
  log: Logger;
  /** Overrides the JWKS URL (auth verifies with its own key set). */
  keys?: JWTVerifyGetKey;
}): Promise<{ tokens: TokenVerifier; revocations: RevocationList }> {
  const { config } = options;
  const revocations = await watchRevocations({ bus: options.bus, log: options.log, retentionMs: revocationRetentionMs(config) });
  return { tokens: tokenVerifierFor(config, options.keys ?? config.AUTH_JWKS_URL, revocations), revocations };
}
