import { type UserEventData, UserLookupRpc, UsersPageRpc } from '@chat/contracts';
import { connectBus, notFound, serveRpc } from '@chat/kit';
import { v7 as uuidv7 } from 'uuid';
import type { TestRuntime } from './runtime.ts';

export interface AuthLookupStandIn {
  /** A user auth knows and no event has announced yet: the read-models have not heard of them. */
  register(displayName?: string): Promise<{ id: string; username: string }>;
  close(): Promise<void>;
}

/**
 * Auth's `rpc.auth.user.lookup` and `rpc.auth.users.page` contracts served on a test's bus
 * namespace over the real NATS server, from an in-memory table: services whose read-model misses a
 * user, or starts after the AUTH stream dropped its oldest events, are tested without running auth
 * (whose own tests cover the real answers, `services/auth/test/lookup.test.ts`).
 */
export async function startAuthLookupStandIn(runtime: Pick<TestRuntime, 'env' | 'namespace' | 'log'>): Promise<AuthLookupStandIn> {
  const users = new Map<string, UserEventData>();
  const bus = await connectBus({ url: runtime.env.NATS_URL!, namespace: runtime.namespace, name: 'auth-stand-in', log: runtime.log });
  serveRpc(bus, runtime.log, UserLookupRpc, async (ref) => {
    const user = 'id' in ref ? users.get(ref.id) : [...users.values()].find((u) => u.username.toLowerCase() === ref.username.toLowerCase());
    if (!user) throw notFound('User');
    return { user, version: new Date().toISOString() };
  });
  serveRpc(bus, runtime.log, UsersPageRpc, async ({ after, limit }) => {
    const ids = [...users.keys()].sort().filter((id) => after === undefined || id > after);
    return { users: ids.slice(0, limit).map((id) => users.get(id) as UserEventData), version: new Date().toISOString() };
  });
  await bus.nc.flush();
  return {
    async register(displayName = 'Fresh') {
      const id = uuidv7();
      const user = { id, username: `Fresh_${id.slice(-8)}`, displayName, avatarUrl: null, badges: [] };
      users.set(id, user);
      return { id, username: user.username };
    },
    async close() {
      if (!bus.nc.isClosed()) await bus.nc.drain();
    },
  };
}
