import { AUTH_SUBJECTS, REALTIME_SUBJECTS, SelfUser, UserGetRpc } from '@chat/contracts';
import { type AppError, requestRpc } from '@chat/kit';
import { decodeJwt } from 'jose';
import { afterAll, describe, expect, it } from 'vitest';
import { serveAuthRpc } from '../src/bus/rpc.ts';
import { bearer, newAccount, outboxEvents, startAuth } from './helpers.ts';

/** What auth tells the real-time socket: revoked sessions, the chosen presence, and the account at IDENTIFY. */

const { app, runtime, config } = await startAuth();
serveAuthRpc(runtime.bus, runtime.log, runtime.pool, config);
afterAll(async () => {
  await app.close();
  await runtime.close();
});

async function register() {
  const res = await app.inject({ method: 'POST', url: '/v1/auth/register', payload: newAccount() });
  return res.json() as { token: string; refreshToken: string; user: { id: string } };
}

const revokedOf = async (userId: string) =>
  (await outboxEvents(runtime, REALTIME_SUBJECTS.sessionRevoked)).filter((e) => (e as { userId: string }).userId === userId);

describe('auth.session.revoked', () => {
  it('is announced with the session id on logout, and not for someone else’s refresh token', async () => {
    const [alice, bob] = [await register(), await register()];
    const foreign = await app.inject({
      method: 'POST',
      url: '/v1/auth/logout',
      headers: bearer(alice.token),
      payload: { refreshToken: bob.refreshToken },
    });
    expect(foreign.statusCode).toBe(204);
    expect(await revokedOf(bob.user.id)).toEqual([]);
    // Nothing of bob's changed: his session stands (what the logout of his own token ends, below for alice).
    const sessionOf = async (token: string) =>
      (await runtime.pool.query('SELECT revoked_at FROM sessions WHERE id = $1', [decodeJwt(token).sid])).rows[0];
    expect(await sessionOf(bob.token)).toEqual({ revoked_at: null });
    const own = await app.inject({
      method: 'POST',
      url: '/v1/auth/logout',
      headers: bearer(alice.token),
      payload: { refreshToken: alice.refreshToken },
    });
    expect(own.statusCode).toBe(204);
    expect(await revokedOf(alice.user.id)).toEqual([{ sessionId: decodeJwt(alice.token).sid, userId: alice.user.id }]);
    expect(await sessionOf(alice.token)).toEqual({ revoked_at: expect.anything() });
  });

  it('is announced when a rotated-out refresh token comes back', async () => {
    const pair = await register();
    const refresh = (token: string) => app.inject({ method: 'POST', url: '/v1/auth/refresh', payload: { refreshToken: token } });
    expect((await refresh(pair.refreshToken)).statusCode).toBe(200);
    expect((await refresh(pair.refreshToken)).statusCode).toBe(401);
    expect(await revokedOf(pair.user.id)).toEqual([{ sessionId: decodeJwt(pair.token).sid, userId: pair.user.id }]);
  });
});

describe('PATCH /v1/users/@me/presence', () => {
  it('stores the chosen status and custom status, answers the account and announces the change once', async () => {
    const pair = await register();
    const res = await app.inject({
      method: 'PATCH',
      url: '/v1/users/@me/presence',
      headers: bearer(pair.token),
      payload: { status: 'idle', customStatus: 'lunch' },
    });
    expect(res.statusCode).toBe(200);
    expect(SelfUser.parse(res.json())).toMatchObject({ id: pair.user.id, status: 'idle', customStatus: 'lunch' });
    const again = await app.inject({
      method: 'PATCH',
      url: '/v1/users/@me/presence',
      headers: bearer(pair.token),
      payload: { status: 'idle' },
    });
    expect(again.statusCode).toBe(200);
    const events = (await outboxEvents(runtime, REALTIME_SUBJECTS.presenceUpdated)).filter(
      (e) => (e as { userId: string }).userId === pair.user.id,
    );
    expect(events).toEqual([{ userId: pair.user.id, status: 'idle', customStatus: 'lunch' }]);
  });

  it('answers 400 for an unknown status and changes nothing', async () => {
    const pair = await register();
    const res = await app.inject({
      method: 'PATCH',
      url: '/v1/users/@me/presence',
      headers: bearer(pair.token),
      payload: { status: 'offline' },
    });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({ error: expect.stringContaining('status') });
    const me = await app.inject({ method: 'GET', url: '/v1/users/@me', headers: bearer(pair.token) });
    expect(me.json().status).toBe('online');
  });
});

describe('auth.account.updated', () => {
  const accountUpdatesOf = async (userId: string) =>
    (await outboxEvents(runtime, AUTH_SUBJECTS.accountUpdated)).filter((e) => (e as { userId: string }).userId === userId);
  const patch = (token: string, url: string, payload: object) => app.inject({ method: 'PATCH', url, headers: bearer(token), payload });

  it('is announced once for each change of the account as its owner sees it, a bio alone included, and not for a change to nothing', async () => {
    const pair = await register();
    expect((await patch(pair.token, '/v1/users/@me', { bio: 'new bio' })).statusCode).toBe(200);
    expect((await patch(pair.token, '/v1/users/@me/presence', { status: 'invisible' })).statusCode).toBe(200);
    expect((await patch(pair.token, '/v1/users/@me', { displayName: 'Renamed' })).statusCode).toBe(200);
    expect((await patch(pair.token, '/v1/users/@me', { bio: 'new bio', displayName: 'Renamed' })).statusCode).toBe(200);
    expect(await accountUpdatesOf(pair.user.id)).toEqual([{ userId: pair.user.id }, { userId: pair.user.id }, { userId: pair.user.id }]);
    // A bio is the owner's to see here: nothing for the read-models of other services.
    expect((await outboxEvents(runtime, AUTH_SUBJECTS.userUpdated)).filter((e) => (e as { id: string }).id === pair.user.id)).toHaveLength(
      1,
    );
  });
});

describe('rpc.auth.user.get', () => {
  it('answers the account as its owner sees it, 404 for an unknown user', async () => {
    const pair = await register();
    const user = await requestRpc(runtime.bus, UserGetRpc, { userId: pair.user.id });
    expect(SelfUser.parse(user)).toMatchObject({ id: pair.user.id, status: 'online' });
    const unknown = await requestRpc(runtime.bus, UserGetRpc, { userId: crypto.randomUUID() }).catch((e: AppError) => e.status);
    expect(unknown).toBe(404);
  });
});
