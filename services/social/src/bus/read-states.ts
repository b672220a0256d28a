import {
  CALL_SUBJECTS,
  CallEvent,
  DmDeletedEvent,
  DmMessageEvent,
  FriendAcceptedEvent,
  FriendRequestedEvent,
  GUILDS_SUBJECTS,
  JoinRequest,
  MESSAGES_SUBJECTS,
  MemberLeftEventData,
  MessageDeletedEventData,
  MessageEventData,
  MessageMentionedEvent,
  READ_STATE_SUBJECTS,
  Role,
  RoleDeletedEventData,
  RolesPageRpc,
  ServerDeletedEventData,
  SOCIAL_SUBJECTS,
  STREAMS,
} from '@chat/contracts';
import {
  type Bus,
  type ConsumerHandle,
  consumeEvents,
  type EventEnvelope,
  type Logger,
  type Pool,
  type Queryable,
  readOwnerPages,
  type StreamSpec,
  withTx,
} from '@chat/kit';
import {
  callEnded,
  channelMessageDeleted,
  channelMessageEdited,
  directMessageDeleted,
  directMessageEdited,
  directMessageReplied,
  friendAccepted,
  friendRequested,
  joinRequestReviewed,
  messageMentioned,
  roleDeleted,
  roleNamed,
  roleNamesBackfilled,
  serverDeleted,
  serverLeft,
} from '../domain/notifications.ts';
import { channelMessagesPosted, directMessagesSent } from '../domain/read-states.ts';

/**
 * Read states and the notification feed, built from events: guilds' channel messages (posts,
 * edits, deletes) and their resolved mentions, its members leaving, servers deleted and
 * join-request decisions, and social's own friend, message and call events.
 * One durable consumer per subject filter (one filter each), every event applied once in a
 * transaction and acked after its commit (the kit's inbox).
 */

type Handlers = Record<string, (tx: Queryable, event: EventEnvelope) => Promise<void>>;
/** What the kit's consumer runs for each event, in the transaction that records it as applied. */
export type ApplyEvent = (event: EventEnvelope, tx: Queryable) => Promise<void>;
/** Work that the events of one subject share (moving read marks and heads): one statement for a whole batch. */
type Shared = { subject: string; apply: (tx: Queryable, events: EventEnvelope[]) => Promise<void> };

export const READ_STATE_CONSUMERS = {
  // The two that see an event for every message posted: applied in batches, one commit for many.
  channelMessages: { stream: STREAMS.guilds, durable: 'social-channel-messages', filter: 'guilds.message.*', batch: 100 },
  joinRequests: { stream: STREAMS.guilds, durable: 'social-join-requests', filter: GUILDS_SUBJECTS.joinRequestReviewed },
  // Who left a server (kicked, banned) loses its channels' feed entries; overrides and roles have no per-user event (the feed asks guilds when read).
  serverMembers: { stream: STREAMS.guilds, durable: 'social-server-members', filter: GUILDS_SUBJECTS.memberLeft },
  // A deleted server's notification settings go with it (nothing else would ever clean them up).
  servers: { stream: STREAMS.guilds, durable: 'social-servers', filter: GUILDS_SUBJECTS.serverDeleted },
  // Role names, for the excerpt of an edited message that mentions a role.
  roles: { stream: STREAMS.guilds, durable: 'social-role-names', filter: 'guilds.role.*' },
  friends: { stream: STREAMS.social, durable: 'social-friend-notifications', filter: 'social.friend.*' },
  directMessages: { stream: STREAMS.social, durable: 'social-dm-notifications', filter: 'social.dm.*', batch: 100 },
  calls: { stream: STREAMS.social, durable: 'social-call-notifications', filter: CALL_SUBJECTS.ended },
} as const;

export type ConsumerName = keyof typeof READ_STATE_CONSUMERS;
type ReadStateConsumer = { stream: StreamSpec; durable: string; filter: string; batch?: number };

const SHARED: Partial<Record<ConsumerName, Shared>> = {
  channelMessages: {
    subject: MESSAGES_SUBJECTS.messageCreated,
    apply: (tx, events) =>
      channelMessagesPosted(
        tx,
        events.map((e) => MessageEventData.parse(e.data)),
      ),
  },
  directMessages: {
    subject: SOCIAL_SUBJECTS.dmCreated,
    apply: (tx, events) =>
      directMessagesSent(
        tx,
        events.map((e) => DmMessageEvent.parse(e.data).message),
      ),
  },
};

const HANDLERS: Record<ConsumerName, Handlers> = {
  channelMessages: {
    [MESSAGES_SUBJECTS.messageUpdated]: (tx, e) => channelMessageEdited(tx, MessageEventData.parse(e.data)),
    [MESSAGES_SUBJECTS.messageDeleted]: (tx, e) => channelMessageDeleted(tx, MessageDeletedEventData.parse(e.data)),
    [READ_STATE_SUBJECTS.messageMentioned]: (tx, e) => messageMentioned(tx, MessageMentionedEvent.parse(e.data)),
  },
  serverMembers: {
    [GUILDS_SUBJECTS.memberLeft]: (tx, e) => serverLeft(tx, MemberLeftEventData.parse(e.data), e.occurredAt),
  },
  servers: {
    [GUILDS_SUBJECTS.serverDeleted]: (tx, e) => serverDeleted(tx, ServerDeletedEventData.parse(e.data)),
  },
  roles: {
    [GUILDS_SUBJECTS.roleCreated]: (tx, e) => roleNamed(tx, Role.parse(e.data), e.occurredAt),
    [GUILDS_SUBJECTS.roleUpdated]: (tx, e) => roleNamed(tx, Role.parse(e.data), e.occurredAt),
    [GUILDS_SUBJECTS.roleShifted]: (tx, e) => roleNamed(tx, Role.parse(e.data), e.occurredAt),
    [GUILDS_SUBJECTS.roleDeleted]: (tx, e) => roleDeleted(tx, RoleDeletedEventData.parse(e.data)),
  },
  joinRequests: {
    [GUILDS_SUBJECTS.joinRequestReviewed]: (tx, e) => joinRequestReviewed(tx, JoinRequest.parse(e.data), e.occurredAt),
  },
  friends: {
    [SOCIAL_SUBJECTS.friendRequested]: (tx, e) => friendRequested(tx, FriendRequestedEvent.parse(e.data)),
    [SOCIAL_SUBJECTS.friendAccepted]: (tx, e) => friendAccepted(tx, FriendAcceptedEvent.parse(e.data), e.occurredAt),
  },
  directMessages: {
    [SOCIAL_SUBJECTS.dmCreated]: (tx, e) => directMessageReplied(tx, DmMessageEvent.parse(e.data)),
    [SOCIAL_SUBJECTS.dmUpdated]: (tx, e) => directMessageEdited(tx, DmMessageEvent.parse(e.data)),
    [SOCIAL_SUBJECTS.dmDeleted]: (tx, e) => directMessageDeleted(tx, DmDeletedEvent.parse(e.data)),
  },
  calls: {
    [CALL_SUBJECTS.ended]: (tx, e) => callEnded(tx, CallEvent.parse(e.data)),
  },
};

type Deps = { bus: Bus; pool: Pool; log: Logger };

/**
 * What a consumer's events would have built, asked of their owner, for a durable that starts after
 * the stream dropped events it never read (the kit's backfill). Role names: every role's, from guilds.
 */
const BACKFILLS: Partial<Record<ConsumerName, (deps: Deps, signal: AbortSignal) => Promise<number>>> = {
  roles: (deps, signal) =>
    readOwnerPages(deps.bus, RolesPageRpc, {
      signal,
      rows: (page) => page.roles,
      keyOf: (role) => role.id,
      take: (roles) => withTx(deps.pool, (tx) => roleNamesBackfilled(tx, roles)),
    }),
};

/** The shared work of a batch: for the events of its subject, once. */
async function applyShared(name: ConsumerName, tx: Queryable, events: EventEnvelope[]): Promise<void> {
  const shared = SHARED[name];
  const concerned = shared ? events.filter((e) => e.subject === shared.subject) : [];
  if (shared && concerned.length > 0) await shared.apply(tx, concerned);
}

/** What one consumer does with each event of its filter besides the shared work; subjects it has no handler for change nothing. */
function eachOf(name: ConsumerName): ApplyEvent {
  const handlers = HANDLERS[name];
  return async (event, tx) => {
    await handlers[event.subject]?.(tx, event);
  };
}

type ApplyEvents = (events: EventEnvelope[], tx: Queryable) => Promise<void>;

/** Events of one consumer in order: the shared work once, then `each` for every event. */
function applyInOrder(name: ConsumerName, each: ApplyEvent): ApplyEvents {
  return async (events, tx) => {
    await applyShared(name, tx, events);
    for (const event of events) await each(event, tx);
  };
}

/** What one consumer does with one event of its filter, shared work included. */
export function applierOf(name: ConsumerName): ApplyEvent {
  const apply = applyInOrder(name, eachOf(name));
  return (event, tx) => apply([event], tx);
}

/** Starts one consumer (`wrap` lets tests watch each run of its handler). */
export function consumeForReadStates(
  deps: Deps,
  name: ConsumerName,
  wrap: (apply: ApplyEvent) => ApplyEvent = (apply) => apply,
): Promise<ConsumerHandle> {
  const { stream, durable, filter, batch }: ReadStateConsumer = READ_STATE_CONSUMERS[name];
  const apply = applyInOrder(name, wrap(eachOf(name)));
  return consumeEvents({
    ...deps,
    // The publisher creates its stream too; whoever starts first creates it.
    stream,
    spec: { stream: stream.name, durable, filter },
    handle: (event, tx) => apply([event], tx),
    // Other subjects of the filter (reactions, pins) change nothing here: acked without a transaction.
    relevant: (event) => event.subject in HANDLERS[name] || event.subject === SHARED[name]?.subject,
    ...(batch && { batch, handleBatch: apply }),
    ...(BACKFILLS[name] && { backfill: (signal: AbortSignal) => BACKFILLS[name]!(deps, signal) }),
  });
}

/** Every read-state and notification consumer of social. */
export function startReadStateConsumers(deps: Deps): Promise<ConsumerHandle[]> {
  return Promise.all((Object.keys(READ_STATE_CONSUMERS) as ConsumerName[]).map((name) => consumeForReadStates(deps, name)));
}
