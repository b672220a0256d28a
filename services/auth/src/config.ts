import { baseConfig, databaseConfig, env, tokenConfig } from '@chat/kit';
import type { JWK } from 'jose';
import { z } from 'zod';

/**
 * A JWK Set of private keys, as JWT_PRIVATE_KEYS holds it. A problem is named without the value or
 * a piece of it (JSON.parse's own message quotes the text around the error: a private `d`).
 */
export const privateKeySet = z.string().transform((text, ctx): JWK[] => {
  const refuse = (message: string) => {
    ctx.addIssue({ code: 'custom', message });
    return z.NEVER;
  };
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return refuse('not JSON: must be a JWK Set {"keys": [...]} (a PEM is not accepted)');
  }
  const keys = (parsed as { keys?: unknown } | null)?.keys;
  if (!Array.isArray(keys) || keys.length === 0) return refuse('must be a JWK Set with at least one private key: {"keys": [{...}]}');
  const complete = (key: unknown) =>
    ['kty', 'kid', 'd'].every((member) => typeof (key as Record<string, unknown> | null)?.[member] === 'string');
  if (!keys.every(complete)) return refuse('every key needs its kty, a kid and its private part d');
  return keys as JWK[];
});

export const AuthConfig = baseConfig
  .extend(databaseConfig.shape)
  .extend(tokenConfig.shape)
  .extend({
    PORT: env.port(3001),
    DATABASE_URL: databaseConfig.shape.DATABASE_URL.default('postgres://postgres@127.0.0.1:5432/auth'),
    /**
     * The signing keys: a JWK Set of private keys, each with a `kid` and the configured algorithm.
     * All of them are published; JWT_SIGNING_KID (default: the first) signs. Rotate by adding the
     * new key, then signing with it, then removing the old one once its tokens (and emailed codes) have expired.
     */
    JWT_PRIVATE_KEYS: privateKeySet.optional(),
    JWT_SIGNING_KID: z.string().optional(),
    /** Where a generated development key set is kept when JWT_PRIVATE_KEYS is not given. */
    JWT_KEY_FILE: z.string().default('.data/auth-jwt-keys.json'),
    ACCESS_TOKEN_TTL_SECONDS: env.int(15 * 60, 1),
    REFRESH_TOKEN_TTL_DAYS: env.int(30, 1),
    /** On: registration answers 202 {pendingId} and emails a code; the account exists after verify-email. */
    EMAIL_VERIFICATION: env.bool(false),
    SMTP_URL: z.string().default('smtp://127.0.0.1:1025'),
    MAIL_FROM: z.string().default('Chat <no-reply@chat.localhost>'),
    /** Wrong password-reset codes an account may get over a rolling day; past it only 16-digit codes are issued and accepted. */
    RESET_FAILURES_PER_DAY: env.int(20, 1),
    /** The same for wrong verification codes of one email address, across its registrations. */
    VERIFY_FAILURES_PER_DAY: env.int(20, 1),
    /** Mails one address may get per rolling hour (codes, notices); more are not sent. */
    MAILS_PER_ADDRESS_PER_HOUR: env.int(5, 1),
    /** How often expired registrations, refresh tokens, sessions, codes and counters are purged. */
    PURGE_INTERVAL_SECONDS: env.int(3600, 1),
    /** How many of the first accounts get the founder badge. */
    FOUNDER_LIMIT: env.int(1000),
    /** Accounts registered before this instant (ISO 8601) get the early-supporter badge; unset: nobody. */
    EARLY_SUPPORTER_BEFORE: z.iso
      .datetime({ offset: true })
      .optional()
      .transform((v) => (v ? new Date(v) : undefined)),
    /** Owning a server with at least this many members earns the server-owner badge. */
    SERVER_OWNER_BADGE_MEMBERS: env.int(100, 1),
  })
  .superRefine((config, ctx) => {
    // Every verifier remembers a revoked session for ACCESS_TOKEN_MAX_TTL_SECONDS: a longer-lived
    // token of it would be accepted again by all of them once they forgot it.
    if (config.ACCESS_TOKEN_TTL_SECONDS > config.ACCESS_TOKEN_MAX_TTL_SECONDS)
      ctx.addIssue({
        code: 'custom',
        path: ['ACCESS_TOKEN_TTL_SECONDS'],
        message: `is above ACCESS_TOKEN_MAX_TTL_SECONDS (${config.ACCESS_TOKEN_MAX_TTL_SECONDS}): raise that on every service first`,
      });
    const keys = config.JWT_PRIVATE_KEYS;
    if (!keys) return;
    const path = ['JWT_PRIVATE_KEYS'];
    const other = keys.find((key) => key.alg && key.alg !== config.JWT_ALGORITHM);
    if (other)
      ctx.addIssue({ code: 'custom', path, message: `key ${other.kid} is ${other.alg}, but JWT_ALGORITHM is ${config.JWT_ALGORITHM}` });
    if (config.JWT_SIGNING_KID && !keys.some((key) => key.kid === config.JWT_SIGNING_KID))
      ctx.addIssue({ code: 'custom', path, message: `no key has JWT_SIGNING_KID ${config.JWT_SIGNING_KID}` });
  });

export type AuthConfig = z.output<typeof AuthConfig>;
