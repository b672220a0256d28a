import { createHash } from 'node:crypto';
import { AUTH_SUBJECTS, PresenceSeenRpc, type SeenStatus, SelfUser, TokenPair, UserEventData } from '@chat/contracts';
import { createTokenVerifier, serveRpc } from '@chat/kit';
import { countRoundTrips, createTestIssuer, until } from '@chat/testkit';
import { createLocalJWKSet, decodeJwt, decodeProtectedHeader, jwtVerify } from 'jose';
import { afterAll, describe, expect, it } from 'vitest';
import { findUserById } from '../src/db/users.ts';
import { bearer, newAccount, outboxEvents, startAuth } from './helpers.ts';

const { app, runtime, keys } = await startAuth();
afterAll(async () => {
  await app.close();
  await runtime.close();
});

async function register(body = newAccount()) {
  const res = await app.inject({ method: 'POST', url: '/v1/auth/register', payload: body });
  return { res, body, pair: res.json() as { token: string; refreshToken: string; user: { id: string; username: string } } };
}

// A stand-in for the gateway, which knows who is connected: `seen` is what it answers (offline for anyone else).
const seen = new Map<string, SeenStatus>();
serveRpc(runtime.bus, runtime.log, PresenceSeenRpc, async ({ userIds }) => ({
  statuses: Object.fromEntries(userIds.map((id) => [id, seen.get(id) ?? ('offline' as const)])),
}));

const userCount = async () => Number((await runtime.pool.query('SELECT count(*) AS n FROM users')).rows[0].n);

describe('users/@me', () => {
  it('reads the caller’s row with a prepared statement (planned once per connection, issue 18)', async () => {
    const { pair } = await register();
    const { result, statements } = await countRoundTrips(() => findUserById(runtime.pool, pair.user.id));
    expect(result).toMatchObject({ id: pair.user.id, username: pair.user.username });
    expect(statements).toEqual([expect.stringMatching(/^p_[0-9a-f]{16}$/)]);
    const me = await app.inject({ method: 'GET', url: '/v1/users/@me', headers: bearer(pair.token) });
    expect(me.json()).toMatchObject({ id: pair.user.id, username: pair.user.username });
  });
});

describe('registration without email verification', () => {
  it('answers 201 with a token pair and the full user, stores an argon2id hash and announces the user', async () => {
    const { res, body, pair } = await register({ ...newAccount(), displayName: 'Ada' } as never);
    expect(res.statusCode).toBe(201);
    expect(TokenPair.parse(pair).user).toMatchObject({ username: body.username, email: body.email, displayName: 'Ada', status: 'online' });
    const row = (await runtime.pool.query('SELECT password_hash FROM users WHERE id = $1', [pair.user.id])).rows[0];
    expect(row.password_hash).toMatch(/^\$argon2id\$v=19\$m=19456,t=2,p=1\$/);
    const events = await outboxEvents(runtime, AUTH_SUBJECTS.userRegistered);
    expect(events.map((e) => UserEventData.parse(e))).toContainEqual({
      id: pair.user.id,
      username: body.username,
      displayName: 'Ada',
      avatarUrl: null,
      badges: ['founder'],
    });
  });

  it('answers 409 for a username or an email taken in another letter case, and creates nothing', async () => {
    const { body } = await register();
    const before = await userCount();
    const sameName = await register({ ...newAccount(), username: body.username.toUpperCase() });
    expect(sameName.res.statusCode).toBe(409);
    expect(sameName.res.json()).toEqual({ error: 'Username is taken' });
    const sameEmail = await register({ ...newAccount(), email: body.email.toUpperCase() });
    expect(sameEmail.res.statusCode).toBe(409);
    expect(sameEmail.res.json()).toEqual({ error: 'Email is already registered' });
    expect(await userCount()).toBe(before);
  });

  it.each([
    ['username', { username: 'a' }],
    ['username', { username: 'a'.repeat(33) }],
    ['username', { username: 'bad name!' }],
    ['email', { email: 'not-an-email' }],
    ['password', { password: 'short' }],
    ['password', { password: 'x'.repeat(129) }],
    ['displayName', { displayName: 'x'.repeat(33) }],
  ])('answers 400 naming %s for %o, and creates nothing', async (field, change) => {
    const before = await userCount();
    const { res } = await register({ ...newAccount(), ...change });
    expect(res.statusCode).toBe(400);
    expect(res.json().error).toMatch(new RegExp(`^body\\.${field}: `));
    expect(await userCount()).toBe(before);
  });
});

describe('usernames with two periods in a row', () => {
  it('are refused on registration with 400 (as Discord does), single periods are not, and nothing is created', async () => {
    const before = await userCount();
    for (const username of ['..', `a..${newAccount().username}`]) {
      const { res } = await register({ ...newAccount(), username });
      expect({ status: res.statusCode, body: res.json() }).toEqual({
        status: 400,
        body: { error: 'body.username: cannot contain two consecutive periods' },
      });
    }
    expect(await userCount()).toBe(before);
    const dotted = await register({ ...newAccount(), username: `a.b.${newAccount().username}` });
    expect(dotted.res.statusCode).toBe(201);
  });

  it('still name an account made before the rule: it logs in and is read by itself and by others', async () => {
    const { body, pair } = await register();
    const { pair: viewer } = await register();
    const legacy = `old..${body.username}`.slice(0, 32);
    await runtime.pool.query('UPDATE users SET username = $2 WHERE id = $1', [pair.user.id, legacy]);
    const res = await app.inject({ method: 'POST', url: '/v1/auth/login', payload: { login: legacy, password: body.password } });
    expect(res.statusCode).toBe(200);
    expect(SelfUser.parse(res.json().user)).toMatchObject({ id: pair.user.id, username: legacy });
    const me = await app.inject({ method: 'GET', url: '/v1/users/@me', headers: bearer(res.json().token) });
    expect({ status: me.statusCode, username: me.json().username }).toEqual({ status: 200, username: legacy });
    const seen = await app.inject({ method: 'GET', url: `/v1/users/${pair.user.id}`, headers: bearer(viewer.token) });
    expect({ status: seen.statusCode, username: seen.json().username }).toEqual({ status: 200, username: legacy });
  });
});

describe('access tokens', () => {
  it('are EdDSA JWTs with a kid, sub, sid, iss, aud, iat and a 15-minute exp, verifiable with the JWKS', async () => {
    const { pair } = await register();
    expect(decodeProtectedHeader(pair.token)).toMatchObject({ alg: 'EdDSA', kid: keys.signingKid });
    const claims = decodeJwt(pair.token);
    expect(claims).toMatchObject({ sub: pair.user.id, iss: 'chat-auth', aud: 'chat-api', sid: expect.any(String) });
    expect((claims.exp as number) - (claims.iat as number)).toBe(900);

    const jwks = await app.inject({ method: 'GET', url: '/v1/auth/jwks' });
    expect(jwks.statusCode).toBe(200);
    expect(jwks.headers['cache-control']).toMatch(/max-age=\d+/);
    const set = jwks.json() as { keys: Record<string, unknown>[] };
    expect(set.keys).toHaveLength(1);
    expect(set.keys[0]).toMatchObject({ kid: keys.signingKid, alg: 'EdDSA', kty: 'OKP', crv: 'Ed25519' });
    expect(set.keys[0]).not.toHaveProperty('d');
    await expect(jwtVerify(pair.token, createLocalJWKSet(set as never), { algorithms: ['EdDSA'] })).resolves.toBeDefined();
  });

  it('are refused when signed by another key, when a refresh token is sent as bearer, or when an identity header is forged', async () => {
    const { pair } = await register();
    const foreign = await (await createTestIssuer()).sign(pair.user.id);
    for (const headers of [bearer(foreign), bearer(pair.refreshToken), { 'x-user-id': pair.user.id }, {}]) {
      const res = await app.inject({ method: 'GET', url: '/v1/users/@me', headers });
      expect(res.statusCode).toBe(401);
      expect(res.json()).toEqual({ error: expect.any(String) });
    }
  });
});

describe('login', () => {
  it('accepts the username or the email in any letter case and opens a new session', async () => {
    const { body, pair } = await register();
    for (const login of [body.username.toUpperCase(), body.email.toUpperCase()]) {
      const res = await app.inject({ method: 'POST', url: '/v1/auth/login', payload: { login, password: body.password } });
      expect(res.statusCode).toBe(200);
      expect(SelfUser.parse(res.json().user).id).toBe(pair.user.id);
      expect(res.json().refreshToken).not.toBe(pair.refreshToken);
    }
    const sessions = await runtime.pool.query('SELECT count(*)::int AS n FROM sessions WHERE user_id = $1', [pair.user.id]);
    expect(sessions.rows[0].n).toBe(3);
  });

  it('answers a wrong password and an unknown account with the same 401, in comparable time', async () => {
    const { body } = await register();
    const attempt = async (login: string) => {
      const started = performance.now();
      const res = await app.inject({ method: 'POST', url: '/v1/auth/login', payload: { login, password: 'wrong password' } });
      return { res, ms: performance.now() - started };
    };
    // Taken in turns, so that a busy moment of the machine weighs on both alike.
    const nobody = `nobody_${Date.now()}`;
    const wrong: Awaited<ReturnType<typeof attempt>>[] = [];
    const unknown: Awaited<ReturnType<typeof attempt>>[] = [];
    for (let i = 0; i < 7; i++) {
      wrong.push(await attempt(body.username));
      unknown.push(await attempt(nobody));
    }
    for (const { res } of [...wrong, ...unknown]) {
      expect(res.statusCode).toBe(401);
      expect(res.json()).toEqual({ error: 'Wrong login or password' });
    }
    const median = (xs: { ms: number }[]) => xs.map((x) => x.ms).sort((a, b) => a - b)[3] as number;
    // Both run one argon2id verification; without the dummy hash an unknown account answers ~100x faster.
    expect(median(unknown)).toBeGreaterThan(median(wrong) * 0.4);
  });
});

describe('refresh tokens', () => {
  const refresh = (refreshToken: string) => app.inject({ method: 'POST', url: '/v1/auth/refresh', payload: { refreshToken } });

  it('rotate: the new pair works, only a hash is stored, and it is valid 30 days', async () => {
    const { pair } = await register();
    const res = await refresh(pair.refreshToken);
    expect(res.statusCode).toBe(200);
    const next = res.json() as { token: string; refreshToken: string };
    expect(next.refreshToken).not.toBe(pair.refreshToken);
    const sessionId = decodeJwt(pair.token).sid;
    expect(decodeJwt(next.token).sid).toBe(sessionId);
    const me = await app.inject({ method: 'GET', url: '/v1/users/@me', headers: bearer(next.token) });
    expect(me.statusCode).toBe(200);

    // What the rotation wrote: the session holds exactly the two tokens' SHA-256 hashes, the old
    // one marked used, the new one fresh and valid 30 days.
    const hashHex = (token: string) => createHash('sha256').update(token).digest('hex');
    const stored = await runtime.pool.query(
      `SELECT encode(token_hash, 'hex') AS hash, used_at IS NOT NULL AS used, extract(epoch FROM expires_at - now()) / 86400 AS days
       FROM refresh_tokens WHERE session_id = $1 ORDER BY used DESC`,
      [sessionId],
    );
    expect(stored.rows.map((r) => [r.hash, r.used])).toEqual([
      [hashHex(pair.refreshToken), true],
      [hashHex(next.refreshToken), false],
    ]);
    expect(Number(stored.rows[1].days)).toBeCloseTo(30, 1);

    // The token itself appears in no column of any session or refresh token row, in text or hex;
    // the same scan does find the stored hash, so it would find the token were it stored.
    const rowsContaining = async (needle: string) =>
      Number(
        (
          await runtime.pool.query(
            `SELECT (SELECT count(*) FROM refresh_tokens r WHERE strpos(r::text, $1) > 0)
                  + (SELECT count(*) FROM sessions s WHERE strpos(s::text, $1) > 0) AS n`,
            [needle],
          )
        ).rows[0].n,
      );
    expect(await rowsContaining(hashHex(next.refreshToken))).toBe(1);
    expect(await rowsContaining(next.refreshToken)).toBe(0);
    expect(await rowsContaining(Buffer.from(next.refreshToken).toString('hex'))).toBe(0);
  });

  it('presented again answer 401 and revoke the whole session, so the successor stops working too', async () => {
    const { pair } = await register();
    const next = (await refresh(pair.refreshToken)).json() as { refreshToken: string };
    const reuse = await refresh(pair.refreshToken);
    expect(reuse.statusCode).toBe(401);
    expect(reuse.json()).toEqual({ error: 'Invalid or expired refresh token' });
    expect((await refresh(next.refreshToken)).statusCode).toBe(401);
    const session = await runtime.pool.query('SELECT revoked_reason FROM sessions WHERE id = $1', [decodeJwt(pair.token).sid]);
    expect(session.rows[0].revoked_reason).toBe('refresh token reuse');
  });

  it('of two concurrent refreshes with one token, exactly one succeeds', async () => {
    const { pair } = await register();
    const answers = await Promise.all([refresh(pair.refreshToken), refresh(pair.refreshToken)]);
    expect(answers.map((a) => a.statusCode).sort()).toEqual([200, 401]);
  });

  it('answer 401 when unknown, expired or malformed, and 400 when missing', async () => {
    const { pair } = await register();
    await runtime.pool.query(`UPDATE refresh_tokens SET expires_at = now() - interval '1 second' WHERE token_hash = $1`, [
      createHash('sha256').update(pair.refreshToken).digest(),
    ]);
    expect((await refresh(pair.refreshToken)).statusCode).toBe(401);
    expect((await refresh('x'.repeat(43))).statusCode).toBe(401);
    const missing = await app.inject({ method: 'POST', url: '/v1/auth/refresh', payload: {} });
    expect(missing.statusCode).toBe(400);
    expect(missing.json().error).toMatch(/^body\.refreshToken/);
  });

  it('logout revokes the caller’s session; another user’s token changes nothing', async () => {
    const alice = (await register()).pair;
    const bob = (await register()).pair;
    const foreign = await app.inject({
      method: 'POST',
      url: '/v1/auth/logout',
      headers: bearer(alice.token),
      payload: { refreshToken: bob.refreshToken },
    });
    expect(foreign.statusCode).toBe(204);
    const unauthenticated = await app.inject({ method: 'POST', url: '/v1/auth/logout', payload: { refreshToken: alice.refreshToken } });
    expect(unauthenticated.statusCode).toBe(401);
    const own = await app.inject({
      method: 'POST',
      url: '/v1/auth/logout',
      headers: bearer(alice.token),
      payload: { refreshToken: alice.refreshToken },
    });
    expect(own.statusCode).toBe(204);
    expect((await refresh(alice.refreshToken)).statusCode).toBe(401);
    expect((await refresh(bob.refreshToken)).statusCode).toBe(200);
  });
});

describe('profile', () => {
  it('GET /v1/users/@me answers the caller with the email; GET /v1/users/:id never shows the email', async () => {
    const { pair, body } = await register();
    const me = await app.inject({ method: 'GET', url: '/v1/users/@me', headers: bearer(pair.token) });
    expect(me.statusCode).toBe(200);
    expect(me.json()).toMatchObject({ id: pair.user.id, email: body.email });
    const viewer = (await register()).pair;
    const other = await app.inject({ method: 'GET', url: `/v1/users/${pair.user.id}`, headers: bearer(viewer.token) });
    expect(other.statusCode).toBe(200);
    expect(other.json()).toMatchObject({ id: pair.user.id, username: body.username });
    expect(JSON.stringify(other.json())).not.toMatch(/email|password|argon2/i);
  });

  it('GET /v1/users/:id answers 404 for an unknown user, 400 for a malformed id, 401 without a token', async () => {
    const { pair } = await register();
    const unknown = await app.inject({ method: 'GET', url: `/v1/users/${crypto.randomUUID()}`, headers: bearer(pair.token) });
    expect(unknown.statusCode).toBe(404);
    expect(unknown.json()).toEqual({ error: 'User not found' });
    expect((await app.inject({ method: 'GET', url: '/v1/users/nope', headers: bearer(pair.token) })).statusCode).toBe(400);
    expect((await app.inject({ method: 'GET', url: `/v1/users/${pair.user.id}` })).statusCode).toBe(401);
  });

  it('GET /v1/users/:id shows offline without the custom status while no session is connected, whatever was chosen', async () => {
    const viewer = (await register()).pair;
    const never = (await register()).pair;
    const busy = (await register()).pair;
    const hidden = (await register()).pair;
    const choose = (user: typeof busy, presence: object) =>
      app.inject({ method: 'PATCH', url: '/v1/users/@me/presence', headers: bearer(user.token), payload: presence });
    expect((await choose(busy, { status: 'dnd', customStatus: 'deep work' })).statusCode).toBe(200);
    expect((await choose(hidden, { status: 'invisible', customStatus: 'secret plans' })).statusCode).toBe(200);
    const shown = async (user: typeof busy) =>
      (await app.inject({ method: 'GET', url: `/v1/users/${user.user.id}`, headers: bearer(viewer.token) })).json();
    // A new account's stored status is `online` (the column's default), yet it has never connected.
    expect(await shown(never)).toMatchObject({ id: never.user.id, status: 'offline', customStatus: '' });
    expect(await shown(busy)).toMatchObject({ status: 'offline', customStatus: '' });
    expect(await shown(hidden)).toMatchObject({ status: 'offline', customStatus: '' });
    // The owner still reads their own choice.
    const own = await app.inject({ method: 'GET', url: '/v1/users/@me', headers: bearer(hidden.token) });
    expect(own.json()).toMatchObject({ status: 'invisible', customStatus: 'secret plans' });
  });

  it('GET /v1/users/:id shows the status the gateway shows, and the custom status with it', async () => {
    const viewer = (await register()).pair;
    const busy = (await register()).pair;
    const chosen = await app.inject({
      method: 'PATCH',
      url: '/v1/users/@me/presence',
      headers: bearer(busy.token),
      payload: { status: 'dnd', customStatus: 'deep work' },
    });
    expect(chosen.statusCode).toBe(200);
    seen.set(busy.user.id, 'dnd');
    const shown = async () => (await app.inject({ method: 'GET', url: `/v1/users/${busy.user.id}`, headers: bearer(viewer.token) })).json();
    await until(async () => (await shown()).status === 'dnd', { what: 'the stand-in gateway answers' });
    expect(await shown()).toMatchObject({ id: busy.user.id, status: 'dnd', customStatus: 'deep work' });
    seen.set(busy.user.id, 'offline');
    expect(await shown()).toMatchObject({ status: 'offline', customStatus: '' });
  });

  it('PATCH /v1/users/@me changes the given fields and announces a new display name or avatar', async () => {
    const { pair } = await register();
    const patch = { displayName: 'New Name', avatarUrl: 'https://cdn.example/a.png', bio: 'hi', status: 'invisible', customStatus: 'busy' };
    const res = await app.inject({ method: 'PATCH', url: '/v1/users/@me', headers: bearer(pair.token), payload: patch });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject(patch);
    const seenByOthers = await app.inject({ method: 'GET', url: `/v1/users/${pair.user.id}`, headers: bearer(pair.token) });
    expect(seenByOthers.json().status).toBe('offline');
    const updates = (await outboxEvents(runtime, AUTH_SUBJECTS.userUpdated)).filter((e) => e.id === pair.user.id);
    expect(updates).toEqual([
      {
        id: pair.user.id,
        username: pair.user.username,
        displayName: 'New Name',
        avatarUrl: 'https://cdn.example/a.png',
        badges: ['founder'],
      },
    ]);
    // Lines as Windows ends them (CRLF) are lines too.
    const bioOnly = await app.inject({
      method: 'PATCH',
      url: '/v1/users/@me',
      headers: bearer(pair.token),
      payload: { bio: 'once\r\nagain' },
    });
    expect(bioOnly.statusCode).toBe(200);
    expect(bioOnly.json().bio).toBe('once\r\nagain');
    expect((await outboxEvents(runtime, AUTH_SUBJECTS.userUpdated)).filter((e) => e.id === pair.user.id)).toHaveLength(1);
  });

  it.each([
    { displayName: '' },
    { displayName: 'x'.repeat(33) },
    { bio: 'x'.repeat(191) },
    { status: 'away' },
    // As on the presence route: a status one chooses (online, idle, dnd, invisible), not one others see.
    { status: 'offline' },
    { bio: 'a lone carriage return\r' },
    { customStatus: 'x'.repeat(129) },
    { avatarUrl: 'not a url' },
    { avatarUrl: 'javascript:alert(document.cookie)' },
    { avatarUrl: 'data:image/svg+xml;base64,PHN2Zz48L3N2Zz4=' },
    { avatarUrl: 'file:///etc/passwd' },
    { avatarUrl: `https://cdn.example/${'a'.repeat(2030)}` },
  ])('PATCH /v1/users/@me answers 400 for %o and changes nothing', async (patch) => {
    const { pair } = await register();
    const res = await app.inject({ method: 'PATCH', url: '/v1/users/@me', headers: bearer(pair.token), payload: patch });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({ error: expect.stringMatching(/^body\./) });
    const me = await app.inject({ method: 'GET', url: '/v1/users/@me', headers: bearer(pair.token) });
    expect(me.json()).toEqual({
      ...me.json(),
      displayName: pair.user.username,
      bio: '',
      status: 'online',
      customStatus: '',
      avatarUrl: null,
    });
  });
});

describe('tokens of this app are verifiable by any service with the published keys', () => {
  it('a verifier built on the JWKS accepts them', async () => {
    const { pair } = await register();
    const verifier = createTokenVerifier({
      keys: createLocalJWKSet(keys.jwks),
      issuer: 'chat-auth',
      audience: 'chat-api',
      algorithm: 'EdDSA',
    });
    await expect(verifier.verify(pair.token)).resolves.toMatchObject({ id: pair.user.id });
  });
});
