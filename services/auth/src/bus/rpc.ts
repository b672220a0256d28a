import { REALTIME_RPC, UserGetRequest } from '@chat/contracts';
import { type Bus, type Logger, type Pool, serveRpc } from '@chat/kit';
import type { AuthConfig } from '../config.ts';
import { toSelfUser } from '../db/users.ts';
import { badgePolicy } from '../domain/badges.ts';
import { getUser } from '../domain/profile.ts';

/** What the gateway's socket asks auth: the account of an identifying user (READY's `user`, with the chosen status). */
export function serveAuthRpc(bus: Bus, log: Logger, pool: Pool, config: AuthConfig): void {
  const policy = badgePolicy(config);
  serveRpc(bus, log, REALTIME_RPC.userGet, UserGetRequest, async ({ userId }) => toSelfUser(await getUser({ pool }, userId), policy));
}
