import { TokenPair } from '@chat/contracts';
import { afterAll, describe, expect, it } from 'vitest';
import { newAccount, startAuth, startMailbox } from './helpers.ts';

const mailbox = await startMailbox();
const { app, runtime } = await startAuth({ env: { EMAIL_VERIFICATION: 'true', SMTP_URL: mailbox.url, MAILS_PER_ADDRESS_PER_HOUR: '3' } });
afterAll(async () => {
  await app.close();
  await runtime.close();
  await mailbox.close();
});

const post = (url: string, payload: object) => app.inject({ method: 'POST', url, payload });
const count = async (sql: string, params: unknown[]) => Number((await runtime.pool.query(sql, params)).rows[0].n);

/** An account that exists (registered and verified). */
async function existingAccount() {
  const account = newAccount('known');
  const res = await post('/v1/auth/register', account);
  expect(res.statusCode).toBe(202);
  const { code } = await mailbox.mailTo(account.email);
  const verified = await post('/v1/auth/verify-email', { pendingId: res.json().pendingId, code });
  expect(verified.statusCode).toBe(200);
  TokenPair.parse(verified.json());
  return account;
}

describe('registration with email verification on', () => {
  it('answers a known email exactly like a new one (202 {pendingId}) and mails its owner a notice, not a code', async () => {
    const known = await existingAccount();
    const fresh = newAccount('fresh');
    const forKnown = await post('/v1/auth/register', { ...newAccount('other'), email: known.email.toUpperCase() });
    const forNew = await post('/v1/auth/register', fresh);
    expect(forKnown.statusCode).toBe(202);
    expect(forNew.statusCode).toBe(202);
    expect(Object.keys(forKnown.json())).toEqual(Object.keys(forNew.json()));
    expect(forKnown.json()).toEqual({ pendingId: expect.stringMatching(/^[0-9a-f-]{36}$/) });
    const notice = await mailbox.mailTo(known.email);
    expect(notice.raw).toContain('Someone tried to register with your email address');
    expect(notice.code).toBe('');
    expect((await mailbox.mailTo(fresh.email)).code).toMatch(/^\d{6}$/);
    // No code completes the registration of a known email, and no second account appears.
    for (const code of ['000000', '123456']) {
      const res = await post('/v1/auth/verify-email', { pendingId: forKnown.json().pendingId, code });
      expect(res.statusCode).toBe(400);
      expect(res.json()).toEqual({ error: 'Invalid or expired code' });
    }
    expect(await count('SELECT count(*) AS n FROM users WHERE lower(email) = lower($1)', [known.email])).toBe(1);
  });

  it('still answers 409 for a taken username (usernames are public)', async () => {
    const known = await existingAccount();
    const res = await post('/v1/auth/register', { ...newAccount('dup'), username: known.username });
    expect(res.statusCode).toBe(409);
    expect(res.json()).toEqual({ error: 'Username is taken' });
  });

  it('sends an address at most MAILS_PER_ADDRESS_PER_HOUR mails, whatever asks for them', async () => {
    const victim = `victim_${Date.now()}@example.test`;
    const answers = [];
    for (let i = 0; i < 5; i++) answers.push(await post('/v1/auth/register', { ...newAccount('flood'), email: victim }));
    expect(answers.map((a) => a.statusCode)).toEqual([202, 202, 202, 202, 202]);
    // Register answers after the SMTP server took the mail, so every mail sent has arrived by now.
    expect(mailbox.received.filter((m) => m.to.includes(victim))).toHaveLength(3);
    expect(await count('SELECT count(*) AS n FROM mail_sends WHERE address = $1', [victim])).toBe(3);
  });
});
