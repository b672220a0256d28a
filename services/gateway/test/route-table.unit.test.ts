import { ALL_ROUTES, ROUTE_PREFIXES } from '@chat/contracts';
import { describe, expect, it } from 'vitest';
import { createRouteTable } from '../src/domain/route-table.ts';

const classify = createRouteTable(ALL_ROUTES, Object.keys(ROUTE_PREFIXES));
const hook = '0190f3c1-7a6e-7c1e-9a8b-1234567890ab';

describe('route classification', () => {
  it('puts the six auth endpoints in the Auth tier, public, whatever the case, slash or query', () => {
    for (const path of ['register', 'login', 'verify-email', 'resend-code', 'forgot-password', 'reset-password']) {
      expect(classify('POST', `/v1/auth/${path}`)).toMatchObject({ auth: false, tier: 'auth' });
    }
    expect(classify('POST', '/V1/Auth/LOGIN/?next=1')).toMatchObject({ auth: false, tier: 'auth' });
    expect(classify('POST', '/v1//auth/login')).toMatchObject({ tier: 'auth' });
  });

  it('keeps refresh and the JWKS public in the General tier, and the profile authenticated', () => {
    expect(classify('POST', '/v1/auth/refresh')).toMatchObject({ auth: false, tier: 'general' });
    expect(classify('GET', '/v1/auth/jwks')).toMatchObject({ auth: false, tier: 'general' });
    expect(classify('GET', '/v1/users/@me')).toMatchObject({ auth: true, tier: 'general' });
    expect(classify('GET', '/v1/health')).toMatchObject({ auth: false });
  });

  it('keeps a file’s url public however long its percent-encoded name (128 emoji, as uploads allow)', () => {
    const name = `${encodeURIComponent('😀'.repeat(128))}.png`;
    expect(name.length).toBeGreaterThan(1500);
    expect(classify('GET', `/v1/media/${hook}/${name}`)).toMatchObject({ auth: false, pattern: '/v1/media/:id/:filename' });
    expect(classify('GET', `/v1/media/${hook}/${'n'.repeat(101)}.txt`)).toMatchObject({ auth: false });
  });

  it('classifies a HEAD as its GET: public where the GET is, authenticated where it is not', () => {
    expect(classify('HEAD', '/v1/auth/jwks')).toMatchObject({ auth: false, tier: 'general' });
    expect(classify('HEAD', '/v1/users/@me')).toMatchObject({ auth: true, tier: 'general' });
    // No GET contract: an unknown path under /v1/auth, in the Auth tier.
    expect(classify('HEAD', '/v1/auth/login')).toMatchObject({ auth: true, tier: 'auth' });
  });

  it('gives no window of its own to a webhook id that is not a UUID: General, per client', () => {
    expect(classify('POST', '/v1/webhooks/not-a-uuid/secret-token')).toEqual({
      auth: false,
      tier: 'general',
      multipart: false,
      service: 'guilds',
      pattern: '/v1/webhooks/:id/:token',
    });
  });

  it('counts webhook execution per webhook id, in lower case', () => {
    expect(classify('POST', `/v1/webhooks/${hook.toUpperCase()}/secret-token`)).toEqual({
      auth: false,
      tier: 'webhook',
      webhookId: hook,
      multipart: false,
      service: 'guilds',
      pattern: '/v1/webhooks/:id/:token',
    });
  });

  it('names the contract path pattern a request is counted under, and none for a path no contract describes', () => {
    expect(classify('GET', `/V1/Channels/${hook}/messages?limit=5`)).toMatchObject({ pattern: '/v1/channels/:channelId/messages' });
    expect(classify('HEAD', '/v1/users/@me')).toMatchObject({ pattern: '/v1/users/@me' });
  });

  it('authenticates a path under a proxied prefix that no contract describes, but not an unknown area', () => {
    expect(classify('GET', '/v1/servers/x/not-yet-built/at-all')).toEqual({ auth: true, tier: 'general', multipart: false });
    expect(classify('DELETE', '/v1/auth/login')).toMatchObject({ auth: true, tier: 'auth' });
    expect(classify('POST', '/v1//auth/sso')).toMatchObject({ auth: true, tier: 'auth' });
    expect(classify('GET', '/v1/authors')).toMatchObject({ auth: false, tier: 'general' });
    expect(classify('GET', '/v1/nothing-here')).toMatchObject({ auth: false, tier: 'general' });
    expect(classify('GET', '/v1/%E0%A4%A')).toMatchObject({ tier: 'general' });
  });

  it('marks dot segments, raw or percent-encoded, and counts them as the unknown path they spell', () => {
    const dots = 'The path may not contain "." or ".." segments';
    expect(classify('POST', '/v1/auth/%2E/login')).toEqual({ auth: true, tier: 'auth', multipart: false, refused: dots });
    expect(classify('POST', '/v1/users/%2e%2E/auth/login')).toMatchObject({ tier: 'general', refused: dots });
    expect(classify('GET', '/v1/media/x/a..b.png')).not.toHaveProperty('refused');
  });

  it('refuses a backslash, which the forwarded URL reads as a slash (a webhook run out of its own tier)', () => {
    const refused = 'The path may not contain a backslash';
    expect(classify('POST', `/v1/webhooks/${hook}\\${'t'.repeat(43)}`)).toMatchObject({ refused });
    expect(classify('GET', '/v1/users\\@me')).toMatchObject({ refused });
  });

  it('refuses a target that is not a path (absolute form, asterisk form)', () => {
    const refused = 'The request target must be a path starting with /';
    expect(classify('GET', 'http://127.0.0.1:1/v1/auth/jwks')).toMatchObject({ refused });
    expect(classify('OPTIONS', '*')).toMatchObject({ refused });
    expect(classify('GET', '/v1/auth/jwks')).not.toHaveProperty('refused');
  });

  it('reads percent-escapes of unreserved characters as the services do: no spelling leaves a prefix’s token check or tier', () => {
    expect(classify('GET', '/v1/%61uth/unknown')).toMatchObject({ auth: true, tier: 'auth' });
    expect(classify('POST', '/v1/%41UTH/%6Cogin')).toMatchObject({ auth: false, tier: 'auth', pattern: '/v1/auth/login' });
    expect(classify('GET', '/v1/%75sers/%40me')).toMatchObject({ auth: true });
    expect(classify('POST', `/v1/webhooks/${hook}/%74oken`)).toMatchObject({ tier: 'webhook', webhookId: hook });
  });
});

describe('the service of a request', () => {
  it('is the service its contract names, and none for a path no contract describes', () => {
    expect(classify('POST', '/v1/channels/0190f3c1-7a6e-7c1e-9a8b-1234567890ab/typing')).toMatchObject({ service: 'guilds' });
    expect(classify('PATCH', '/v1/users/@me/presence')).toMatchObject({ service: 'auth' });
    expect(classify('POST', '/v1/dm/conversations/0190f3c1-7a6e-7c1e-9a8b-1234567890ab/typing')).toMatchObject({ service: 'social' });
    expect(classify('GET', '/v1/servers/x/not-yet-built/at-all').service).toBeUndefined();
  });
});
