import { configOrExit, createLogger, createPool, migrate } from '@chat/kit';
import { AuthConfig } from '../config.ts';
import { setStaffBadge } from '../domain/badges.ts';

/**
 * Operator command: grants or revokes the staff badge, which no API can.
 * `npm run staff -w @chat/auth -- grant|revoke <username | email | user id>`. Reads the service's
 * settings (DATABASE_URL); the running auth service publishes the `auth.user.updated` it writes.
 */
const [action, login] = process.argv.slice(2);
const config = configOrExit(AuthConfig, 'auth staff command');
const log = createLogger({ service: 'auth-staff', level: config.LOG_LEVEL });
if ((action !== 'grant' && action !== 'revoke') || !login) {
  log.error('usage: staff grant|revoke <username | email | user id>');
  process.exit(2);
}
const pool = createPool(config.DATABASE_URL, 1);
try {
  await migrate(pool, new URL('../../migrations', import.meta.url).pathname, log);
  const outcome = await setStaffBadge({ pool, config }, login, action === 'grant');
  if (outcome === 'unknown user') process.exitCode = 1;
  log[outcome === 'unknown user' ? 'error' : 'info']({ login, outcome }, `staff badge: ${outcome}`);
} catch (err) {
  log.error({ err }, 'staff command failed');
  process.exitCode = 1;
} finally {
  await pool.end();
}
