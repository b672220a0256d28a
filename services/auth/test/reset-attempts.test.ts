import { randomUUID } from 'node:crypto';
import { TokenPair } from '@chat/contracts';
import { countRoundTrips } from '@chat/testkit';
import { afterAll, describe, expect, it } from 'vitest';
import { createSmtpMailer } from '../src/domain/mailer.ts';
import { forgotPassword, resetPassword } from '../src/domain/password-reset.ts';
import { hashEmailCode, newEmailCode } from '../src/domain/secrets.ts';
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

const post = (url: string, payload: object) => app.inject({ method: 'POST', url, payload });
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const wrongCode = (code: string) => String((Number(code) + 1) % 1_000_000).padStart(6, '0');

async function account() {
  const body = newAccount('reset');
  const res = await post('/v1/auth/register', body);
  expect(res.statusCode).toBe(201);
  return { ...body, id: TokenPair.parse(res.json()).user.id };
}

/** Asks for a reset code and returns it; the previous code's minute is made to have passed (no waiting). */
async function newResetCode(email: string, userId: string): Promise<string> {
  await runtime.pool.query("UPDATE password_resets SET code_sent_at = now() - interval '2 minutes' WHERE user_id = $1", [userId]);
  expect((await post('/v1/auth/forgot-password', { email })).statusCode).toBe(202);
  return (await mailbox.mailTo(email)).code;
}

const storedCode = async (userId: string) =>
  (await runtime.pool.query('SELECT code_hash, code_sent_at FROM password_resets WHERE user_id = $1', [userId])).rows[0];

describe('password-reset attempts per account over a rolling day', () => {
  const wrongCodes = async (email: string, code: string, tries: number) => {
    for (let i = 0; i < tries; i++) {
      const wrong = await post('/v1/auth/reset-password', { email, code, password: 'a stranger’s password' });
      expect(wrong.statusCode).toBe(400);
      expect(wrong.json()).toEqual({ error: 'Invalid or expired code' });
    }
  };
  const failuresOf = async (userId: string) =>
    (await runtime.pool.query('SELECT count(*)::int AS n FROM password_reset_failures WHERE user_id = $1', [userId])).rows[0].n;

  it('after 20 wrong codes (four fresh codes of 5 tries), accepts no 6-digit code', async () => {
    const user = await account();
    for (let round = 0; round < 4; round++) {
      const code = await newResetCode(user.email, user.id);
      await wrongCodes(user.email, wrongCode(code), 5);
    }
    expect(await failuresOf(user.id)).toBe(20);
    // A right 6-digit code, issued before the count was reached, no longer resets.
    const code = newEmailCode();
    const codeHash = hashEmailCode(keys.codeSecret, 'reset-password', user.id, code);
    await runtime.pool.query(
      "UPDATE password_resets SET code_hash = $2, failed_attempts = 0, code_expires_at = now() + interval '5 minutes' WHERE user_id = $1",
      [user.id, codeHash],
    );
    await wrongCodes(user.email, code, 1);
    // The password is unchanged: the old one still logs in.
    expect((await post('/v1/auth/login', { login: user.email, password: user.password })).statusCode).toBe(200);
  });

  it('then mails a 16-digit code that resets, however many wrong codes come meanwhile', async () => {
    const user = await account();
    await runtime.pool.query('INSERT INTO password_reset_failures (user_id) SELECT $1 FROM generate_series(1, 20)', [user.id]);
    expect((await post('/v1/auth/forgot-password', { email: user.email })).statusCode).toBe(202);
    const mail = await mailbox.mailTo(user.email);
    const code = mail.code;
    expect(code).toMatch(/^\d{16}$/);
    expect(mail.raw).toContain('Someone entered many wrong codes today, so this code is longer.');
    // Whoever guesses cannot spend it: more than a 6-digit code's 5 tries, in both lengths.
    await wrongCodes(user.email, wrongCode(code.slice(0, 6)), 3);
    await wrongCodes(user.email, `${code.slice(0, 15)}${(Number(code[15]) + 1) % 10}`, 5);
    // Not recorded: past the count they add nothing, and the rows stay few.
    expect(await failuresOf(user.id)).toBe(20);

    const done = await post('/v1/auth/reset-password', { email: user.email, code, password: 'the owner’s new password' });
    expect(done.statusCode).toBe(200);
    expect(await failuresOf(user.id)).toBe(0);
    expect(await storedCode(user.id)).toBeUndefined();
    expect((await post('/v1/auth/login', { login: user.email, password: 'the owner’s new password' })).statusCode).toBe(200);
  });

  it('keeps the live code when its address can get no more mail this hour (the new code could not be sent)', async () => {
    const user = await account();
    const code = await newResetCode(user.email, user.id);
    const before = await storedCode(user.id);
    await runtime.pool.query('INSERT INTO mail_sends (address) SELECT lower($1) FROM generate_series(1, 100)', [user.email]);
    await runtime.pool.query("UPDATE password_resets SET code_sent_at = now() - interval '2 minutes' WHERE user_id = $1", [user.id]);
    expect((await post('/v1/auth/forgot-password', { email: user.email })).statusCode).toBe(202);
    expect((await storedCode(user.id)).code_hash).toEqual(before.code_hash);
    const done = await post('/v1/auth/reset-password', { email: user.email, code, password: 'a new password' });
    expect(done.statusCode).toBe(200);
  });

  it('counts only the last day, and a successful reset clears the count', async () => {
    const user = await account();
    // 20 failures, all older than a day: they no longer count.
    await runtime.pool.query(
      "INSERT INTO password_reset_failures (user_id, failed_at) SELECT $1, now() - interval '25 hours' FROM generate_series(1, 20)",
      [user.id],
    );
    const code = await newResetCode(user.email, user.id);
    expect(
      (await post('/v1/auth/reset-password', { email: user.email, code: wrongCode(code), password: 'a new password' })).statusCode,
    ).toBe(400);
    const done = await post('/v1/auth/reset-password', { email: user.email, code, password: 'a new password' });
    expect(done.statusCode).toBe(200);
    const count = await runtime.pool.query('SELECT count(*)::int AS n FROM password_reset_failures WHERE user_id = $1', [user.id]);
    expect(count.rows[0].n).toBe(0);
  });
});

describe('forgot-password', () => {
  const deps = { pool: runtime.pool, config, keys, mailer, log: runtime.log };
  /** The statements one request sends before it answers (the mail goes out after). */
  const statementsOf = async (email: string) => {
    const { roundTrips, statements } = await countRoundTrips(() => forgotPassword(deps, email));
    return statements.slice(0, roundTrips);
  };

  it('sends the same statements for a known and an unknown email, issuing a code only to the account', async () => {
    const user = await account();
    const known = await statementsOf(user.email);
    const unknown = await statementsOf(`nobody_${randomUUID()}@example.test`);
    expect(unknown).toEqual(known);
    expect(known).toHaveLength(2);
    expect(await mailbox.mailTo(user.email)).toMatchObject({ code: expect.stringMatching(/^\d{6}$/) });
    const issued = await storedCode(user.id);
    expect(issued).toBeDefined();

    // Within the minute nothing is issued, after the same statements again.
    expect(await statementsOf(user.email)).toEqual(known);
    expect((await storedCode(user.id)).code_hash).toEqual(issued.code_hash);
    const resets = await runtime.pool.query('SELECT count(*)::int AS n FROM password_resets WHERE user_id = $1', [user.id]);
    expect(resets.rows[0].n).toBe(1);
  });
});

describe('a login racing a password reset', () => {
  it('opens no session when it checked the old password while the reset was committing', async () => {
    const user = await account();
    const sessionsOf = async () =>
      (await runtime.pool.query('SELECT count(*)::int AS n FROM sessions WHERE user_id = $1', [user.id])).rows[0].n as number;
    const before = await sessionsOf();
    // Stands in for a reset that changed the password and has not committed: the login reads the old one meanwhile.
    const reset = await runtime.pool.connect();
    try {
      await reset.query('BEGIN');
      await reset.query("UPDATE users SET password_hash = 'set by a reset' WHERE id = $1", [user.id]);
      const login = post('/v1/auth/login', { login: user.username, password: user.password });
      const early = await Promise.race([login.then((res) => res.statusCode), sleep(1_000).then(() => 'still waiting')]);
      // It waits for the reset to commit rather than open a session the reset's revocation would miss.
      expect(early).toBe('still waiting');
      await reset.query('COMMIT');
      expect((await login).json()).toEqual({ error: 'Wrong login or password' });
    } finally {
      reset.release();
    }
    expect(await sessionsOf()).toBe(before);
  });
});

describe('reset-password', () => {
  const deps = { pool: runtime.pool, config, keys, mailer, log: runtime.log };
  /** The statements one reset sends, and what it answers (a right answer would be undefined). */
  const attempt = async (email: string) => {
    const { result, statements } = await countRoundTrips(() =>
      resetPassword(deps, email, '123456', 'a new password').then(
        () => undefined,
        (err: { status?: number; message?: string }) => ({ status: err.status, message: err.message }),
      ),
    );
    return { result, statements };
  };

  it('sends the same statements for a known email without a pending code and an unknown email, and changes nothing', async () => {
    const user = await account();
    const known = await attempt(user.email);
    const unknown = await attempt(`nobody_${randomUUID()}@example.test`);
    expect(unknown).toEqual(known);
    expect(known.result).toEqual({ status: 400, message: 'Invalid or expired code' });
    expect(known.statements).toHaveLength(4);

    const failures = await runtime.pool.query('SELECT count(*)::int AS n FROM password_reset_failures WHERE user_id = $1', [user.id]);
    expect(failures.rows[0].n).toBe(0);
    expect(await storedCode(user.id)).toBeUndefined();
    expect((await post('/v1/auth/login', { login: user.email, password: user.password })).statusCode).toBe(200);
  });
});
