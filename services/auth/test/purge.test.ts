import { TokenPair } from '@chat/contracts';
import { afterAll, describe, expect, it } from 'vitest';
import { purgeOnce } from '../src/domain/purge.ts';
import { newAccount, startAuth } from './helpers.ts';

const { app, runtime, config } = await startAuth();
afterAll(async () => {
  await app.close();
  await runtime.close();
});

const rows = async (sql: string, params: unknown[] = []) => (await runtime.pool.query(sql, params)).rows;

async function register() {
  const res = await app.inject({ method: 'POST', url: '/v1/auth/register', payload: newAccount('purge') });
  expect(res.statusCode).toBe(201);
  return TokenPair.parse(res.json());
}

describe('purging expired auth records', () => {
  it('removes expired refresh tokens, spent sessions, old registrations, codes and counters, and keeps what a rule still reads', async () => {
    const live = await register();
    const spent = await register();
    const [liveSession] = await rows('SELECT id FROM sessions WHERE user_id = $1', [live.user.id]);
    const [spentSession] = await rows('SELECT id FROM sessions WHERE user_id = $1', [spent.user.id]);
    // The spent session was revoked and its token has expired; the live one is untouched.
    await runtime.pool.query('UPDATE sessions SET revoked_at = now() WHERE id = $1', [spentSession.id]);
    await runtime.pool.query("UPDATE refresh_tokens SET expires_at = now() - interval '1 second' WHERE session_id = $1", [spentSession.id]);
    const pending = (id: string, age: string) =>
      runtime.pool.query(
        `INSERT INTO pending_registrations (id, username, email, password_hash, display_name, code_hash, code_expires_at, created_at)
         VALUES ($1::uuid, $2, $3, 'x', 'x', '\\x00', now(), now() - $4::interval)`,
        [id, `p${id.slice(0, 8)}`, `${id}@example.test`, age],
      );
    const oldPending = crypto.randomUUID();
    const freshPending = crypto.randomUUID();
    await pending(oldPending, '25 hours');
    await pending(freshPending, '1 hour');
    await runtime.pool.query(
      `INSERT INTO password_resets (user_id, code_hash, code_expires_at) VALUES ($1, '\\x00', now() - interval '2 days'), ($2, '\\x00', now())`,
      [spent.user.id, live.user.id],
    );
    await runtime.pool.query(
      "INSERT INTO password_reset_failures (user_id, failed_at) VALUES ($1, now() - interval '25 hours'), ($1, now())",
      [live.user.id],
    );
    await runtime.pool.query(
      "INSERT INTO mail_sends (address, sent_at) VALUES ('a@example.test', now() - interval '2 hours'), ('a@example.test', now())",
    );
    await runtime.pool.query(
      "INSERT INTO verification_failures (address, failed_at) VALUES ('purge@example.test', now() - interval '25 hours'), ('purge@example.test', now())",
    );

    await runtime.pool.query(
      `INSERT INTO login_failures (login_key, failed_at)
       VALUES ('\\x01', now() - interval '16 minutes'), ('\\x01', now() - interval '14 minutes')`,
    );

    await runtime.pool.query(
      `INSERT INTO registration_keys (key, pending_id, created_at)
       VALUES ('purge-old', gen_random_uuid(), now() - interval '25 hours'), ('purge-fresh', gen_random_uuid(), now())`,
    );

    const counts = await purgeOnce({ pool: runtime.pool, config, log: runtime.log });

    expect(counts).toMatchObject({
      refreshTokens: 1,
      sessions: 1,
      pendingRegistrations: 1,
      passwordResets: 1,
      resetFailures: 1,
      verificationFailures: 1,
      mailSends: 1,
      loginFailures: 1,
      registrationKeys: 1,
    });
    expect((await rows("SELECT key FROM registration_keys WHERE key LIKE 'purge-%'")).map((r) => r.key)).toEqual(['purge-fresh']);
    expect(await rows('SELECT id FROM sessions WHERE id = ANY($1)', [[liveSession.id, spentSession.id]])).toEqual([{ id: liveSession.id }]);
    expect((await rows('SELECT id FROM pending_registrations WHERE id = ANY($1)', [[oldPending, freshPending]])).map((r) => r.id)).toEqual([
      freshPending,
    ]);
    expect(await rows('SELECT user_id FROM password_resets WHERE user_id = ANY($1)', [[live.user.id, spent.user.id]])).toEqual([
      { user_id: live.user.id },
    ]);
    expect(await rows('SELECT count(*)::int AS n FROM password_reset_failures WHERE user_id = $1', [live.user.id])).toEqual([{ n: 1 }]);
    expect(await rows("SELECT count(*)::int AS n FROM login_failures WHERE login_key = '\\x01'")).toEqual([{ n: 1 }]);
    // The live session still refreshes: nothing a rule reads was removed.
    const refreshed = await app.inject({ method: 'POST', url: '/v1/auth/refresh', payload: { refreshToken: live.refreshToken } });
    expect(refreshed.statusCode).toBe(200);
  });
});
