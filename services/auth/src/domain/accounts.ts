import { randomBytes } from 'node:crypto';
import { AUTH_SUBJECTS, type LoginBody, type RegisterBody, type TokenPair } from '@chat/contracts';
import { AppError, enqueueEvent, notFound, type Queryable, tooManyRequests, unauthorized, withTx } from '@chat/kit';
import { v7 as uuidv7 } from 'uuid';
import type { z } from 'zod';
import * as codes from '../db/codes.ts';
import * as loginFailures from '../db/login-failures.ts';
import { recordRegistrationKey } from '../db/registration-keys.ts';
import * as users from '../db/users.ts';
import type { AuthDomainDeps } from '../deps.ts';
import { badgePolicy } from './badges.ts';
import { claimLoginAttempt } from './login-limit.ts';
import { sendCapped } from './mail-limit.ts';
import { codeMail, type Mail, registrationAttemptMail } from './mailer.ts';
import { holdRegistrationKey, retriedRegistration } from './registration-retry.ts';
import {
  CODE_FAILURE_WINDOW_MS,
  CODE_RESEND_INTERVAL_MS,
  CODE_TTL_MS,
  type CodeVerdict,
  codeExhausted,
  hashEmailCode,
  hashPassword,
  judgeCode,
  LONG_CODE_DIGITS,
  newEmailCode,
  passwordMatches,
  presentedCodeHashes,
  SHORT_CODE_DIGITS,
} from './secrets.ts';
import { startSession } from './sessions.ts';

type Pair = z.input<typeof TokenPair>;
type NewAccount = { username: string; email: string; passwordHash: string; displayName: string };

/** The one error of a code that cannot be used, whatever the reason (no hint for guessers). */
export const invalidCode = () => new AppError(400, 'Invalid or expired code');

/** Creates the account, its founder decision, its event and its first session, in the caller's transaction. */
async function createAccount(
  deps: AuthDomainDeps,
  tx: Queryable,
  account: NewAccount,
  requestId: string,
  emailVerified: boolean,
): Promise<Pair> {
  const isFounder = await users.takeFounderSlot(tx, deps.config.FOUNDER_LIMIT);
  const row = await users.insertUser(tx, { id: uuidv7(), ...account, isFounder, emailVerified });
  const policy = badgePolicy(deps.config);
  await enqueueEvent(tx, AUTH_SUBJECTS.userRegistered, users.toUserEvent(row, policy), requestId);
  const tokens = await startSession(deps, tx, row.id);
  return { ...tokens, user: users.toSelfUser(row, policy) };
}

/** `replayed`: the answer to a retry under the first attempt's Idempotency-Key (registration-retry.ts). */
export type Registration = ({ kind: 'account'; pair: Pair } | { kind: 'pending'; pendingId: string }) & { replayed?: boolean };

/**
 * Without email verification the account exists at once; with it, a code goes out and the account
 * waits. With verification a known email is answered exactly like a new one (202 {pendingId},
 * the same work: password hash, pending row, one mail), and its owner is told by mail instead of
 * getting a code, so register reveals nothing about which addresses have accounts.
 *
 * Under an Idempotency-Key one registration is made: a retry whose first attempt committed is
 * answered without hashing a new password, and one that ran beside its first attempt waits for
 * the key, then is answered as its retry (registration-retry.ts).
 */
export async function register(deps: AuthDomainDeps, body: RegisterBody, requestId: string, key?: string): Promise<Registration> {
  const retried = async () => (key === undefined ? undefined : retriedRegistration(deps, key, body));
  const outcome = (await retried()) ?? (await registerNew(deps, body, requestId, key)) ?? (await retried());
  // What the registration under the key made went away before this request could be its retry.
  if (!outcome) throw new AppError(409, 'A request with this Idempotency-Key is still being processed; retry later');
  return outcome;
}

/**
 * A registration as a new one, in one transaction that holds its key: undefined when a
 * registration under the key is there, committed while this one waited for the key.
 */
async function registerNew(deps: AuthDomainDeps, body: RegisterBody, requestId: string, key?: string): Promise<Registration | undefined> {
  const verifying = deps.config.EMAIL_VERIFICATION;
  // Hashed before the transaction, so that it holds its connection and the key for a few statements only.
  const passwordHash = await hashPassword(body.password);
  const account: NewAccount = { username: body.username, email: body.email, passwordHash, displayName: body.displayName ?? body.username };
  const made = await withTx(deps.pool, async (tx) => {
    if (key !== undefined && !(await holdRegistrationKey(tx, key))) return undefined;
    // Checked under the key, so a request that waited for its first attempt is not told its own name is taken.
    const { emailTaken, ownerEmail } = await users.assertUsernameAndEmailFree(tx, body.username, body.email, verifying);
    if (!verifying) {
      const pair = await createAccount(deps, tx, account, requestId, false);
      if (key !== undefined) await recordRegistrationKey(tx, key, { userId: pair.user.id, pendingId: null });
      return { registration: { kind: 'account', pair } as const };
    }
    const { pendingId, mail } = await createPendingRegistration(deps, tx, account, emailTaken ? (ownerEmail ?? account.email) : undefined);
    if (key !== undefined) await recordRegistrationKey(tx, key, { userId: null, pendingId });
    return { registration: { kind: 'pending', pendingId } as const, mail };
  });
  if (made?.mail) await sendCapped(deps, made.mail);
  return made?.registration;
}

/**
 * The registration waiting for its code, and the mail that goes out once it is committed: the code,
 * or for a known email a notice to `ownerEmail`, the address as its owner registered it.
 */
async function createPendingRegistration(
  deps: AuthDomainDeps,
  tx: Queryable,
  account: NewAccount,
  ownerEmail: string | undefined,
): Promise<{ pendingId: string; mail: Mail }> {
  const pendingId = uuidv7();
  const { code, longCode } = await newVerificationCode(deps, tx, account.email);
  const emailTaken = ownerEmail !== undefined;
  await codes.insertPendingRegistration(tx, {
    id: pendingId,
    ...account,
    // A known email's registration gets a code nobody is ever sent: no code completes it.
    codeHash: emailTaken ? randomBytes(32) : hashEmailCode(deps.keys.codeSecret, 'verify-email', pendingId, code),
    codeExpiresAt: new Date(Date.now() + CODE_TTL_MS),
    emailTaken,
    longCode,
  });
  return { pendingId, mail: emailTaken ? registrationAttemptMail(ownerEmail) : codeMail(account.email, 'verify-email', code) };
}

/**
 * Each registration gets 5 tries of its 6-digit code, and an address may be registered again and
 * again: the address's wrong codes over a rolling day (VERIFY_FAILURES_PER_DAY, across its
 * registrations) bound the guessing. Past it no 6-digit code verifies, and the codes issued are 16
 * digits, accepted however many wrong tries came, so that the guessing cannot keep the address's
 * owner from verifying (as password-reset.ts).
 */
function verificationGuessed(deps: AuthDomainDeps, db: Queryable, address: string): Promise<boolean> {
  return codes.countVerificationFailures(db, address, CODE_FAILURE_WINDOW_MS).then((n) => n >= deps.config.VERIFY_FAILURES_PER_DAY);
}

/** A verification code for `address`: 16 digits while it is past its day's wrong codes. */
async function newVerificationCode(deps: AuthDomainDeps, db: Queryable, address: string): Promise<{ code: string; longCode: boolean }> {
  const longCode = await verificationGuessed(deps, db, address);
  return { code: newEmailCode(longCode ? LONG_CODE_DIGITS : SHORT_CODE_DIGITS), longCode };
}

/** A right code creates the account (409 if its name or email was taken meanwhile); a wrong one counts. */
export async function verifyEmail(deps: AuthDomainDeps, pendingId: string, code: string, requestId: string): Promise<Pair> {
  const outcome = await withTx(deps.pool, async (tx): Promise<{ verdict: CodeVerdict; pair?: Pair }> => {
    const pending = await codes.lockPendingRegistration(tx, pendingId);
    if (!pending) throw notFound('Pending registration');
    if (!pending.longCode) {
      // The address's registrations are judged one at a time: several at once would each see the
      // count below the limit and all be tried.
      await codes.lockVerificationsOf(tx, pending.email);
      if (await verificationGuessed(deps, tx, pending.email)) return { verdict: 'exhausted' };
    }
    const verdict = judgeCode(pending, presentedCodeHashes(deps.keys.codeSecrets, 'verify-email', pendingId, code));
    // Past the day's count a wrong 16-digit code adds nothing: it is not recorded, so that the rows stay few.
    if (verdict === 'wrong' && !pending.longCode) {
      await codes.countPendingFailure(tx, pendingId);
      await codes.recordVerificationFailure(tx, pending.email);
    }
    if (verdict !== 'ok') return { verdict };
    await codes.deletePendingRegistration(tx, pendingId);
    return { verdict, pair: await createAccount(deps, tx, pending, requestId, true) };
  });
  if (!outcome.pair) throw invalidCode();
  return outcome.pair;
}

/** A fresh code for a registration still alive, at most once a minute. */
export async function resendCode(deps: AuthDomainDeps, pendingId: string): Promise<void> {
  const mail = await withTx(deps.pool, async (tx) => {
    const pending = await codes.lockPendingRegistration(tx, pendingId);
    if (!pending) throw notFound('Pending registration');
    if (codeExhausted(pending)) {
      throw new AppError(400, 'This registration can no longer be verified; register again');
    }
    const wait = CODE_RESEND_INTERVAL_MS - pending.sinceSentMs;
    if (wait > 0) throw tooManyRequests(wait / 1000, 'Too many requests, a code can be resent once a minute');
    const { code, longCode } = await newVerificationCode(deps, tx, pending.email);
    const codeHash = pending.emailTaken ? randomBytes(32) : hashEmailCode(deps.keys.codeSecret, 'verify-email', pendingId, code);
    await codes.replacePendingCode(tx, pendingId, { codeHash, codeExpiresAt: new Date(Date.now() + CODE_TTL_MS), longCode });
    return pending.emailTaken ? registrationAttemptMail(pending.email) : codeMail(pending.email, 'verify-email', code);
  });
  await sendCapped(deps, mail);
}

/**
 * A wrong password and an unknown account answer alike, in comparable time, after the same
 * statements; both count against the login string, which past its limit is refused before any
 * password is checked (login-limit.ts). The right password clears that string's count.
 */
export async function login(deps: AuthDomainDeps, body: LoginBody): Promise<Pair> {
  await claimLoginAttempt(deps, body.login);
  const candidate = await users.findLoginCandidate(deps.pool, body.login);
  if (!(await passwordMatches(body.password, candidate?.passwordHash)) || !candidate) throw unauthorized('Wrong login or password');
  const { user } = candidate;
  const tokens = await withTx(deps.pool, async (tx) => {
    // A reset that committed while the password was checked: the old one opens nothing.
    if (!(await users.holdPassword(tx, user.id, candidate.passwordHash))) throw unauthorized('Wrong login or password');
    await loginFailures.clearLoginFailures(tx, body.login);
    return startSession(deps, tx, user.id);
  });
  return { ...tokens, user: users.toSelfUser(user, badgePolicy(deps.config)) };
}
