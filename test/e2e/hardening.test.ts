import { Permission, toMask } from '@chat/contracts';
import { describe, expect, it } from 'vitest';
import { E2E_UPLOADS_PER_HOUR } from '../setup/platform.ts';
import { api, gateway, newUser, type TestUser } from './helpers.ts';

/** Issue 16, items 3, 5, 9 and 12, tried through the gateway as an attacker would. */

async function eventually<T>(attempt: () => Promise<T>, done: (value: T) => boolean, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await attempt();
    if (done(value) || Date.now() > deadline) return value;
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe('channel overrides (item 3)', () => {
  it('does not let a member with MANAGE_ROLES lift a deny they are under, for @everyone or for themself', async () => {
    const [owner, moderator] = [await newUser('owner'), await newUser('mod')];
    const server = (await api('POST', '/v1/servers', { user: owner, body: { name: 'Hardened', isPublic: true } })).body;
    expect((await api('POST', `/v1/servers/${server.id}/join`, { user: moderator })).status).toBe(200);
    const role = await api('POST', `/v1/servers/${server.id}/roles`, {
      user: owner,
      body: { name: 'mods', permissions: toMask(Permission.MANAGE_ROLES) },
    });
    expect((await api('PUT', `/v1/servers/${server.id}/members/${moderator.id}/roles/${role.body.id}`, { user: owner })).status).toBe(204);
    const channel = (await api('POST', `/v1/servers/${server.id}/channels`, { user: owner, body: { name: 'news', channelType: 'text' } }))
      .body;
    const path = `/v1/channels/${channel.id}/permissions`;
    const readOnly = await api('PUT', path, {
      user: owner,
      body: { roleId: server.id, allowBits: 0, denyBits: toMask(Permission.SEND_MESSAGES) },
    });
    expect(readOnly.status).toBe(200);

    const lift = await api('PUT', path, { user: moderator, body: { roleId: server.id, allowBits: 0, denyBits: 0 } });
    expect(lift).toMatchObject({ status: 403, body: { error: expect.stringContaining('do not have in this channel') } });
    expect((await api('DELETE', `${path}/${readOnly.body.id}`, { user: moderator })).status).toBe(403);
    const self = await api('PUT', path, {
      user: moderator,
      body: { userId: moderator.id, allowBits: toMask(Permission.SEND_MESSAGES), denyBits: 0 },
    });
    expect(self.status).toBe(403);
    expect((await api('GET', path, { user: owner })).body).toEqual([readOnly.body]);
    expect((await api('POST', `/v1/channels/${channel.id}/messages`, { user: moderator, body: { content: 'let me talk' } })).status).toBe(
      403,
    );
  });
});

describe('blocks in groups and leaving them (item 5)', () => {
  it('keeps a blocked user’s group messages from the blocker, and lets the owner leave with a hand-over', async () => {
    const [alice, bob, carol] = [await newUser('alice'), await newUser('bob'), await newUser('carol')];
    // Social learns of new users from auth's events; wait until it knows all three.
    const opened = await eventually(
      () => api('POST', '/v1/dm/conversations', { user: carol, body: { userIds: [alice.id, bob.id] } }),
      (res) => res.status === 201,
    );
    expect(opened.status).toBe(201);
    const id = opened.body.id as string;
    expect((await api('POST', '/v1/friends/block', { user: alice, body: { userId: bob.id } })).status).toBe(201);
    expect((await api('POST', '/v1/dm/messages', { user: bob, body: { conversationId: id, content: 'from bob' } })).status).toBe(201);
    expect((await api('POST', '/v1/dm/messages', { user: carol, body: { conversationId: id, content: 'from carol' } })).status).toBe(201);
    const seen = async (user: TestUser) =>
      (await api('GET', `/v1/dm/conversations/${id}/messages`, { user })).body.map((m: { content: string }) => m.content);
    expect(await seen(alice)).toEqual(['from carol']);
    expect(await seen(carol)).toEqual(['from carol', 'from bob']);

    // Bob cannot put alice in a group of his own; to him she answers like an unknown user.
    expect(await api('POST', '/v1/dm/conversations', { user: bob, body: { userIds: [alice.id, carol.id] } })).toMatchObject({
      status: 404,
      body: { error: 'User not found' },
    });

    expect((await api('DELETE', `/v1/dm/conversations/${id}/members/@me`, { user: carol })).status).toBe(204);
    expect((await api('GET', `/v1/dm/conversations/${id}`, { user: carol })).status).toBe(404);
    const after = (await api('GET', `/v1/dm/conversations/${id}`, { user: alice })).body;
    expect(after.ownerId).not.toBe(carol.id);
    expect([alice.id, bob.id]).toContain(after.ownerId);
    expect(after.participants.map((p: { id: string }) => p.id).sort()).toEqual([alice.id, bob.id].sort());
  });
});

describe('image URLs (item 9)', () => {
  it('refuses javascript:, data: and file: URLs for avatars, icons, banners and webhook avatars, and keeps http(s)', async () => {
    const user = await newUser('urls');
    for (const avatarUrl of ['javascript:alert(document.cookie)', 'data:text/html,<script>alert(1)</script>', 'file:///etc/passwd']) {
      const res = await api('PATCH', '/v1/users/@me', { user, body: { avatarUrl } });
      expect(res, avatarUrl).toMatchObject({ status: 400, body: { error: expect.stringContaining('avatarUrl') } });
    }
    expect((await api('GET', '/v1/users/@me', { user })).body.avatarUrl).toBeNull();
    expect((await api('PATCH', '/v1/users/@me', { user, body: { avatarUrl: 'https://cdn.example.com/me.png' } })).status).toBe(200);

    const server = (await api('POST', '/v1/servers', { user, body: { name: 'Icons' } })).body;
    expect((await api('PATCH', `/v1/servers/${server.id}`, { user, body: { iconUrl: 'javascript:alert(1)' } })).status).toBe(400);
    expect((await api('PATCH', `/v1/servers/${server.id}`, { user, body: { bannerUrl: 'data:image/svg+xml,<svg/>' } })).status).toBe(400);
    const channel = (await api('GET', `/v1/servers/${server.id}/channels`, { user })).body[0];
    const hook = await api('POST', `/v1/channels/${channel.id}/webhooks`, { user, body: { name: 'ci', avatarUrl: 'javascript:alert(1)' } });
    expect(hook.status).toBe(400);
    expect((await api('GET', `/v1/servers/${server.id}`, { user })).body).toMatchObject({ iconUrl: null, bannerUrl: null });
  });
});

describe('upload quota (item 12)', () => {
  /** A one-file upload of `user` through the gateway. */
  const upload = async (user: TestUser, content = 'q', headers: Record<string, string> = {}) => {
    const form = new FormData();
    form.append('file', new Blob([content]), 'q.txt');
    const res = await fetch(`${gateway}/v1/media`, {
      method: 'POST',
      headers: { authorization: `Bearer ${user.token}`, 'x-forwarded-for': user.ip, ...headers },
      body: form,
    });
    return { status: res.status, retryAfter: res.headers.get('retry-after'), body: (await res.json()) as { id?: string; error?: string } };
  };

  it('answers 429 with Retry-After and the quota’s name past the hourly file count, and stores nothing', async () => {
    const user = await newUser('quota');
    for (let i = 0; i < E2E_UPLOADS_PER_HOUR; i++) expect((await upload(user)).status).toBe(201);
    const over = await upload(user);
    expect(over.status).toBe(429);
    expect(over.body).toEqual({ error: `Upload quota exceeded: at most ${E2E_UPLOADS_PER_HOUR} files per hour` });
    expect(Number(over.retryAfter)).toBeGreaterThan(3_500);
    expect(Number(over.retryAfter)).toBeLessThanOrEqual(3_600);
  });

  it('replays the retry of the upload that filled the hour under its Idempotency-Key (201, not 429)', async () => {
    const user = await newUser('quotaretry');
    for (let i = 1; i < E2E_UPLOADS_PER_HOUR; i++) expect((await upload(user)).status).toBe(201);
    const key = { 'idempotency-key': `last-${user.id}` };
    const last = await upload(user, 'the last one', key);
    expect(last.status).toBe(201);
    expect((await upload(user, 'one too many')).status).toBe(429);
    const retry = await upload(user, 'the last one', key);
    expect(retry).toMatchObject({ status: 201, body: { id: last.body.id } });
    expect(retry.body).toEqual(last.body);
  });
});
