import { ALL_ROUTES, authRoutes, defineRoute, readStatesRoutes } from '@chat/contracts';
import { afterAll, describe, expect, it } from 'vitest';
import { createTestIssuer, startEchoUpstream, startGateway } from './helpers.ts';

/**
 * Routing by contract: a route lives with the service its contract names, even under another
 * service's prefix (DESIGN.md: `channels/{id}/ack` is social's); the prefix map serves the rest.
 */
const [auth, guilds, social] = [await startEchoUpstream('auth'), await startEchoUpstream('guilds'), await startEchoUpstream('social')];
const issuer = await createTestIssuer();
const area = defineRoute({ method: 'GET', path: '/v1/new-area', service: 'social', summary: 'test', status: 200, response: null });
const gateway = await startGateway({
  upstreamUrl: guilds.url,
  keys: issuer.keys,
  env: { AUTH_URL: auth.url, SOCIAL_URL: social.url },
  routes: [...ALL_ROUTES, area],
});
const token = await issuer.sign(crypto.randomUUID());
afterAll(async () => {
  await gateway.close();
  await Promise.all([auth, guilds, social].map((u) => u.close()));
});

const call = (method: 'GET' | 'PUT', url: string) => gateway.app.inject({ method, url, headers: { authorization: `Bearer ${token}` } });
const channel = '0190f3c1-7a6e-7c1e-9a8b-1234567890ab';

describe('routing by contract', () => {
  it('sends a route to the service its contract names, under another service’s prefix', async () => {
    expect(readStatesRoutes.ackChannel.service).toBe('social');
    const res = await call('PUT', `/v1/channels/${channel}/ack`);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ name: 'social', method: 'PUT', url: `/v1/channels/${channel}/ack` });
    for (const url of ['/v1/users/@me/read-states', `/v1/users/@me/notification-settings/${channel}`, '/v1/notifications']) {
      expect((await call('GET', url)).json(), url).toMatchObject({ name: 'social', url });
    }
  });

  it('keeps the prefix owner for the prefix’s own routes and for paths no contract describes', async () => {
    expect((await call('GET', `/v1/channels/${channel}`)).json()).toMatchObject({ name: 'guilds' });
    expect((await call('GET', `/v1/channels/${channel}/not-yet-built`)).json()).toMatchObject({ name: 'guilds' });
    expect((await call('GET', '/v1/users/@me')).json()).toMatchObject({ name: 'auth' });
    expect(authRoutes.updatePresence.service).toBe('auth');
    const presence = await gateway.app.inject({
      method: 'PATCH',
      url: '/v1/users/@me/presence',
      headers: { authorization: `Bearer ${token}` },
      payload: { status: 'idle' },
    });
    expect(presence.json()).toMatchObject({ name: 'auth' });
  });

  it('reaches a new area that only a contract names, with no entry in the prefix map', async () => {
    const res = await call('GET', '/v1/new-area?q=zelda');
    expect(res.json()).toMatchObject({ name: 'social', url: '/v1/new-area?q=zelda' });
  });
});
