import { type Periodic, repeatEvery } from '@chat/kit';
import { type PurgeCounts, purgeExpired } from '../db/purge.ts';
import type { AuthDomainDeps } from '../deps.ts';
import { LOGIN_FAILURE_WINDOW_MS } from './login-limit.ts';

/** One purge of expired registrations, tokens, sessions, codes and counters (see purgeExpired). */
export async function purgeOnce(deps: Pick<AuthDomainDeps, 'pool' | 'config' | 'log'>): Promise<PurgeCounts> {
  const counts = await purgeExpired(deps.pool, deps.config.REFRESH_TOKEN_TTL_DAYS, LOGIN_FAILURE_WINDOW_MS);
  if (Object.values(counts).some((n) => n > 0)) deps.log.info({ purged: counts }, 'purged expired auth records');
  return counts;
}

/**
 * Purges every PURGE_INTERVAL_SECONDS. Every replica may run one: the deletes are idempotent, and
 * a failure waits for the next tick.
 */
export function startPurger(deps: Pick<AuthDomainDeps, 'pool' | 'config' | 'log'>): Periodic {
  return repeatEvery(deps.config.PURGE_INTERVAL_SECONDS * 1_000, () => purgeOnce(deps), deps.log, 'purge');
}
