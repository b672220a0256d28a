import { randomUUID } from 'node:crypto';
import { STREAMS } from '@chat/contracts';
import { type Bus, type Logger, loadConfig } from '@chat/kit';
import { createTestRuntime } from '@chat/testkit';
import { inject } from 'vitest';
import { serveAuthRpc } from '../src/bus/rpc.ts';
import { AuthConfig } from '../src/config.ts';
import { insertUser } from '../src/db/users.ts';

/**
 * Auth's real answer to `rpc.auth.user.lookup`, over an auth database of its own, served on the
 * bus of another service's test: what guilds and social ask when their read-model misses a user.
 */
export async function serveAuthLookup(bus: Bus, log: Logger) {
  const auth = await createTestRuntime({
    service: 'auth',
    migrationsDir: new URL('../migrations', import.meta.url).pathname,
    stream: STREAMS.auth,
    backing: inject('backing'),
  });
  serveAuthRpc(bus, log, auth.pool, loadConfig(AuthConfig, auth.env));
  return {
    /** Registers a user in auth only (no event is published): the read-models have not heard of them. */
    async register(displayName = 'Fresh'): Promise<{ id: string; username: string }> {
      const id = randomUUID();
      const username = `Fresh_${id.slice(0, 8)}`;
      await insertUser(auth.pool, {
        id,
        username,
        email: `${id}@example.test`,
        passwordHash: 'x',
        displayName,
        isFounder: false,
        emailVerified: true,
      });
      return { id, username };
    },
    close: () => auth.close(),
  };
}
