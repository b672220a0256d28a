import { SelfUser, TokenPair } from '@chat/contracts';
import { describe, expect, inject, it } from 'vitest';
import { api, newUser, randomIp } from './helpers.ts';

describe('accounts through the gateway', () => {
  it('registers (201 with a token pair), then the token reaches the profile', async () => {
    const user = await newUser('e2e');
    const me = await api('GET', '/v1/users/@me', { user });
    expect(me.status).toBe(200);
    expect(SelfUser.parse(me.body)).toMatchObject({ id: user.id, username: user.username, email: user.email });
  });

  it('logs in with the username, refreshes, and refuses the rotated-out refresh token', async () => {
    const user = await newUser('e2e');
    const ip = randomIp();
    const login = await api('POST', '/v1/auth/login', { ip, body: { login: user.username, password: user.password } });
    expect(login.status).toBe(200);
    const pair = TokenPair.parse(login.body);
    const refreshed = await api('POST', '/v1/auth/refresh', { ip, body: { refreshToken: pair.refreshToken } });
    expect(refreshed.status).toBe(200);
    const reused = await api('POST', '/v1/auth/refresh', { ip, body: { refreshToken: pair.refreshToken } });
    expect(reused.status).toBe(401);
    expect(reused.body).toEqual({ error: expect.any(String) });
  });

  it('answers the founder status and shows the badge', async () => {
    const user = await newUser('e2e');
    const status = await api('GET', '/v1/badges/founder-status', { user });
    expect(status.status).toBe(200);
    expect(status.body).toEqual({ isFounder: true });
    const profile = await api('GET', `/v1/users/${user.id}`, { user });
    expect(profile.body.badges).toEqual(['founder']);
  });

  it('serves the JWKS publicly with cache headers', async () => {
    const res = await api('GET', '/v1/auth/jwks');
    expect(res.status).toBe(200);
    expect(res.headers.get('cache-control')).toMatch(/max-age/);
    expect(res.body.keys[0]).toMatchObject({ kty: 'OKP', alg: 'EdDSA', kid: expect.any(String) });
    expect(res.body.keys[0]).not.toHaveProperty('d');
  });
});

describe('a revoked session through the platform', () => {
  it('is refused within a second of logout, at the gateway and by a service asked directly', async () => {
    const user = await newUser('e2e');
    const guilds = inject('platform').urls.guilds;
    const direct = () => fetch(`${guilds}/v1/servers`, { headers: { authorization: `Bearer ${user.token}` } });
    expect((await api('GET', '/v1/servers', { user })).status).toBe(200);
    expect((await direct()).status).toBe(200);
    const logout = await api('POST', '/v1/auth/logout', { user, body: { refreshToken: user.refreshToken } });
    expect(logout.status).toBe(204);
    const loggedOutAt = Date.now();
    // Asked again until refused, for at most a second: the contract's bound, not a sleep.
    let viaGateway = await api('GET', '/v1/servers', { user });
    while (viaGateway.status === 200 && Date.now() - loggedOutAt < 1_000) viaGateway = await api('GET', '/v1/servers', { user });
    expect(viaGateway.status).toBe(401);
    expect(viaGateway.body).toEqual({ error: 'Session revoked' });
    let atService = await direct();
    while (atService.status === 200 && Date.now() - loggedOutAt < 1_000) atService = await direct();
    expect(atService.status).toBe(401);
    expect(await atService.json()).toEqual({ error: 'Session revoked' });
  });
});
