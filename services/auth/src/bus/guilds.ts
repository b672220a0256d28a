import { GUILDS_SUBJECTS, MemberEventData, Server, ServerDeletedEventData, STREAMS } from '@chat/contracts';
import {
  type Bus,
  type ConsumerHandle,
  consumeEvents,
  type DurableConsumerSpec,
  type EventEnvelope,
  type Pool,
  type Queryable,
} from '@chat/kit';
import type { Logger } from 'pino';
import type { z } from 'zod';
import type { AuthConfig } from '../config.ts';
import { addMember, deleteServer, removeMember, upsertServerOwner } from '../db/guilds.ts';
import { refreshServerOwnerBadge } from '../domain/badges.ts';

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
      const previous = await upsertServerOwner(tx, server.id, server.ownerId);
      if (previous !== server.ownerId) await refresh(tx, previous);
      await refresh(tx, server.ownerId);
    } else if (event.subject === GUILDS_SUBJECTS.serverDeleted) {
      const deleted = parsed(deps.log, event, ServerDeletedEventData);
      if (deleted) await refresh(tx, await deleteServer(tx, deleted.id));
    }
  };
}

export function memberEventHandler(deps: Pick<Deps, 'log' | 'config'>): Handler {
  return async (event, tx) => {
    const joined = event.subject === GUILDS_SUBJECTS.memberJoined;
    if (!joined && event.subject !== GUILDS_SUBJECTS.memberLeft) return;
    const member = parsed(deps.log, event, MemberEventData);
    if (!member) return;
    const owner = joined ? await addMember(tx, member.serverId, member.userId) : await removeMember(tx, member.serverId, member.userId);
    if (owner) await refreshServerOwnerBadge(tx, deps.config, owner);
  };
}

/** Follows guilds' stream from its start; creating the stream here lets auth start before guilds. */
export async function startGuildsReadModel(deps: Deps): Promise<ConsumerHandle[]> {
  // Created here too when guilds has not yet; the consumers start once the bus is there.
  const common = { bus: deps.bus, pool: deps.pool, log: deps.log, stream: STREAMS.guilds };
  return [
    await consumeEvents({ ...common, spec: SERVERS_CONSUMER, handle: serverEventHandler(deps) }),
    await consumeEvents({ ...common, spec: MEMBERS_CONSUMER, handle: memberEventHandler(deps) }),
  ];
}
