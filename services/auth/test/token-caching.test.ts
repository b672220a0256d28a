import { afterAll, describe, expect, it } from 'vitest';
import { bearer, newAccount, startAuth } from './helpers.ts';

const { app, runtime } = await startAuth();
afterAll(async () => {
  await app.close();
  await runtime.close();
});

const cacheControl = (res: { statusCode: number; headers: Record<string, unknown> }) => [res.statusCode, res.headers['cache-control']];

describe('caching of answers', () => {
  it('marks every answer that carries a token Cache-Control: no-store (RFC 6749 5.1), and a refusal too', async () => {
    const account = newAccount('cache');
    const register = await app.inject({ method: 'POST', url: '/v1/auth/register', payload: account });
    const login = await app.inject({
      method: 'POST',
      url: '/v1/auth/login',
      payload: { login: account.username, password: account.password },
    });
    const { refreshToken, token } = login.json() as { refreshToken: string; token: string };
    const refresh = await app.inject({ method: 'POST', url: '/v1/auth/refresh', payload: { refreshToken } });
    const wrongPassword = await app.inject({
      method: 'POST',
      url: '/v1/auth/login',
      payload: { login: account.username, password: 'wrong horse' },
    });
    const me = await app.inject({ method: 'GET', url: '/v1/users/@me', headers: bearer(token) });
    expect({
      register: cacheControl(register),
      login: cacheControl(login),
      refresh: cacheControl(refresh),
      wrongPassword: cacheControl(wrongPassword),
      me: cacheControl(me),
    }).toEqual({
      register: [201, 'no-store'],
      login: [200, 'no-store'],
      refresh: [200, 'no-store'],
      wrongPassword: [401, 'no-store'],
      me: [200, 'no-store'],
    });
  });

  it('lets caches keep the JWKS for five minutes, as its route says', async () => {
    const jwks = await app.inject({ method: 'GET', url: '/v1/auth/jwks' });
    expect(cacheControl(jwks)).toEqual([200, 'public, max-age=300, stale-while-revalidate=60']);
  });
});
