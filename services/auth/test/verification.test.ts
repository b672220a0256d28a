import { createHash } from 'node:crypto';
import { TokenPair } from '@chat/contracts';
import { afterAll, describe, expect, it } from 'vitest';
import { generatePrivateJwk } from '../src/domain/keys.ts';
import { bearer, newAccount, startAuth, startMailbox } from './helpers.ts';

const mailbox = await startMailbox();
const { app, runtime } = await startAuth({ env: { EMAIL_VERIFICATION: 'true', SMTP_URL: mailbox.url } });
afterAll(async () => {
  await app.close();
  await runtime.close();
  await mailbox.close();
});

const post = (url: string, payload: object) => app.inject({ method: 'POST', url, payload });
const usersNamed = async (username: string) =>
  Number((await runtime.pool.query('SELECT count(*) AS n FROM users WHERE lower(username) = lower($1)', [username])).rows[0].n);

async function startRegistration(account = newAccount()) {
  const res = await post('/v1/auth/register', account);
  expect(res.statusCode).toBe(202);
  const { pendingId } = res.json() as { pendingId: string };
  const mail = await mailbox.mailTo(account.email);
  return { account, pendingId, code: mail.code };
}

const wrongCode = (code: string) => String((Number(code) + 1) % 1_000_000).padStart(6, '0');

describe('registration with email verification', () => {
  it('answers 202 {pendingId}, emails a 6-digit code stored only as an HMAC, and creates no account yet', async () => {
    const { account, pendingId, code } = await startRegistration();
    expect(code).toMatch(/^\d{6}$/);
    expect(await usersNamed(account.username)).toBe(0);
    const row = (await runtime.pool.query('SELECT code_hash FROM pending_registrations WHERE id = $1', [pendingId])).rows[0];
    expect(row.code_hash).toHaveLength(32);
    expect(row.code_hash.equals(createHash('sha256').update(code).digest())).toBe(false);
  });

  it('creates the account on the right code (200 with a token pair), once', async () => {
    const { account, pendingId, code } = await startRegistration();
    const res = await post('/v1/auth/verify-email', { pendingId, code });
    expect(res.statusCode).toBe(200);
    const pair = TokenPair.parse(res.json());
    expect(pair.user).toMatchObject({ username: account.username, email: account.email });
    expect((await app.inject({ method: 'GET', url: '/v1/users/@me', headers: bearer(pair.token) })).statusCode).toBe(200);
    const again = await post('/v1/auth/verify-email', { pendingId, code });
    expect(again.statusCode).toBe(404);
    expect(await usersNamed(account.username)).toBe(1);
  });

  it('ends the registration after 5 wrong codes, even for the right code afterwards', async () => {
    const { account, pendingId, code } = await startRegistration();
    for (let i = 0; i < 5; i++) {
      const res = await post('/v1/auth/verify-email', { pendingId, code: wrongCode(code) });
      expect(res.statusCode).toBe(400);
      expect(res.json()).toEqual({ error: 'Invalid or expired code' });
    }
    expect((await post('/v1/auth/verify-email', { pendingId, code })).statusCode).toBe(400);
    expect(await usersNamed(account.username)).toBe(0);
    const resend = await post('/v1/auth/resend-code', { pendingId });
    expect(resend.statusCode).toBe(400);
  });

  it('refuses an expired code', async () => {
    const { account, pendingId, code } = await startRegistration();
    await runtime.pool.query(`UPDATE pending_registrations SET code_expires_at = now() - interval '1 second' WHERE id = $1`, [pendingId]);
    expect((await post('/v1/auth/verify-email', { pendingId, code })).statusCode).toBe(400);
    expect(await usersNamed(account.username)).toBe(0);
  });

  it('resends a fresh code at most once a minute; the old code stops working', async () => {
    const { account, pendingId, code } = await startRegistration();
    const tooSoon = await post('/v1/auth/resend-code', { pendingId });
    expect(tooSoon.statusCode).toBe(429);
    expect(Number(tooSoon.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(tooSoon.json().error).toMatch(/^Too many requests/);
    await runtime.pool.query(`UPDATE pending_registrations SET code_sent_at = now() - interval '61 seconds' WHERE id = $1`, [pendingId]);
    const resend = await post('/v1/auth/resend-code', { pendingId });
    expect(resend.statusCode).toBe(202);
    expect(resend.json()).toEqual({});
    const fresh = (await mailbox.mailTo(account.email)).code;
    if (fresh !== code) expect((await post('/v1/auth/verify-email', { pendingId, code })).statusCode).toBe(400);
    expect((await post('/v1/auth/verify-email', { pendingId, code: fresh })).statusCode).toBe(200);
  });

  it('answers 409 at verification when the username was taken meanwhile', async () => {
    const first = await startRegistration();
    const second = await startRegistration({ ...newAccount(), username: first.account.username.toUpperCase() });
    expect((await post('/v1/auth/verify-email', { pendingId: first.pendingId, code: first.code })).statusCode).toBe(200);
    const late = await post('/v1/auth/verify-email', { pendingId: second.pendingId, code: second.code });
    expect(late.statusCode).toBe(409);
    expect(late.json()).toEqual({ error: 'Username is taken' });
    expect(await usersNamed(first.account.username)).toBe(1);
  });

  it('answers 404 for an unknown registration and 400 for a malformed code', async () => {
    expect((await post('/v1/auth/verify-email', { pendingId: crypto.randomUUID(), code: '123456' })).statusCode).toBe(404);
    expect((await post('/v1/auth/resend-code', { pendingId: crypto.randomUUID() })).statusCode).toBe(404);
    const malformed = await post('/v1/auth/verify-email', { pendingId: crypto.randomUUID(), code: '12ab' });
    expect(malformed.statusCode).toBe(400);
    expect(malformed.json().error).toMatch(/^body\.code/);
  });
});

describe('wrong verification codes of one address, across its registrations', () => {
  const wrongTries = async (pendingId: string, code: string, tries: number) => {
    for (let i = 0; i < tries; i++) {
      const res = await post('/v1/auth/verify-email', { pendingId, code });
      expect(res.statusCode).toBe(400);
      expect(res.json()).toEqual({ error: 'Invalid or expired code' });
    }
  };
  const failuresOf = async (address: string) =>
    Number((await runtime.pool.query('SELECT count(*) AS n FROM verification_failures WHERE address = lower($1)', [address])).rows[0].n);

  it('past 20 in a day (four registrations of 5 tries), the next code is 16 digits and verifies, however many wrong tries come', async () => {
    const { email } = newAccount();
    for (let round = 0; round < 4; round++) {
      const { pendingId, code } = await startRegistration({ ...newAccount(), email });
      expect(code).toMatch(/^\d{6}$/);
      await wrongTries(pendingId, wrongCode(code), 5);
    }
    expect(await failuresOf(email)).toBe(20);
    const owner = { ...newAccount(), email };
    const res = await post('/v1/auth/register', owner);
    expect(res.statusCode).toBe(202);
    const { pendingId } = res.json() as { pendingId: string };
    const mail = await mailbox.mailTo(email);
    expect(mail.code).toMatch(/^\d{16}$/);
    expect(mail.raw).toContain('Someone entered many wrong codes today, so this code is longer.');
    // More than a 6-digit code's 5 tries: whoever guesses cannot spend the owner's code.
    await wrongTries(pendingId, `${mail.code.slice(0, 15)}${(Number(mail.code[15]) + 1) % 10}`, 6);
    const verified = await post('/v1/auth/verify-email', { pendingId, code: mail.code });
    expect(verified.statusCode).toBe(200);
    expect(TokenPair.parse(verified.json()).user).toMatchObject({ username: owner.username, email });
    // The wrong 16-digit ones were not recorded: past the count they add nothing.
    expect(await failuresOf(email)).toBe(20);
  });

  it('judges the registrations of one address one at a time: wrong codes sent at once stop at the limit', async () => {
    const { email } = newAccount();
    const started = [];
    for (let i = 0; i < 5; i++) started.push(await startRegistration({ ...newAccount(), email }));
    await runtime.pool.query('INSERT INTO verification_failures (address) SELECT lower($1) FROM generate_series(1, 19)', [email]);
    const answers = await Promise.all(
      started.map(({ pendingId, code }) => post('/v1/auth/verify-email', { pendingId, code: wrongCode(code) })),
    );
    expect(answers.map((res) => res.statusCode)).toEqual([400, 400, 400, 400, 400]);
    expect(await failuresOf(email)).toBe(20);
  });

  it('past 20 in a day, a right 6-digit code issued before no longer verifies', async () => {
    const { account, pendingId, code } = await startRegistration();
    await runtime.pool.query('INSERT INTO verification_failures (address) SELECT lower($1) FROM generate_series(1, 20)', [account.email]);
    await wrongTries(pendingId, code, 1);
    expect(await usersNamed(account.username)).toBe(0);
  });
});

describe('password reset', () => {
  async function verifiedUser() {
    const { account, pendingId, code } = await startRegistration();
    const pair = TokenPair.parse((await post('/v1/auth/verify-email', { pendingId, code })).json());
    return { account, pair };
  }

  it('answers 202 {} for an unknown email and stores nothing', async () => {
    const before = (await runtime.pool.query('SELECT count(*)::int AS n FROM password_resets')).rows[0].n;
    const res = await post('/v1/auth/forgot-password', { email: 'nobody@example.test' });
    expect(res.statusCode).toBe(202);
    expect(res.json()).toEqual({});
    expect((await runtime.pool.query('SELECT count(*)::int AS n FROM password_resets')).rows[0].n).toBe(before);
  });

  it('emails a code; the right code sets the password once and ends every session', async () => {
    const { account, pair } = await verifiedUser();
    const res = await post('/v1/auth/forgot-password', { email: account.email.toUpperCase() });
    expect(res.statusCode).toBe(202);
    const { code } = await mailbox.mailTo(account.email);
    const wrong = await post('/v1/auth/reset-password', { email: account.email, code: wrongCode(code), password: 'brand new password' });
    expect(wrong.statusCode).toBe(400);
    const right = await post('/v1/auth/reset-password', { email: account.email, code, password: 'brand new password' });
    expect(right.statusCode).toBe(200);
    expect((await post('/v1/auth/login', { login: account.username, password: account.password })).statusCode).toBe(401);
    expect((await post('/v1/auth/login', { login: account.username, password: 'brand new password' })).statusCode).toBe(200);
    expect((await post('/v1/auth/refresh', { refreshToken: pair.refreshToken })).statusCode).toBe(401);
    const reused = await post('/v1/auth/reset-password', { email: account.email, code, password: 'another password' });
    expect(reused.statusCode).toBe(400);
  });

  it('ends the reset after 5 wrong codes, and answers an unknown email like a wrong code', async () => {
    const { account } = await verifiedUser();
    await post('/v1/auth/forgot-password', { email: account.email });
    const { code } = await mailbox.mailTo(account.email);
    for (let i = 0; i < 5; i++)
      await post('/v1/auth/reset-password', { email: account.email, code: wrongCode(code), password: 'brand new password' });
    expect((await post('/v1/auth/reset-password', { email: account.email, code, password: 'brand new password' })).statusCode).toBe(400);
    expect((await post('/v1/auth/login', { login: account.username, password: account.password })).statusCode).toBe(200);
    const unknown = await post('/v1/auth/reset-password', { email: 'nobody@example.test', code, password: 'brand new password' });
    expect(unknown.statusCode).toBe(400);
    expect(unknown.json()).toEqual({ error: 'Invalid or expired code' });
  });
});

describe('when the SMTP server is down', () => {
  it('answers 503 to a registration, without leaking why', async () => {
    const down = await startAuth({ runtime, env: { EMAIL_VERIFICATION: 'true', SMTP_URL: 'smtp://127.0.0.1:1' } });
    try {
      const res = await down.app.inject({ method: 'POST', url: '/v1/auth/register', payload: newAccount() });
      expect(res.statusCode).toBe(503);
      expect(res.json()).toEqual({ error: 'Service unavailable' });
    } finally {
      await down.app.close();
    }
  });
});

describe('emailed codes across a signing key rotation', () => {
  it('stay valid: a code mailed under the old signing key works once the new one signs, and on a replica still signing with the old one', async () => {
    const [k1, k2] = [await generatePrivateJwk('EdDSA'), await generatePrivateJwk('EdDSA')];
    const env = { EMAIL_VERIFICATION: 'true', SMTP_URL: mailbox.url };
    // The documented rotation: [K1]; then [K1, K2] everywhere, signing with K2 (a replica mid-deploy still signs with K1).
    const old = await startAuth({ runtime, privateJwks: [k1], env });
    const rotated = await startAuth({ runtime, privateJwks: [k1, k2], env: { ...env, JWT_SIGNING_KID: k2.kid as string } });
    const lagging = await startAuth({ runtime, privateJwks: [k1, k2], env });
    const send = (auth: { app: typeof app }, url: string, payload: object) => auth.app.inject({ method: 'POST', url, payload });
    const register = async (auth: { app: typeof app }) => {
      const account = newAccount();
      const { pendingId } = (await send(auth, '/v1/auth/register', account)).json() as { pendingId: string };
      return { account, pendingId, code: (await mailbox.mailTo(account.email)).code };
    };
    try {
      const underK1 = await register(old);
      const verified = await send(rotated, '/v1/auth/verify-email', { pendingId: underK1.pendingId, code: underK1.code });
      expect(verified.statusCode).toBe(200);
      expect(TokenPair.parse(verified.json()).user.username).toBe(underK1.account.username);

      const underK2 = await register(rotated);
      expect((await send(lagging, '/v1/auth/verify-email', { pendingId: underK2.pendingId, code: underK2.code })).statusCode).toBe(200);

      expect((await send(old, '/v1/auth/forgot-password', { email: underK1.account.email })).statusCode).toBe(202);
      const { code } = await mailbox.mailTo(underK1.account.email);
      const reset = await send(rotated, '/v1/auth/reset-password', { email: underK1.account.email, code, password: 'rotated password' });
      expect(reset.statusCode).toBe(200);
      const failures = await runtime.pool.query('SELECT count(*)::int AS n FROM password_reset_failures WHERE user_id = $1', [
        TokenPair.parse(verified.json()).user.id,
      ]);
      expect(failures.rows[0].n).toBe(0);
      const login = await send(rotated, '/v1/auth/login', { login: underK1.account.username, password: 'rotated password' });
      expect(login.statusCode).toBe(200);
    } finally {
      await Promise.all([old.app.close(), rotated.app.close(), lagging.app.close()]);
    }
  });
});
