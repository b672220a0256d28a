import { AUTH_SUBJECTS, TokenPair } from '@chat/contracts';
import { afterAll, describe, expect, it } from 'vitest';
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
