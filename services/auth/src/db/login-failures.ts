import { exec, type Pool, pipelinedTx, type Queryable } from '@chat/kit';

/**
 * The key a login string is counted under, as SQL over `text`: the SHA-256 of the string as
 * PostgreSQL's lower() folds it, the very fold findLoginCandidate matches accounts with. Every
 * spelling that finds one account (ALICE, alice, and strings only lower() folds alike, such as a
 * dotted capital I for i) is then one key; a key folded in JavaScript would fold some of them
 * apart and hand out extra tries. Hashed, as the login field sometimes holds a mistyped password.
 */
const loginKey = (text: string) => `sha256(convert_to(lower(${text}), 'UTF8'))`;

/**
 * Counts one attempt for `login` unless it already has `limit` failures within `windowMs`; then
 * answers the seconds until enough of them leave the window for the next attempt to be allowed
 * (the `limit`-th most recent one). Attempts for one login string queue on an advisory lock taken
 * in the same transaction, sent in one write, so however many arrive at once at most `limit`
 * are counted per window: none is lost, none gets past the limit.
 */
export async function reserveLoginAttempt(pool: Pool, login: string, windowMs: number, limit: number): Promise<number | undefined> {
  const [, refused] = await pipelinedTx(pool, [
    { sql: "SELECT pg_advisory_xact_lock(hashtext('login:' || lower($1)))", params: [login] },
    {
      sql: `WITH recent AS (
              SELECT failed_at FROM login_failures
              WHERE login_key = ${loginKey('$1')} AND failed_at > now() - make_interval(secs => $2 / 1000.0)
              ORDER BY failed_at DESC LIMIT $3
            ), refused AS (
              SELECT extract(epoch FROM min(failed_at) + make_interval(secs => $2 / 1000.0) - now())::float8 AS "waitSeconds"
              FROM recent HAVING count(*) >= $3
            ), counted AS (
              INSERT INTO login_failures (login_key) SELECT ${loginKey('$1')} WHERE NOT EXISTS (SELECT 1 FROM refused)
            )
            SELECT "waitSeconds" FROM refused`,
      params: [login, windowMs, limit],
    },
  ]);
  const row = refused?.[0] as { waitSeconds: number } | undefined;
  return row?.waitSeconds;
}

/** Forgets the failures of one login string: its password was just given right. */
export async function clearLoginFailures(db: Queryable, login: string): Promise<void> {
  await exec(db, `DELETE FROM login_failures WHERE login_key = ${loginKey('$1')}`, [login]);
}

/** Forgets the failures of both strings that name the account, its username and its email. */
export async function clearAccountLoginFailures(db: Queryable, userId: string): Promise<void> {
  await exec(
    db,
    `DELETE FROM login_failures f USING users u
     WHERE u.id = $1 AND f.login_key IN (${loginKey('u.username')}, ${loginKey('u.email')})`,
    [userId],
  );
}
