import type { GUILDS_EVENTS } from '@chat/contracts';
import { type Bus, enqueueEvent, type IssueMediaGrant, type Pool, type Queryable, type RequestContext } from '@chat/kit';
import type { z } from 'zod';
import type { ChannelLists } from './channel-list.ts';
import type { AccessSnapshots } from './post-access.ts';

/** What domain functions receive: the pool, and who asks under which request id. */
export interface Domain {
  pool: Pool;
  /** For asking other services (media's file records behind message attachments). */
  bus: Bus;
  /** How long a voice state lives without a heartbeat (VOICE_STATE_TTL_SECONDS); only joins and heartbeats need it. */
  voiceStateTtlSeconds?: number;
  /** Signs media (LiveKit) grants for voice rooms; only voice joins and grants need it. */
  issueMediaGrant?: IssueMediaGrant;
  /** Members' access per channel for posting, kept between requests; only message posts need it. */
  accessSnapshots?: AccessSnapshots;
  /** Each server's channel list kept between reads (reads only; without it, reads load the rows). */
  channelLists?: ChannelLists;
}

export type Ctx = Pick<RequestContext, 'userId' | 'requestId'>;

type Subject = keyof typeof GUILDS_EVENTS;

/** Writes a guilds event into the outbox of the caller's transaction; the payload type follows the subject. */
export function emit<S extends Subject>(tx: Queryable, ctx: Ctx, subject: S, data: z.input<(typeof GUILDS_EVENTS)[S]>): Promise<string> {
  return enqueueEvent(tx, subject, data, ctx.requestId);
}
