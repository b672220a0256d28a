import { randomUUID } from 'node:crypto';
import { TokenPair } from '@chat/contracts';
import { countRoundTrips } from '@chat/testkit';
import { afterAll, describe, expect, it } from 'vitest';
import { login } from '../src/domain/accounts.ts';
import { LOGIN_FAILURE_LIMIT } from '../src/domain/login-limit.ts';
import { createSmtpMailer } from '../src/domain/mailer.ts';
import { newAccount, startAuth, startMailbox } from './helpers.ts';

const mailbox = await startMailbox();
const { app, runtime, keys, config } = await startAuth({ env: { SMTP_URL: mailbox.url, MAILS_PER_ADDRESS_PER_HOUR: '100' } });
const mailer = createSmtpMailer({ smtpUrl: config.SMTP_URL, from: config.MAIL_FROM });
afterAll(async () => {
  mailer.close();
  await app.close();
  await runtime.close();
  await mailbox.close();
});

const LOCKED = { error: 'Too many failed logins for this account; try again later' };
const WRONG = { error: 'Wrong login or password' };

const post = (url: string, payload: object) => app.inject({ method: 'POST', url, payload });
const attempt = (loginString: string, password: string) => post('/v1/auth/login', { login: loginString, password });

async function account() {
  const body = newAccount('login');
  const res = await post('/v1/auth/register', body);
  expect(res.statusCode).toBe(201);
  return { ...body, id: TokenPair.parse(res.json()).user.id };
}

// The key as the service computes it (db/login-failures.ts): tests read and back-date rows by it.
const KEY = "sha256(convert_to(lower($1), 'UTF8'))";
const failuresOf = async (loginString: string) =>
  (await runtime.pool.query(`SELECT count(*)::int AS n FROM login_failures WHERE login_key = ${KEY}`, [loginString])).rows[0].n;

/** `n` wrong passwords in a row, each answered 401. */
async function failTimes(loginString: string, n: number) {
  for (let i = 0; i < n; i++) {
    const res = await attempt(loginString, 'wrong password');
    expect(res.statusCode).toBe(401);
    expect(res.json()).toEqual(WRONG);
  }
}

describe('failed logins per login string over a rolling 15 minutes', () => {
  it('after 10 wrong passwords in any letter case answers 429 with Retry-After, and refuses even the right password', async () => {
    const user = await account();
    await failTimes(user.username.toUpperCase(), LOGIN_FAILURE_LIMIT / 2);
    await failTimes(user.username, LOGIN_FAILURE_LIMIT / 2);

    // However long ten password checks took: the failures a minute old, so the wait is known.
    await runtime.pool.query(`UPDATE login_failures SET failed_at = now() - interval '1 minute' WHERE login_key = ${KEY}`, [user.username]);
    const locked = await attempt(user.username, user.password);
    expect(locked.statusCode).toBe(429);
    expect(locked.json()).toEqual(LOCKED);
    // Until the oldest failure is 15 minutes old.
    expect(Number(locked.headers['retry-after'])).toBeGreaterThanOrEqual(839);
    expect(Number(locked.headers['retry-after'])).toBeLessThanOrEqual(840);
    // The refused attempt is not counted, and no session was opened (the registration's only).
    expect(await failuresOf(user.username)).toBe(LOGIN_FAILURE_LIMIT);
    const sessions = await runtime.pool.query('SELECT count(*)::int AS n FROM sessions WHERE user_id = $1', [user.id]);
    expect(sessions.rows[0].n).toBe(1);
  });

  it('clears the count of a login string when its right password is given before the limit', async () => {
    const user = await account();
    await failTimes(user.email, LOGIN_FAILURE_LIMIT - 1);
    expect((await attempt(user.email, user.password)).statusCode).toBe(200);
    expect(await failuresOf(user.email)).toBe(0);
    // Ten would have been reached here without the clearing.
    await failTimes(user.email, 1);
    expect(await failuresOf(user.email)).toBe(1);
  });

  it('counts the username and the email of one account apart (10 tries each per window)', async () => {
    const user = await account();
    await failTimes(user.username, LOGIN_FAILURE_LIMIT);
    expect((await attempt(user.username, user.password)).statusCode).toBe(429);
    expect((await attempt(user.email, user.password)).statusCode).toBe(200);
  });

  it('lets a login through once enough failures leave the window, and Retry-After says when', async () => {
    const user = await account();
    await failTimes(user.username, LOGIN_FAILURE_LIMIT);
    await runtime.pool.query(`UPDATE login_failures SET failed_at = now() - interval '14 minutes' WHERE login_key = ${KEY}`, [
      user.username,
    ]);
    const locked = await attempt(user.username, user.password);
    expect(locked.statusCode).toBe(429);
    expect(Number(locked.headers['retry-after'])).toBeGreaterThanOrEqual(59);
    expect(Number(locked.headers['retry-after'])).toBeLessThanOrEqual(60);

    // The oldest failure leaves the window: nine are left, and the right password gets in.
    await runtime.pool.query(
      `UPDATE login_failures SET failed_at = failed_at - interval '61 seconds'
       WHERE ctid = (SELECT ctid FROM login_failures WHERE login_key = ${KEY} ORDER BY failed_at LIMIT 1)`,
      [user.username],
    );
    const through = await attempt(user.username, user.password);
    expect(through.statusCode).toBe(200);
    expect(TokenPair.parse(through.json()).user.id).toBe(user.id);
  });

  it('counts and refuses an unknown login exactly like a known one: the same answers after the same statements', async () => {
    const deps = { pool: runtime.pool, config, keys, mailer, log: runtime.log };
    const attempts = async (loginString: string) => {
      const outcomes = [];
      for (let i = 0; i <= LOGIN_FAILURE_LIMIT; i++) {
        const { result, statements } = await countRoundTrips(() =>
          login(deps, { login: loginString, password: 'wrong password' }).then(
            () => ({ status: 200 }),
            (err: { status?: number; message?: string }) => ({ status: err.status, message: err.message }),
          ),
        );
        outcomes.push({ ...result, statements });
      }
      return outcomes;
    };
    const user = await account();
    const known = await attempts(user.username);
    const unknown = await attempts(`nobody_${randomUUID().slice(0, 8)}`);
    expect(unknown).toEqual(known);
    expect(known.map((o) => o.status)).toEqual([...Array(LOGIN_FAILURE_LIMIT).fill(401), 429]);
    // A refused attempt does not even look the account up, let alone check the password.
    expect(known.at(-1)?.statements.some((s) => s.includes('FROM users'))).toBe(false);
  });

  it('counts every one of concurrent wrong attempts, and lets no more than 10 of them check the password', async () => {
    const user = await account();
    const answers = await Promise.all(Array.from({ length: 16 }, () => attempt(user.email, 'wrong password')));
    const statuses = answers.map((a) => a.statusCode).sort();
    expect(statuses).toEqual([...Array(LOGIN_FAILURE_LIMIT).fill(401), ...Array(16 - LOGIN_FAILURE_LIMIT).fill(429)]);
    expect(await failuresOf(user.email)).toBe(LOGIN_FAILURE_LIMIT);
  });

  it('opens both logins of the account again after a successful password reset', async () => {
    const user = await account();
    for (const loginString of [user.username, user.email]) {
      await runtime.pool.query(`INSERT INTO login_failures (login_key) SELECT ${KEY} FROM generate_series(1, $2)`, [
        loginString,
        LOGIN_FAILURE_LIMIT,
      ]);
      expect((await attempt(loginString, user.password)).statusCode).toBe(429);
    }
    expect((await post('/v1/auth/forgot-password', { email: user.email })).statusCode).toBe(202);
    const { code } = await mailbox.mailTo(user.email);
    expect((await post('/v1/auth/reset-password', { email: user.email, code, password: 'a new password' })).statusCode).toBe(200);

    expect(await failuresOf(user.username)).toBe(0);
    expect(await failuresOf(user.email)).toBe(0);
    expect((await attempt(user.username, 'a new password')).statusCode).toBe(200);
    expect((await attempt(user.email, 'a new password')).statusCode).toBe(200);
  });
});
