import { AUTH_SUBJECTS, TokenPair } from '@chat/contracts';
import { until } from '@chat/testkit';
import { afterAll, describe, expect, it } from 'vitest';
import { LOGIN_FAILURE_LIMIT } from '../src/domain/login-limit.ts';
import { bearer, newAccount, outboxEvents, startAuth, startMailbox } from './helpers.ts';

/**
 * POST /v1/auth/register retried under its Idempotency-Key (DESIGN: every creating POST accepts
 * one), as a client does after a 502 or 504. The first token pair is stored nowhere: the retry
 * proves itself with the same username, email and password and gets a session of its own.
 */
const mailbox = await startMailbox();
const plain = await startAuth();
const verifying = await startAuth({ env: { EMAIL_VERIFICATION: 'true', SMTP_URL: mailbox.url } });
afterAll(async () => {
  for (const { app, runtime } of [plain, verifying]) {
    await app.close();
    await runtime.close();
  }
  await mailbox.close();
});

const register = (auth: typeof plain, body: object, key?: string) =>
  auth.app.inject({ method: 'POST', url: '/v1/auth/register', payload: body, headers: key ? { 'idempotency-key': key } : {} });
const accountsNamed = async (username: string) =>
  Number((await plain.runtime.pool.query('SELECT count(*) AS n FROM users WHERE username = $1', [username])).rows[0].n);
const login = (loginString: string, password: string) =>
  plain.app.inject({ method: 'POST', url: '/v1/auth/login', payload: { login: loginString, password } });

type Answer = Awaited<ReturnType<typeof register>>;

/** Connections of the app's database waiting on a lock, read outside any transaction (which would keep one snapshot). */
const waitingOnLocks = async (auth: typeof plain) =>
  (
    await auth.runtime.pool.query(
      "SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'",
    )
  ).rows[0].n as number;

/**
 * Sends `bodies` at once under one key while the test holds back every write of a key (a share
 * lock on the table: reads go on), and lets them go once each one waits on a lock (or has been
 * answered): each has then looked for the key before any of them recorded it, the race a
 * registration must survive, however the event loop and the pool order them.
 */
async function atOnceUnderKey(auth: typeof plain, key: string, bodies: object[]): Promise<Answer[]> {
  const holder = await auth.runtime.pool.connect();
  try {
    await holder.query('BEGIN');
    await holder.query('LOCK TABLE registration_keys IN SHARE MODE');
    let answered = 0;
    const answers = Promise.all(bodies.map((body) => register(auth, body, key).finally(() => answered++)));
    await until(async () => (await waitingOnLocks(auth)) + answered === bodies.length, { what: 'every registration waits on a lock' });
    await holder.query('COMMIT');
    return await answers;
  } finally {
    await holder.query('ROLLBACK').catch(() => {});
    holder.release();
  }
}

describe('a registration retried with its Idempotency-Key', () => {
  it('answers the retry 201 with the same account and a working pair of its own, and creates one account and one event', async () => {
    const account = newAccount('retry');
    const key = crypto.randomUUID();
    const first = await register(plain, account, key);
    const retry = await register(plain, account, key);
    expect([first.statusCode, retry.statusCode]).toEqual([201, 201]);
    expect(first.headers['idempotent-replayed']).toBeUndefined();
    expect(retry.headers['idempotent-replayed']).toBe('true');
    const [a, b] = [TokenPair.parse(first.json()), TokenPair.parse(retry.json())];
    expect(b.user).toEqual(a.user);
    expect(b.refreshToken).not.toBe(a.refreshToken);
    const me = await plain.app.inject({ method: 'GET', url: '/v1/users/@me', headers: bearer(b.token) });
    expect(me.json()).toMatchObject({ id: a.user.id });
    expect(await accountsNamed(account.username)).toBe(1);
    const registered = await outboxEvents(plain.runtime, AUTH_SUBJECTS.userRegistered);
    expect(registered.filter((e) => e.id === a.user.id)).toHaveLength(1);
  });

  it('answers 422 to the key with another password, username or email, and creates nothing', async () => {
    const account = newAccount('retry');
    const key = crypto.randomUUID();
    expect((await register(plain, account, key)).statusCode).toBe(201);
    const other = newAccount('other');
    for (const body of [
      { ...account, password: 'another horse battery' },
      { ...account, username: other.username },
      { ...account, email: other.email },
    ]) {
      const res = await register(plain, body, key);
      expect({ status: res.statusCode, body: res.json() }).toEqual({
        status: 422,
        body: { error: 'This Idempotency-Key was already used for a different request' },
      });
    }
    expect(await accountsNamed(other.username)).toBe(0);
    // Without the key the same body is a second registration of a taken name.
    expect((await register(plain, account)).statusCode).toBe(409);
  });

  it('refuses a malformed key with 400 and creates nothing', async () => {
    const account = newAccount('badkey');
    const res = await register(plain, account, 'x'.repeat(256));
    expect(res.statusCode).toBe(400);
    expect(await accountsNamed(account.username)).toBe(0);
  });

  it('answers a retry of a registration waiting for its code with the same pendingId, and mails no second code', async () => {
    const account = newAccount('pending');
    const key = crypto.randomUUID();
    const first = await register(verifying, account, key);
    expect(first.statusCode).toBe(202);
    await mailbox.mailTo(account.email);
    const retry = await register(verifying, account, key);
    expect({ status: retry.statusCode, body: retry.json(), replayed: retry.headers['idempotent-replayed'] }).toEqual({
      status: 202,
      body: first.json(),
      replayed: 'true',
    });
    const pending = await verifying.runtime.pool.query('SELECT count(*)::int AS n FROM pending_registrations WHERE username = $1', [
      account.username,
    ]);
    expect(pending.rows).toEqual([{ n: 1 }]);
    // register waits for its mail to be handed over: none went out for the retry.
    expect(mailbox.received.filter((m) => m.to.includes(account.email))).toEqual([]);
  });
});

describe('registrations under one key at the same time', () => {
  it('make one account: another body waiting for the key is answered 422 and creates nothing', async () => {
    const [a, b] = [newAccount('racea'), newAccount('raceb')];
    const answers = await atOnceUnderKey(plain, crypto.randomUUID(), [a, b]);
    expect(answers.map((res) => res.statusCode).sort()).toEqual([201, 422]);
    const [won, refused] = answers[0]?.statusCode === 201 ? answers : [...answers].reverse();
    expect(refused?.json()).toEqual({ error: 'This Idempotency-Key was already used for a different request' });
    const created = TokenPair.parse(won?.json()).user;
    const loser = created.username === a.username ? b : a;
    expect([await accountsNamed(created.username), await accountsNamed(loser.username)]).toEqual([1, 0]);
  });

  it('answer one body sent three times with one account, the waiting ones as its retries (never "Username is taken")', async () => {
    const account = newAccount('racesame');
    const answers = await atOnceUnderKey(plain, crypto.randomUUID(), [account, account, account]);
    expect(answers.map((res) => res.statusCode)).toEqual([201, 201, 201]);
    const users = answers.map((res) => TokenPair.parse(res.json()).user);
    expect(new Set(users.map((u) => u.id)).size).toBe(1);
    expect(answers.filter((res) => res.headers['idempotent-replayed'] === 'true')).toHaveLength(2);
    expect(await accountsNamed(account.username)).toBe(1);
    const registered = await outboxEvents(plain.runtime, AUTH_SUBJECTS.userRegistered);
    expect(registered.filter((e) => e.id === users[0]?.id)).toHaveLength(1);
  });

  it('with email verification on, make one registration waiting for its code, and mail one code', async () => {
    const account = newAccount('racepending');
    const answers = await atOnceUnderKey(verifying, crypto.randomUUID(), [account, account]);
    expect(answers.map((res) => res.statusCode)).toEqual([202, 202]);
    expect(answers[1]?.json()).toEqual(answers[0]?.json());
    const pending = await verifying.runtime.pool.query('SELECT id FROM pending_registrations WHERE username = $1', [account.username]);
    expect(pending.rows).toEqual([{ id: answers[0]?.json().pendingId }]);
    await mailbox.mailTo(account.email);
    expect(mailbox.received.filter((m) => m.to.includes(account.email))).toEqual([]);
  });
});

describe('a registration retried under its key, as a login', () => {
  /** An account registered under `key`, then `failures` wrong logins with its username. */
  async function registeredThenFailed(key: string, failures: number) {
    const account = newAccount('retrylock');
    expect((await register(plain, account, key)).statusCode).toBe(201);
    for (let i = 0; i < failures; i++) expect((await login(account.username, `wrong password ${i}`)).statusCode).toBe(401);
    return account;
  }

  it("is refused with login's 429 while the username's login is locked, for the right password too", async () => {
    const key = crypto.randomUUID();
    const account = await registeredThenFailed(key, LOGIN_FAILURE_LIMIT);
    const locked = await login(account.username, account.password);
    expect(locked.statusCode).toBe(429);
    for (const password of [account.password, 'another horse battery']) {
      const res = await register(plain, { ...account, password }, key);
      expect({ status: res.statusCode, body: res.json() }).toEqual({ status: 429, body: locked.json() });
      expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
    }
    const sessions = await plain.runtime.pool.query(
      'SELECT count(*)::int AS n FROM sessions s JOIN users u ON u.id = s.user_id WHERE u.username = $1',
      [account.username],
    );
    expect(sessions.rows).toEqual([{ n: 1 }]);
  });

  it('counts a wrong password as a failed login, answered 422 as another body is', async () => {
    const key = crypto.randomUUID();
    const account = await registeredThenFailed(key, LOGIN_FAILURE_LIMIT - 1);
    const wrong = await register(plain, { ...account, password: 'another horse battery' }, key);
    expect({ status: wrong.statusCode, body: wrong.json() }).toEqual({
      status: 422,
      body: { error: 'This Idempotency-Key was already used for a different request' },
    });
    expect((await login(account.username, account.password)).statusCode).toBe(429);
  });

  it("with the right password clears the failures of the account's username and email, as a login does", async () => {
    const key = crypto.randomUUID();
    const account = await registeredThenFailed(key, LOGIN_FAILURE_LIMIT - 1);
    for (let i = 0; i < 3; i++) expect((await login(account.email, `wrong password ${i}`)).statusCode).toBe(401);
    const retry = await register(plain, account, key);
    expect(retry.statusCode).toBe(201);
    const failures = await plain.runtime.pool.query(
      "SELECT count(*)::int AS n FROM login_failures WHERE login_key IN (sha256(convert_to(lower($1), 'UTF8')), sha256(convert_to(lower($2), 'UTF8')))",
      [account.username, account.email],
    );
    expect(failures.rows).toEqual([{ n: 0 }]);
  });
});
