import {
  GUILDS_SUBJECTS,
  MemberEventData,
  type Membership,
  MembersPageRpc,
  Server,
  ServerDeletedEventData,
  ServersPageRpc,
  STREAMS,
} from '@chat/contracts';
import {
  type Bus,
  type ConsumerHandle,
  consumeEvents,
  type DurableConsumerSpec,
  type EventEnvelope,
  type Pool,
  type Queryable,
  readOwnerPages,
  withTx,
} from '@chat/kit';
import type { Logger } from 'pino';
import type { z } from 'zod';
import type { AuthConfig } from '../config.ts';
import { refreshServerOwnerBadge } from '../domain/badges.ts';
import {
  backfillMembers,
  backfillServerOwners,
  recordMemberJoined,
  recordMemberLeft,
  recordServerDeleted,
  recordServerOwner,
} from '../domain/server-owners.ts';

/**
 * Auth's read-model of guilds' servers and members, for the server-owner badge: owners from
 * `guilds.server.*`, member counts from `guilds.member.*` (two durable consumers, since a consumer
 * takes one filter). After each change the owners concerned get their badge recomputed.
 */

export const SERVERS_CONSUMER: DurableConsumerSpec = { stream: STREAMS.guilds.name, durable: 'auth-servers', filter: 'guilds.server.*' };
export const MEMBERS_CONSUMER: DurableConsumerSpec = { stream: STREAMS.guilds.name, durable: 'auth-members', filter: 'guilds.member.*' };

type Deps = { bus: Bus; pool: Pool; log: Logger; config: AuthConfig };

/** The fields of a Server that the badge needs: a reader of its own, so fields added to Server later never break it. */
const ServerOwner = Server.pick({ id: true, ownerId: true });
type Handler = (event: EventEnvelope, tx: Queryable) => Promise<void>;

/** What the consumers read of each subject: only the fields the badge needs. */
const SERVER_READER = {
  [GUILDS_SUBJECTS.serverCreated]: ServerOwner,
  [GUILDS_SUBJECTS.serverUpdated]: ServerOwner,
  [GUILDS_SUBJECTS.serverDeleted]: ServerDeletedEventData,
};
const MEMBER_READER = { [GUILDS_SUBJECTS.memberJoined]: MemberEventData, [GUILDS_SUBJECTS.memberLeft]: MemberEventData };

/** Parses with `schema`; a payload that breaks its contract is logged and skipped, never retried forever. */
function parsed<S extends z.ZodType>(log: Logger, event: EventEnvelope, schema: S): z.output<S> | undefined {
  const result = schema.safeParse(event.data);
  if (result.success) return result.data;
  log.error({ eventId: event.id, subject: event.subject, issue: result.error.issues[0] }, 'guilds event breaks its contract; skipped');
  return undefined;
}

export function serverEventHandler(deps: Pick<Deps, 'log' | 'config'>): Handler {
  const refresh = async (tx: Queryable, userId: string | null) => {
    if (userId) await refreshServerOwnerBadge(tx, deps.config, userId);
  };
  return async (event, tx) => {
    if (event.subject === GUILDS_SUBJECTS.serverCreated || event.subject === GUILDS_SUBJECTS.serverUpdated) {
      const server = parsed(deps.log, event, ServerOwner);
      if (!server) return;
      const previous = await recordServerOwner(tx, server.id, server.ownerId);
      if (previous !== server.ownerId) await refresh(tx, previous);
      await refresh(tx, server.ownerId);
    } else if (event.subject === GUILDS_SUBJECTS.serverDeleted) {
      const deleted = parsed(deps.log, event, ServerDeletedEventData);
      if (deleted) await refresh(tx, await recordServerDeleted(tx, deleted.id));
    }
  };
}

export function memberEventHandler(deps: Pick<Deps, 'log' | 'config'>): Handler {
  return async (event, tx) => {
    const joined = event.subject === GUILDS_SUBJECTS.memberJoined;
    if (!joined && event.subject !== GUILDS_SUBJECTS.memberLeft) return;
    const member = parsed(deps.log, event, MemberEventData);
    if (!member) return;
    const owner = joined
      ? await recordMemberJoined(tx, member.serverId, member.userId)
      : await recordMemberLeft(tx, member.serverId, member.userId);
    if (owner) await refreshServerOwnerBadge(tx, deps.config, owner);
  };
}

/**
 * Every server's owner from guilds, a page at a time (rpc.guilds.servers.page): what the servers
 * consumer cannot replay once GUILDS has dropped its oldest events. An event published after the
 * backfill began but older than a page (the outbox's lag) still ends at the server's latest state.
 */
export function backfillServers(deps: Deps, signal?: AbortSignal): Promise<number> {
  return readOwnerPages(deps.bus, ServersPageRpc, {
    signal,
    rows: (page) => page.servers,
    keyOf: (server) => server.id,
    take: (servers) => withTx(deps.pool, (tx) => backfillServerOwners(tx, deps.config, servers)),
  });
}

/** Every membership from guilds (rpc.guilds.members.page), likewise: joins and leaves after it end at the latest set. */
export function backfillMemberships(deps: Deps, signal?: AbortSignal): Promise<number> {
  return readOwnerPages(deps.bus, MembersPageRpc, {
    signal,
    rows: (page) => page.members,
    keyOf: ({ serverId, userId }): Membership => ({ serverId, userId }),
    take: (members) => withTx(deps.pool, (tx) => backfillMembers(tx, deps.config, members)),
  });
}

/**
 * Follows guilds' stream from its start, or from a backfill when a new durable starts after the
 * stream dropped its oldest events; creating the stream here lets auth start before guilds.
 */
export async function startGuildsReadModel(deps: Deps): Promise<ConsumerHandle[]> {
  // Created here too when guilds has not yet; the consumers start once the bus is there.
  const common = { bus: deps.bus, pool: deps.pool, log: deps.log, stream: STREAMS.guilds };
  return [
    await consumeEvents({
      ...common,
      spec: SERVERS_CONSUMER,
      handle: serverEventHandler(deps),
      schemas: SERVER_READER,
      backfill: (signal) => backfillServers(deps, signal),
    }),
    await consumeEvents({
      ...common,
      spec: MEMBERS_CONSUMER,
      handle: memberEventHandler(deps),
      schemas: MEMBER_READER,
      backfill: (signal) => backfillMemberships(deps, signal),
    }),
  ];
}
