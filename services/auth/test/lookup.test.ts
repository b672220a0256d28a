import { randomUUID } from 'node:crypto';
import { STREAMS, UserLookupRpc } from '@chat/contracts';
import { type AppError, requestRpc } from '@chat/kit';
import { createTestRuntime } from '@chat/testkit';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { serveAuthLookup } from './lookup-server.ts';

const bus = await createTestRuntime({
  service: 'auth-lookup-client',
  migrationsDir: new URL('../migrations', import.meta.url).pathname,
  stream: STREAMS.auth,
  backing: inject('backing'),
});
const auth = await serveAuthLookup(bus.bus, bus.log);
afterAll(async () => {
  await auth.close();
  await bus.close();
});

describe('rpc.auth.user.lookup', () => {
  it('answers a user by id and by username, with the time it was read', async () => {
    const fresh = await auth.register('Just registered');
    const byId = await requestRpc(bus.bus, UserLookupRpc, { id: fresh.id });
    expect(byId.user).toMatchObject({ id: fresh.id, username: fresh.username, displayName: 'Just registered', avatarUrl: null });
    expect(Date.parse(byId.version)).toBeLessThanOrEqual(Date.now());
    const byName = await requestRpc(bus.bus, UserLookupRpc, { username: fresh.username });
    expect(byName.user.id).toBe(fresh.id);
  });

  it('answers 404 for a user auth does not know', async () => {
    const err = await requestRpc(bus.bus, UserLookupRpc, { id: randomUUID() }).catch((e: AppError) => e);
    expect((err as AppError).status).toBe(404);
  });
});
