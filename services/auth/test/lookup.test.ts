import { randomUUID } from 'node:crypto';
import { STREAMS, UserLookupRpc, UsersPageRpc } from '@chat/contracts';
import { type AppError, requestRpc, walkPages } from '@chat/kit';
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

describe('rpc.auth.users.page', () => {
  it('walks every user once, in id order, a page at a time, each page with the time it was read', async () => {
    const registered = [];
    for (let i = 0; i < 5; i++) registered.push(await auth.register(`Paged ${i}`));
    const pages: string[][] = [];
    const before = Date.now();
    const total = await walkPages({
      limit: 2,
      read: async (after: string | undefined, limit: number) => {
        const page = await requestRpc(bus.bus, UsersPageRpc, { after, limit });
        expect(Date.parse(page.version)).toBeGreaterThanOrEqual(before);
        return page.users;
      },
      keyOf: (user) => user.id,
      take: async (users) => void pages.push(users.map((u) => u.id)),
    });
    const walked = pages.flat();
    expect(pages.every((page) => page.length <= 2)).toBe(true);
    expect(walked).toEqual([...walked].sort());
    expect(new Set(walked).size).toBe(total);
    expect(walked).toEqual(expect.arrayContaining(registered.map((u) => u.id)));
    const first = registered[0]!;
    const page = await requestRpc(bus.bus, UsersPageRpc, { after: [...walked].reverse()[1], limit: 10 });
    expect(page.users.map((u) => u.id)).toEqual([walked.at(-1)]);
    const one = (await requestRpc(bus.bus, UsersPageRpc, { limit: 1000 })).users.find((u) => u.id === first.id);
    expect(one).toEqual({ id: first.id, username: first.username, displayName: 'Paged 0', avatarUrl: null, badges: ['verified_email'] });
  });

  it('answers 400 for a limit outside 1..1000 or a cursor that is not an id', async () => {
    for (const request of [{ limit: 0 }, { limit: 1001 }, { after: 'nope', limit: 10 }]) {
      const err = await requestRpc(bus.bus, UsersPageRpc, request as never).catch((e: AppError) => e);
      expect((err as AppError).status).toBe(400);
    }
  });
});
