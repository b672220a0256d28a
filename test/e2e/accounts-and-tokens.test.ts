import { createHmac, randomBytes, randomInt } from 'node:crypto';
import { GatewayClient, lastAttempt } from '@chat/testkit';
import { base64url, decodeJwt, decodeProtectedHeader, generateKeyPair, SignJWT } from 'jose';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { api, conversationOnceKnown, gateway, newUser, postMessage, publicServer, randomIp, rawRequest, type TestUser } from './helpers.ts';

const guilds = inject('platform').urls.guilds;
const sockets: GatewayClient[] = [];
afterAll(() => {
  for (const socket of sockets) socket.close();
});

const hex = () => randomBytes(4).toString('hex');
const encode = (value: unknown) => base64url.encode(JSON.stringify(value));
const register = (body: Record<string, unknown>) => api('POST', '/v1/auth/register', { ip: randomIp(), body });
const bearer = (token: string, ip = randomIp()) => api('GET', '/v1/users/@me', { ip, headers: { authorization: `Bearer ${token}` } });

async function socket(ip = randomIp()) {
  const client = await GatewayClient.connect(gateway, { ip });
  sockets.push(client);
  return client;
}

/** The status a token gets at the gateway and from a service asked directly. */
async function statusesOf(token: string) {
  const viaGateway = await bearer(token);
  const atService = await fetch(`${guilds}/v1/servers`, { headers: { authorization: `Bearer ${token}` } });
  return { gateway: viaGateway.status, service: atService.status };
}

describe('access tokens that were tampered with', () => {
  it('are refused at the gateway and by a service asked directly, whatever was changed', async () => {
    const [user, victim] = [await newUser('tamp'), await newUser('tamp')];
    const header = decodeProtectedHeader(user.token) as Record<string, unknown>;
    const payload = decodeJwt(user.token) as Record<string, unknown>;
    const jwks = await api('GET', '/v1/auth/jwks');
    const published = jwks.body.keys[0] as { x: string; kid: string };
    const [h, p, s] = user.token.split('.') as [string, string, string];
    const unsigned = (head: object, claims: object) => `${encode(head)}.${encode(claims)}.`;
    const hs256 = (secret: Uint8Array | string) => {
      const signed = `${encode({ alg: 'HS256', typ: 'at+jwt', kid: published.kid })}.${encode(payload)}`;
      return `${signed}.${createHmac('sha256', secret).update(signed).digest('base64url')}`;
    };
    const foreign = await generateKeyPair('EdDSA', { crv: 'Ed25519' });
    const signForeign = (claims: Record<string, unknown>, head: Record<string, unknown>) =>
      new SignJWT(claims).setProtectedHeader({ alg: 'EdDSA', typ: 'at+jwt', ...head }).sign(foreign.privateKey);
    const now = Math.floor(Date.now() / 1000);

    const tokens: Record<string, string> = {
      'alg none': unsigned({ ...header, alg: 'none' }, payload),
      'alg none with another sub': unsigned({ alg: 'none', typ: 'at+jwt' }, { ...payload, sub: victim.id }),
      'HS256 keyed with the public key bytes': hs256(base64url.decode(published.x)),
      'HS256 keyed with the public JWK': hs256(JSON.stringify(published)),
      'a foreign key under the real kid': await signForeign(payload, { kid: published.kid }),
      'a foreign key under an unknown kid': await signForeign(payload, { kid: 'no-such-kid' }),
      'a foreign key without kid': await signForeign(payload, {}),
      'a foreign key embedded as jwk': await signForeign(payload, { jwk: { kty: 'OKP', crv: 'Ed25519', x: 'AAAA' } }),
      'an expired token of a foreign key': await signForeign({ ...payload, exp: now - 3600, iat: now - 7200 }, { kid: published.kid }),
      'another sub under the real signature': `${h}.${encode({ ...payload, sub: victim.id })}.${s}`,
      'typ JWT under the real signature': `${encode({ ...header, typ: 'JWT' })}.${p}.${s}`,
      'a truncated signature': `${h}.${p}.${s.slice(0, -4)}`,
    };
    const outcomes: Record<string, { gateway: number; service: number }> = {};
    for (const [name, token] of Object.entries(tokens)) outcomes[name] = await statusesOf(token);
    expect(outcomes).toEqual(Object.fromEntries(Object.keys(tokens).map((name) => [name, { gateway: 401, service: 401 }])));
    expect(await statusesOf(user.token)).toEqual({ gateway: 200, service: 200 });
  });

  it('are taken only from an Authorization header of the Bearer scheme, never from the query string', async () => {
    const user = await newUser('scheme');
    const outcomes: Record<string, number> = {};
    for (const name of ['token', 'access_token', 'authorization'])
      outcomes[`?${name}=`] = (await api('GET', `/v1/users/@me?${name}=${user.token}`, { ip: user.ip })).status;
    for (const [name, value] of Object.entries({
      Basic: `Basic ${user.token}`,
      Token: `Token ${user.token}`,
      'no scheme': user.token,
      'Bearer with a trailing word': `Bearer ${user.token} extra`,
    }))
      outcomes[name] = (await api('GET', '/v1/users/@me', { ip: user.ip, headers: { authorization: value } })).status;
    expect(outcomes).toEqual(Object.fromEntries(Object.keys(outcomes).map((name) => [name, 401])));
    expect((await api('GET', '/v1/users/@me', { user })).status).toBe(200);
  });
});

describe('tokens on the socket', () => {
  it('closes the socket with 4004 for a refresh token and for an access token with another sub', async () => {
    const user = await newUser('sock');
    const [h, , s] = user.token.split('.') as [string, string, string];
    const otherSub = `${h}.${encode({ ...decodeJwt(user.token), sub: '00000000-0000-7000-8000-000000000000' })}.${s}`;
    for (const token of [user.refreshToken, otherSub]) {
      const client = await socket();
      client.send({ op: 2, d: { token } });
      expect((await client.closeCode()).code).toBe(4004);
    }
    const genuine = await socket();
    await expect(genuine.identify(user.token)).resolves.toBeDefined();
  });
});

describe('refresh tokens through the gateway', () => {
  it('presented again after rotation end their session: its access tokens are refused, its socket closes with 4004, other sessions live on', async () => {
    const user = await newUser('reuse');
    const ip = randomIp();
    const otherSession = await api('POST', '/v1/auth/login', { ip, body: { login: user.username, password: user.password } });
    expect(otherSession.status).toBe(200);
    const rotated = await api('POST', '/v1/auth/refresh', { ip, body: { refreshToken: user.refreshToken } });
    expect(rotated.status).toBe(200);
    const successor = rotated.body as { token: string; refreshToken: string };
    const client = await socket(ip);
    await client.identify(successor.token);
    expect((await bearer(successor.token, ip)).status).toBe(200);

    const reused = await api('POST', '/v1/auth/refresh', { ip, body: { refreshToken: user.refreshToken } });
    expect(reused.status).toBe(401);
    expect(reused.body).toEqual({ error: expect.any(String) });
    // The revocation reaches the gateway as an event: asked again until refused, within the contract's bound.
    const refused = await lastAttempt(
      () => bearer(successor.token, ip),
      (res) => res.status !== 200,
      2_000,
    );
    expect(refused.status).toBe(401);
    expect((await client.closeCode(3_000)).code).toBe(4004);
    expect((await bearer(user.token, ip)).status).toBe(401);
    expect((await api('POST', '/v1/auth/refresh', { ip, body: { refreshToken: successor.refreshToken } })).status).toBe(401);

    const other = await api('POST', '/v1/auth/refresh', { ip, body: { refreshToken: otherSession.body.refreshToken } });
    expect(other.status).toBe(200);
    expect((await bearer(other.body.token, ip)).status).toBe(200);
  });

  it('of ten concurrent refreshes with one token, exactly one gets a pair and the others 401', async () => {
    const user = await newUser('race');
    const answers = await Promise.all(
      Array.from({ length: 10 }, () => api('POST', '/v1/auth/refresh', { ip: user.ip, body: { refreshToken: user.refreshToken } })),
    );
    const statuses = answers.map((res) => res.status).sort();
    expect(statuses).toEqual([200, ...Array(9).fill(401)]);
    for (const res of answers.filter((a) => a.status === 401)) expect(res.body).toEqual({ error: expect.any(String) });
  });
});

describe('registration', () => {
  it('creates one account of three concurrent registrations of a username in three letter cases; the others answer 409', async () => {
    const name = `Case_${hex()}`;
    const answers = await Promise.all(
      [name, name.toLowerCase(), name.toUpperCase()].map((username, i) =>
        register({ username, email: `${name}.${i}@example.test`, password: 'password-1' }),
      ),
    );
    expect(answers.map((res) => res.status).sort()).toEqual([201, 409, 409]);
    for (const res of answers.filter((a) => a.status === 409)) expect(res.body).toEqual({ error: expect.any(String) });
  });

  it('creates one account of two concurrent registrations of an email in two letter cases; the other answers 409', async () => {
    const local = `mail_${hex()}`;
    const answers = await Promise.all([
      register({ username: `${local}a`, email: `${local}@Example.test`, password: 'password-1' }),
      register({ username: `${local}b`, email: `${local.toUpperCase()}@EXAMPLE.TEST`, password: 'password-2' }),
    ]);
    expect(answers.map((res) => res.status).sort()).toEqual([201, 409]);
    expect(answers.find((res) => res.status === 409)?.body).toEqual({ error: expect.any(String) });
  });

  it('refuses usernames that are reserved or carry spaces, look-alike, full-width, zero-width or bidi characters (400)', async () => {
    const usernames = [
      'everyone',
      'here',
      'EveryOne',
      ` sp_${hex()}`,
      `sp_${hex()} `,
      `\u0430dmin_${hex()}`,
      `zw\u200b${hex()}`,
      `rtl\u202e${hex()}`,
      `\uff26ull${hex()}`,
    ];
    const outcomes: Record<string, unknown> = {};
    for (const username of usernames) {
      const res = await register({ username, email: `${hex()}@example.test`, password: 'password-1' });
      outcomes[username] = [res.status, res.body.error?.split(':')[0]];
    }
    expect(outcomes).toEqual(Object.fromEntries(usernames.map((u) => [u, [400, 'body.username']])));
  });

  it('refuses emails with a Kelvin sign, a zero-width character, a Cyrillic letter or a leading space (400)', async () => {
    const emails = [
      `\u212Aate_${hex()}@example.test`,
      `ka\u200bte_${hex()}@example.test`,
      `kate_${hex()}@ex\u0430mple.test`,
      ` kate_${hex()}@example.test`,
    ];
    const outcomes: Record<string, unknown> = {};
    for (const email of emails) {
      const res = await register({ username: `em_${hex()}`, email, password: 'password-1' });
      outcomes[email] = [res.status, res.body.error?.split(':')[0]];
    }
    expect(outcomes).toEqual(Object.fromEntries(emails.map((e) => [e, [400, 'body.email']])));
  });

  it('answers 400, never a 5xx, for a NUL in a string of register, login or the profile, and changes nothing', async () => {
    const username = `nul_${hex()}`;
    const reg = await register({ username, email: `${hex()}@example.test`, password: 'pass\u0000word', displayName: 'a\u0000b' });
    expect(reg.status).toBe(400);
    expect(reg.body).toEqual({ error: expect.stringMatching(/^body\./) });
    const login = await api('POST', '/v1/auth/login', { ip: randomIp(), body: { login: 'a\u0000b', password: 'x' } });
    expect(login.status).toBe(400);
    const user = await newUser('nul');
    const before = (await api('GET', '/v1/users/@me', { user })).body;
    for (const body of [{ displayName: 'a\u0000b' }, { bio: 'a\u0000b' }, { customStatus: 'a\u0000b' }]) {
      const res = await api('PATCH', '/v1/users/@me', { user, body });
      expect({ body, status: res.status }).toEqual({ body, status: 400 });
    }
    expect((await api('GET', '/v1/users/@me', { user })).body).toEqual(before);
  });
});

describe('login strings', () => {
  it('find no account for a padded, plus-addressed or dotted variant of the username or email', async () => {
    const user = await newUser('lgn');
    const [local, domain] = user.email.split('@') as [string, string];
    const variants = [` ${user.username}`, `${user.username} `, `${local}+x@${domain}`, `${local}.@${domain}`, ` ${user.email}`];
    const outcomes: Record<string, number> = {};
    for (const login of variants)
      outcomes[login] = (await api('POST', '/v1/auth/login', { ip: randomIp(), body: { login, password: user.password } })).status;
    expect(outcomes).toEqual(Object.fromEntries(variants.map((login) => [login, 401])));
    const genuine = await api('POST', '/v1/auth/login', { ip: randomIp(), body: { login: user.username, password: user.password } });
    expect(genuine.status).toBe(200);
  });
});

describe('profile changes', () => {
  it('leave the id, username, email, badges, flags and creation time as they were', async () => {
    const user = await newUser('imm');
    const before = (await api('GET', '/v1/users/@me', { user })).body;
    const res = await api('PATCH', '/v1/users/@me', {
      user,
      body: {
        id: '00000000-0000-7000-8000-000000000000',
        username: `hijack_${hex()}`,
        email: `hijack_${hex()}@example.test`,
        badges: ['staff', 'verified_email'],
        isStaff: true,
        is_staff: true,
        isFounder: false,
        emailVerified: true,
        createdAt: '2000-01-01T00:00:00.000Z',
        bio: 'hi',
      },
    });
    expect(res.status).toBe(200);
    const after = (await api('GET', '/v1/users/@me', { user })).body;
    expect(after).toEqual({ ...before, bio: 'hi' });
  });

  it('refuse display names that show as nothing or carry control, line-break or bidi-override characters (400)', async () => {
    const user = await newUser('ctl');
    const before = (await api('GET', '/v1/users/@me', { user })).body;
    const names = {
      'zero-width only': '\u200b\u200b',
      'word joiner only': '\u2060',
      'Hangul filler': '\u3164',
      newline: 'line\nbreak',
      escape: 'red\u001b[31m',
      bell: 'bell\u0007',
      'right-to-left override': 'abc\u202etxt.exe',
      'line separator': 'a\u2028b',
    };
    const outcomes: Record<string, number> = {};
    for (const [kind, displayName] of Object.entries(names))
      outcomes[kind] = (await api('PATCH', '/v1/users/@me', { user, body: { displayName } })).status;
    expect(outcomes).toEqual(Object.fromEntries(Object.keys(names).map((kind) => [kind, 400])));
    expect((await api('GET', '/v1/users/@me', { user })).body).toEqual(before);
    const reg = await register({
      username: `ctlreg_${hex()}`,
      email: `${hex()}@example.test`,
      password: 'password-1',
      displayName: '\u200b',
    });
    expect(reg.status).toBe(400);
    expect(reg.body).toEqual({ error: expect.stringMatching(/^body\.displayName: /) });
  });
});

describe('the Auth tier at the edge', () => {
  it('counts every spelling of the login path: once the window is spent, none of them reaches login', async () => {
    const ip = randomIp();
    for (let i = 0; i < 5; i++)
      expect((await api('POST', '/v1/auth/login', { ip, body: { login: `nobody_${i}_${hex()}`, password: 'x' } })).status).toBe(401);
    const { host } = new URL(gateway);
    const targets = [
      '/v1/auth/login',
      '/v1/auth/login/',
      '/V1/AUTH/LOGIN',
      '//v1/auth/login',
      '/v1//auth/login',
      '/v1/auth//login',
      '/v1/auth/logi%6e',
      '/v1/auth/%6Cogin',
      '/v1/%61uth/login',
      '/%761/auth/login',
      '/v1/auth/login;x',
      '/v1/auth/login%3Bx',
      '/v1/auth/login?x=1',
      `http://${host}/v1/auth/login`,
      'http://other.example/v1/auth/login',
    ];
    const body = JSON.stringify({ login: 'nobody', password: 'x' });
    const outcomes: Record<string, number> = {};
    for (const target of targets)
      outcomes[target] = (await rawRequest('POST', target, { 'content-type': 'application/json', 'x-forwarded-for': ip }, body)).status;
    // 429 (counted in the spent window) or refused before login: never login's own 401.
    const reachedLogin = Object.entries(outcomes).filter(([, status]) => status === 401 || status === 200);
    expect({ reachedLogin, outcomes }).toEqual({ reachedLogin: [], outcomes });
    expect(outcomes['/v1/auth/login']).toBe(429);
  });

  it('counts IPv6 clients per /64, however the address is spelled', async () => {
    const prefix = `2001:db8:${randomInt(0x10000).toString(16)}:${randomInt(0x10000).toString(16)}`;
    const spellings = [
      `${prefix}::1`,
      `${prefix}:0:0:0:2`,
      `${prefix.toUpperCase()}::3`,
      `${prefix}:0::4`,
      `${prefix}:ffff:ffff:ffff:ffff`,
      `${prefix}::6`,
    ];
    const answers = [];
    for (const ip of spellings) answers.push(await api('POST', '/v1/auth/login', { ip, body: { login: 'nobody', password: 'x' } }));
    expect(answers.map((res) => res.status)).toEqual([401, 401, 401, 401, 401, 429]);
    expect(answers[5]?.body).toEqual({ error: expect.stringMatching(/^Too many requests, /) });
  });

  it('counts an IPv4-mapped IPv6 address as the IPv4 address it maps', async () => {
    const ip = randomIp();
    for (let i = 0; i < 5; i++)
      expect((await api('POST', '/v1/auth/login', { ip, body: { login: 'nobody', password: 'x' } })).status).toBe(401);
    const mapped = await api('POST', '/v1/auth/login', { ip: `::ffff:${ip}`, body: { login: 'nobody', password: 'x' } });
    expect(mapped.status).toBe(429);
    expect(mapped.headers.get('retry-after')).toMatch(/^\d+$/);
  });
});

async function befriend(a: TestUser, b: TestUser) {
  // Social answers 404 until its read-model has heard of `b` from auth.
  const request = await lastAttempt(
    () => api('POST', '/v1/friends/requests', { user: a, body: { userId: b.id } }),
    (res) => res.status !== 404,
  );
  expect(request.status).toBe(201);
  expect((await api('POST', '/v1/friends/accept', { user: b, body: { userId: a.id } })).status).toBe(200);
}

/** `subject` seen by `viewer` in every read-model: a member, an author, a sender, a participant, a friend and a ban. */
async function watchedSubject(prefix: string) {
  const [subject, viewer] = [await newUser(prefix), await newUser(`${prefix}v`)];
  const { serverId, textId } = await publicServer(viewer, [subject]);
  await postMessage(subject, textId, 'hello');
  const conversationId = await conversationOnceKnown(subject, viewer);
  expect((await api('POST', '/v1/dm/messages', { user: subject, body: { conversationId, content: 'hi' } })).status).toBe(201);
  await befriend(subject, viewer);
  const banned = await publicServer(viewer, [subject]);
  expect((await api('PUT', `/v1/servers/${banned.serverId}/bans/${subject.id}`, { user: viewer, body: { reason: 'spam' } })).status).toBe(
    200,
  );
  // biome-ignore lint/suspicious/noExplicitAny: each read-model answers its own shape
  const get = async (path: string) => (await api('GET', path, { user: viewer })).body as any[];
  /** What each read-model shows of the subject: [display name, avatar]. */
  const views = async () => {
    const member = (await get(`/v1/servers/${serverId}/members`)).find((m) => (m.user?.id ?? m.userId) === subject.id)?.user;
    const message = (await get(`/v1/channels/${textId}/messages`)).find((m) => m.authorId === subject.id);
    const dm = (await get(`/v1/dm/conversations/${conversationId}/messages`)).find((m) => m.senderId === subject.id);
    const participant = (await get('/v1/dm/conversations'))
      .find((c) => c.id === conversationId)
      ?.participants?.find((p: { id: string }) => p.id === subject.id);
    const friend = (await get('/v1/friends')).find((f) => f.user.id === subject.id)?.user;
    const ban = (await get(`/v1/servers/${banned.serverId}/bans`)).find((b) => b.userId === subject.id);
    const profile = (await api('GET', `/v1/users/${subject.id}`, { user: viewer })).body;
    return {
      profile: [profile.displayName, profile.avatarUrl],
      member: [member?.displayName, member?.avatarUrl],
      message: [message?.authorName, message?.authorAvatar],
      dm: [dm?.senderName, dm?.senderAvatar],
      participant: [participant?.displayName, participant?.avatarUrl],
      friend: [friend?.displayName, friend?.avatarUrl],
      ban: [ban?.displayName, ban?.avatarUrl],
    };
  };
  return { subject, views };
}

const everywhere = (name: string, avatar: string | null) =>
  Object.fromEntries(['profile', 'member', 'message', 'dm', 'participant', 'friend', 'ban'].map((view) => [view, [name, avatar]]));

/** Read-models follow auth.user.updated in their own time: read until they show `want`, for at most 10 s. */
const settled = (views: () => Promise<unknown>, want: unknown) =>
  lastAttempt(views, (seen) => JSON.stringify(seen) === JSON.stringify(want));

describe('a profile change across the platform', () => {
  it('reaches members, channel messages, direct messages, conversations, friends and bans, a cleared avatar and the last of quick renames too', async () => {
    const { subject, views } = await watchedSubject('subj');
    const avatar = `https://cdn.example.test/${hex()}.png`;
    const first = await api('PATCH', '/v1/users/@me', { user: subject, body: { displayName: 'First Name', avatarUrl: avatar } });
    expect(first.status).toBe(200);
    expect(await settled(views, everywhere('First Name', avatar))).toEqual(everywhere('First Name', avatar));

    expect((await api('PATCH', '/v1/users/@me', { user: subject, body: { avatarUrl: null } })).status).toBe(200);
    for (const displayName of ['Second', 'Third', 'Final Name'])
      expect((await api('PATCH', '/v1/users/@me', { user: subject, body: { displayName } })).status).toBe(200);
    expect(await settled(views, everywhere('Final Name', null))).toEqual(everywhere('Final Name', null));
  });

  it('leaves every read-model at the name auth keeps after concurrent renames', async () => {
    const { subject, views } = await watchedSubject('conc');
    const names = Array.from({ length: 8 }, (_, i) => `Racer ${i}`);
    const answers = await Promise.all(names.map((displayName) => api('PATCH', '/v1/users/@me', { user: subject, body: { displayName } })));
    expect(answers.map((res) => res.status)).toEqual(names.map(() => 200));
    const kept = (await api('GET', '/v1/users/@me', { user: subject })).body.displayName as string;
    expect(names).toContain(kept);
    expect(await settled(views, everywhere(kept, null))).toEqual(everywhere(kept, null));
  });
});
