import { z } from 'zod';
import { Id, ImageUrl, multiLineText, oneLineText, shownName } from './common.ts';
import { ChosenStatus } from './presence.ts';
import { defineRpc } from './rpc.ts';

/** Schemas of the auth area: request bodies, events and RPC messages. */

/** Names that read as a mention of many (Discord reserves them too), in any letter case. */
const RESERVED_USERNAMES = new Set(['everyone', 'here']);

/**
 * 2-32 letters, digits, '_' and '.', never two periods in a row (as Discord); unique ignoring case.
 * Checked when a name is chosen only: names read back are plain strings, so a rule added later
 * does not make an existing account unreadable.
 */
export const Username = z
  .string()
  .min(2)
  .max(32)
  .regex(/^[A-Za-z0-9_.]+$/, "only letters, digits, '_' and '.'")
  .refine((name) => !name.includes('..'), 'cannot contain two consecutive periods')
  .refine((name) => !RESERVED_USERNAMES.has(name.toLowerCase()), 'is reserved');
export const Email = z.email({ error: 'must be a valid email address' }).max(254);
export const Password = z.string().min(8).max(128);
export const DisplayName = shownName(1, 32);
/**
 * A code sent by email (verification and password reset): 6 digits, or 16 when someone has been
 * guessing the address's or the account's codes (auth's README).
 */
export const EmailCode = z.string().regex(/^(\d{6}|\d{16})$/, 'must be 6 or 16 digits');

export const RegisterBody = z.object({ username: Username, email: Email, password: Password, displayName: DisplayName.optional() });
export type RegisterBody = z.infer<typeof RegisterBody>;

/** The answer to a registration while email verification is on. */
export const PendingRegistration = z.object({ pendingId: Id }).meta({ id: 'PendingRegistration' });

export const VerifyEmailBody = z.object({ pendingId: Id, code: EmailCode });
export const ResendCodeBody = z.object({ pendingId: Id });

/** `login` is a username or an email address. */
export const LoginBody = z.object({ login: z.string().min(1).max(254), password: z.string().min(1).max(128) });
export type LoginBody = z.infer<typeof LoginBody>;

export const RefreshBody = z.object({ refreshToken: z.string().min(1).max(256) });
export const RefreshedTokens = z.object({ token: z.string(), refreshToken: z.string() }).meta({ id: 'RefreshedTokens' });

export const ForgotPasswordBody = z.object({ email: Email });
export const ResetPasswordBody = z.object({ email: Email, code: EmailCode, password: Password });

export const UpdateProfileBody = z.object({
  displayName: DisplayName.optional(),
  avatarUrl: ImageUrl.nullable().optional(),
  bio: multiLineText(190).optional(),
  // A status one chooses, as on the presence route: `offline` is what others see, not a choice.
  status: ChosenStatus.optional(),
  customStatus: oneLineText(128).optional(),
});
export type UpdateProfileBody = z.infer<typeof UpdateProfileBody>;

export const FounderStatus = z.object({ isFounder: z.boolean() }).meta({ id: 'FounderStatus' });

/** Auth's public signing keys (RFC 7517 JWK Set). */
export const JsonWebKeySet = z.object({ keys: z.array(z.record(z.string(), z.unknown())) }).meta({ id: 'JsonWebKeySet' });

/** The badge of the first accounts registered (FOUNDER_LIMIT). */
export const FOUNDER_BADGE = 'founder';

export const Badge = z.object({ id: z.string(), name: z.string(), description: z.string() }).meta({ id: 'Badge' });
export type Badge = z.infer<typeof Badge>;

/**
 * Every badge, in the order a user's badges are listed. Badges are facts about the user that auth
 * computes; `senderBadges` and other read-models show these ids.
 */
export const BADGES = [
  { id: FOUNDER_BADGE, name: 'Founder', description: 'One of the first accounts registered' },
  { id: 'staff', name: 'Staff', description: 'Runs this platform' },
  { id: 'early_supporter', name: 'Early supporter', description: 'Registered before the early-supporter date' },
  { id: 'verified_email', name: 'Verified email', description: 'Confirmed their email address with a code' },
  { id: 'server_owner', name: 'Server owner', description: 'Owns a server with many members' },
] as const satisfies Badge[];
export type BadgeId = (typeof BADGES)[number]['id'];

/**
 * Payload of `auth.user.registered` and `auth.user.updated`: what other services keep in their
 * read-models of users.
 */
export const UserEventData = z.object({
  id: Id,
  username: z.string(),
  displayName: z.string(),
  avatarUrl: z.string().nullable(),
  badges: z.array(z.string()),
});
export type UserEventData = z.infer<typeof UserEventData>;

/**
 * Payload of `auth.session.revoked`: one per session ended by logout, a password reset or a
 * refresh-token reuse. Every process that verifies access tokens refuses the session's tokens
 * from then on (they would otherwise live until their `exp`).
 */
export const SessionRevokedData = z.object({ sessionId: Id, userId: Id });
export type SessionRevokedData = z.infer<typeof SessionRevokedData>;

/**
 * Payload of `auth.account.updated`: the account as its owner sees it changed (any field of
 * SelfUser: a profile field, the chosen status or custom status, a badge). The owner's sessions
 * are sent the account (USER_UPDATE), which the gateway asks auth for: the email stays off the bus.
 */
export const AccountUpdatedData = z.object({ userId: Id });
export type AccountUpdatedData = z.infer<typeof AccountUpdatedData>;

export const AUTH_SUBJECTS = {
  userRegistered: 'auth.user.registered',
  userUpdated: 'auth.user.updated',
  accountUpdated: 'auth.account.updated',
  sessionRevoked: 'auth.session.revoked',
} as const;

/**
 * `rpc.auth.user.lookup`: a service whose read-model of users misses an id or a username (its
 * event still in flight) asks auth once and stores the answer. `version` is when auth read the
 * row, so an event that occurred before it changes nothing in the read-model. 404: unknown user.
 */
export const UserLookupRequest = z.union([z.object({ id: Id }), z.object({ username: z.string().min(1).max(64) })]);
export type UserLookupRequest = z.infer<typeof UserLookupRequest>;
export const UserLookupReply = z.object({ user: UserEventData, version: z.iso.datetime({ offset: true }) });
export type UserLookupReply = z.infer<typeof UserLookupReply>;

/**
 * `rpc.auth.users.page`: every user, in id order, a page at a time, for a read-model that starts
 * after the AUTH stream has dropped its oldest events (a fresh database, a new service). `version`
 * as in the lookup: an event that occurred before it changes nothing of the page.
 */
export const UsersPageRequest = z.object({ after: Id.optional(), limit: z.number().int().min(1).max(1000) });
export type UsersPageRequest = z.infer<typeof UsersPageRequest>;
export const UsersPageReply = z.object({ users: z.array(UserEventData), version: z.iso.datetime({ offset: true }) });
export type UsersPageReply = z.infer<typeof UsersPageReply>;

export const AUTH_RPC = { userLookup: 'rpc.auth.user.lookup', usersPage: 'rpc.auth.users.page' } as const;
export const UserLookupRpc = defineRpc(AUTH_RPC.userLookup, UserLookupRequest, UserLookupReply);
export const UsersPageRpc = defineRpc(AUTH_RPC.usersPage, UsersPageRequest, UsersPageReply);

/**
 * How auth hashes passwords: argon2id at OWASP's minimum (m=19 MiB, t=2, p=1). Here so that the
 * bench measures the same work without importing auth's source. `algorithm` 2 is argon2id.
 */
export const PASSWORD_HASH_OPTIONS = { algorithm: 2, memoryCost: 19_456, timeCost: 2, parallelism: 1 } as const;
