import { createHash, createHmac, randomBytes, randomInt, timingSafeEqual } from 'node:crypto';
import { PASSWORD_HASH_OPTIONS } from '@chat/contracts';
import { type Algorithm, hash, verify } from '@node-rs/argon2';

// Algorithm.Argon2id is an ambient const enum that verbatimModuleSyntax cannot import: hence the cast.
const ARGON2_OPTIONS = { ...PASSWORD_HASH_OPTIONS, algorithm: PASSWORD_HASH_OPTIONS.algorithm as Algorithm };

export function hashPassword(password: string): Promise<string> {
  return hash(password, ARGON2_OPTIONS);
}

// Unknown accounts are checked against this hash, so that they cost the same time as a wrong password.
const dummyHash = hashPassword(randomBytes(16).toString('hex'));

/** Checks a password against the account's hash, or against a dummy one when there is no account. */
export async function passwordMatches(password: string, passwordHash: string | undefined): Promise<boolean> {
  const matches = await verify(passwordHash ?? (await dummyHash), password).catch(() => false);
  return matches && passwordHash !== undefined;
}

/** 256 random bits, URL-safe; only its hash is stored. */
export function newRefreshToken(): { token: string; hash: Buffer } {
  const token = randomBytes(32).toString('base64url');
  return { token, hash: hashRefreshToken(token) };
}

export function hashRefreshToken(token: string): Buffer {
  return createHash('sha256').update(token).digest();
}

export const SHORT_CODE_DIGITS = 6;
/** A reset code issued while someone is guessing the account's codes: too many to guess, so it needs no try limit. */
export const LONG_CODE_DIGITS = 16;

/** A code of `digits` decimal digits from the CSPRNG. */
export function newEmailCode(digits = SHORT_CODE_DIGITS): string {
  let code = '';
  while (code.length < digits) code += randomInt(0, 10).toString();
  return code;
}

/**
 * The stored form of an emailed code: an HMAC bound to what it is for, so that a leaked table
 * does not reveal codes (a plain hash of six digits is brute-forced at once).
 */
export function hashEmailCode(secret: Buffer, purpose: 'verify-email' | 'reset-password', subjectId: string, code: string): Buffer {
  return createHmac('sha256', secret).update(`${purpose}:${subjectId}:${code}`).digest();
}

/**
 * What a presented code is checked against: its HMAC under each key's secret (`SigningKeys.codeSecrets`),
 * as a code issued under the previous signing key stays valid after a rotation.
 */
export function presentedCodeHashes(
  secrets: Buffer[],
  purpose: 'verify-email' | 'reset-password',
  subjectId: string,
  code: string,
): Buffer[] {
  return secrets.map((secret) => hashEmailCode(secret, purpose, subjectId, code));
}

/** How many wrong codes end a registration or a reset. */
export const MAX_CODE_ATTEMPTS = 5;
export const CODE_TTL_MS = 15 * 60_000;
export const CODE_RESEND_INTERVAL_MS = 60_000;
/** Wrong codes are counted over a rolling day: per account for resets, per address for verification. */
export const CODE_FAILURE_WINDOW_MS = 86_400_000;

/**
 * Five wrong tries end a code's registration or reset, even for the right code. A 16-digit code has
 * no such limit: guessing it is hopeless, and a limit would let the guesser spend its owner's code.
 */
export const codeExhausted = (stored: { failedAttempts: number; longCode: boolean }) =>
  !stored.longCode && stored.failedAttempts >= MAX_CODE_ATTEMPTS;

export type CodeVerdict = 'ok' | 'wrong' | 'expired' | 'exhausted';

/** The one rule for an emailed code: attempts left, not expired, equal (to any of its `presented` forms) in constant time. */
export function judgeCode(
  stored: { codeHash: Buffer; codeExpiresAt: string; failedAttempts: number; longCode: boolean },
  presented: Buffer[],
): CodeVerdict {
  if (codeExhausted(stored)) return 'exhausted';
  if (Date.parse(stored.codeExpiresAt) <= Date.now()) return 'expired';
  // Every form is compared, so the time does not tell which key matched.
  const equal = presented.filter((hash) => timingSafeEqual(stored.codeHash, hash));
  return equal.length > 0 ? 'ok' : 'wrong';
}
