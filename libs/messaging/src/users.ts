import { AUTH_SUBJECTS, STREAMS, UserEventData, UsersPageRpc } from '@chat/contracts';
import {
  type Bus,
  type ConsumerHandle,
  consumeEvents,
  type DurableConsumerSpec,
  type EventEnvelope,
  type Logger,
  type Pool,
  type Queryable,
  readOwnerPages,
  withTx,
} from '@chat/kit';

/**
 * The users read-model behind message authors (name, avatar, badges): each service that shows
 * messages keeps its own `users` table (see README.md for its columns), fed by auth's events, and
 * joins it per message instead of asking auth per row.
 */

/** The durable consumer of auth's user events for the service whose durable name is `durable`. */
export function usersConsumerSpec(durable: string): DurableConsumerSpec {
  return { stream: STREAMS.auth.name, durable, filter: 'auth.user.*' };
}

const APPLIED: ReadonlySet<string> = new Set([AUTH_SUBJECTS.userRegistered, AUTH_SUBJECTS.userUpdated]);

export type UserEventHandler = (event: EventEnvelope, tx: Queryable) => Promise<void>;

/** Builds the handler; a payload that breaks the contract is logged and skipped, never retried forever. */
export function userEventHandler(log: Logger): UserEventHandler {
  return async (event, tx) => {
    if (!APPLIED.has(event.subject)) return;
    const parsed = UserEventData.safeParse(event.data);
    if (!parsed.success) {
      log.error({ eventId: event.id, subject: event.subject, issue: parsed.error.issues[0] }, 'user event breaks its contract; skipped');
      return;
    }
    await upsertUser(tx, parsed.data, event.occurredAt);
  };
}

/** Applies auth's view of a user unless a newer one (by the event's occurredAt) is already here. */
export async function upsertUser(tx: Queryable, user: UserEventData, version: string): Promise<void> {
  await tx.query(
    `INSERT INTO users (id, username, display_name, avatar_url, badges, version) VALUES ($1, $2, $3, $4, $5, $6)
     ON CONFLICT (id) DO UPDATE SET username = EXCLUDED.username, display_name = EXCLUDED.display_name,
       avatar_url = EXCLUDED.avatar_url, badges = EXCLUDED.badges, version = EXCLUDED.version
     WHERE users.version <= EXCLUDED.version`,
    [user.id, user.username, user.displayName, user.avatarUrl, user.badges, version],
  );
}

/**
 * Every user auth knows, a page at a time (rpc.auth.users.page), each at the version auth read it:
 * what a read-model that starts after the AUTH stream dropped its oldest events cannot replay.
 * Answers how many users there were.
 */
export function backfillUsers(deps: { bus: Bus; pool: Pool }, signal?: AbortSignal): Promise<number> {
  return readOwnerPages(deps.bus, UsersPageRpc, {
    signal,
    rows: (page) => page.users.map((user) => ({ user, version: page.version })),
    keyOf: ({ user }) => user.id,
    take: (rows) =>
      withTx(deps.pool, async (tx) => {
        for (const { user, version } of rows) await upsertUser(tx, user, version);
      }),
  });
}

/**
 * Follows auth's stream from its start, so a fresh database catches up on every user; once the
 * stream has dropped its oldest events, a new durable first backfills every user from auth, then
 * follows the stream from its last event before the backfill (versioned: an event older than a page
 * changes nothing). Creating the stream here is idempotent and lets the service start before auth.
 */
export async function startUserReadModel(
  deps: { bus: Bus; pool: Pool; log: Logger },
  spec: DurableConsumerSpec,
  handle: UserEventHandler = userEventHandler(deps.log),
): Promise<ConsumerHandle> {
  return consumeEvents({
    bus: deps.bus,
    pool: deps.pool,
    log: deps.log,
    spec,
    stream: STREAMS.auth,
    handle,
    backfill: (signal) => backfillUsers(deps, signal),
  });
}
