import { AUTH_SUBJECTS, TokenPair } from '@chat/contracts';
import type { FastifyInstance } from 'fastify';
import { decodeJwt } from 'jose';
import { afterAll, describe, expect, it } from 'vitest';
import { bearer, newAccount, outboxEvents, startAuth, startMailbox } from './helpers.ts';

const mailbox = await startMailbox();
const { app, runtime } = await startAuth({ env: { SMTP_URL: mailbox.url } });
afterAll(async () => {
  await app.close();
  await runtime.close();
  await mailbox.close();
});

const post = (url: string, payload: object, headers = {}) => app.inject({ method: 'POST', url, payload, headers });
const sessionOf = (token: string) => decodeJwt(token).sid as string;

async function register() {
  const account = newAccount('revoke');
  const res = await post('/v1/auth/register', account);
  expect(res.statusCode).toBe(201);
  return { account, pair: TokenPair.parse(res.json()) };
}

async function login(login: string, password: string) {
  const res = await post('/v1/auth/login', { login, password });
  expect(res.statusCode).toBe(200);
  return TokenPair.parse(res.json());
}

/** Asks auth itself (a request that never passed the gateway) until it refuses, for at most `withinMs`. */
async function refusedWithin(service: FastifyInstance, token: string, withinMs = 1_000) {
  const since = Date.now();
  for (;;) {
    const res = await service.inject({ method: 'GET', url: '/v1/users/@me', headers: bearer(token) });
    if (res.statusCode !== 200 || Date.now() - since > withinMs) return { res, afterMs: Date.now() - since };
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe('auth.session.revoked', () => {
  it('is published on logout, and the access token of that session is refused within a second, by a service asked directly', async () => {
    const { account, pair } = await register();
    const other = await login(account.username, account.password);
    expect((await app.inject({ method: 'GET', url: '/v1/users/@me', headers: bearer(pair.token) })).statusCode).toBe(200);
    const logout = await post('/v1/auth/logout', { refreshToken: pair.refreshToken }, bearer(pair.token));
    expect(logout.statusCode).toBe(204);
    const { res, afterMs } = await refusedWithin(app, pair.token);
    expect(res.statusCode).toBe(401);
    expect(res.json()).toEqual({ error: 'Session revoked' });
    expect(afterMs).toBeLessThanOrEqual(1_000);
    const events = await outboxEvents(runtime, AUTH_SUBJECTS.sessionRevoked);
    expect(events).toContainEqual({ sessionId: sessionOf(pair.token), userId: pair.user.id });
    // The user's other session goes on.
    expect((await app.inject({ method: 'GET', url: '/v1/users/@me', headers: bearer(other.token) })).statusCode).toBe(200);
  });

  it('is published when a rotated-out refresh token is presented again', async () => {
    const { pair } = await register();
    const rotated = await post('/v1/auth/refresh', { refreshToken: pair.refreshToken });
    expect(rotated.statusCode).toBe(200);
    const successor = TokenPair.omit({ user: true }).parse(rotated.json());
    expect((await post('/v1/auth/refresh', { refreshToken: pair.refreshToken })).statusCode).toBe(401);
    const { res } = await refusedWithin(app, successor.token);
    expect(res.statusCode).toBe(401);
    expect(await outboxEvents(runtime, AUTH_SUBJECTS.sessionRevoked)).toContainEqual({
      sessionId: sessionOf(pair.token),
      userId: pair.user.id,
    });
  });

  it('is published for every session a password reset ends', async () => {
    const { account, pair } = await register();
    const second = await login(account.email, account.password);
    expect((await post('/v1/auth/forgot-password', { email: account.email })).statusCode).toBe(202);
    const { code } = await mailbox.mailTo(account.email);
    expect((await post('/v1/auth/reset-password', { email: account.email, code, password: 'a brand new password' })).statusCode).toBe(200);
    for (const token of [pair.token, second.token]) expect((await refusedWithin(app, token)).res.statusCode).toBe(401);
    const events = await outboxEvents(runtime, AUTH_SUBJECTS.sessionRevoked);
    expect(events).toEqual(
      expect.arrayContaining([
        { sessionId: sessionOf(pair.token), userId: pair.user.id },
        { sessionId: sessionOf(second.token), userId: pair.user.id },
      ]),
    );
  });
});
