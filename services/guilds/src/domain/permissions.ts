import { ALL_PERMISSIONS, Permission } from '@chat/contracts';

/**
 * DESIGN.md's permission algorithm (Discord's), pure and bigint inside: the one place that decides
 * what a member may do. Everything that answers a question about access goes through here.
 */

/** What the server-level mask depends on. */
export interface MemberPermissionInput {
  isOwner: boolean;
  /** The @everyone role's permissions. */
  everyone: bigint;
  /** The permissions of each of the member's other roles. */
  roles: readonly bigint[];
}

export interface OverrideBits {
  allow: bigint;
  deny: bigint;
}

/** The overrides of one channel that apply to one member. */
export interface ApplicableOverrides {
  /** The override of the @everyone role, if any. */
  everyone?: OverrideBits;
  /** The overrides of the member's other roles. */
  roles: readonly OverrideBits[];
  /** The override of the member themself, if any. */
  member?: OverrideBits;
}

/** Server level: the owner has all; ADMINISTRATOR grants all; otherwise @everyone | the member's roles. */
export function serverPermissions(input: MemberPermissionInput): bigint {
  if (input.isOwner) return ALL_PERMISSIONS;
  const base = input.roles.reduce((mask, role) => mask | role, input.everyone);
  return has(base, Permission.ADMINISTRATOR) ? ALL_PERMISSIONS : base;
}

/**
 * Channel level: from the server-level mask apply the @everyone override, then all role overrides
 * together (deny, then allow, so a role's allow beats another role's deny), then the member's
 * override. Without VIEW_CHANNEL nothing else in the channel is allowed.
 */
export function channelPermissions(serverMask: bigint, overrides: ApplicableOverrides): bigint {
  if (has(serverMask, Permission.ADMINISTRATOR)) return ALL_PERMISSIONS;
  let mask = apply(serverMask, overrides.everyone);
  const roles = overrides.roles.reduce((sum, o) => ({ allow: sum.allow | o.allow, deny: sum.deny | o.deny }), { allow: 0n, deny: 0n });
  mask = apply(mask, roles);
  mask = apply(mask, overrides.member);
  return has(mask, Permission.VIEW_CHANNEL) ? mask : 0n;
}

function apply(mask: bigint, override: OverrideBits | undefined): bigint {
  return override ? (mask & ~override.deny) | override.allow : mask;
}

export function has(mask: bigint, bit: bigint): boolean {
  return (mask & bit) === bit;
}

/** A member's standing in the role hierarchy. */
export interface Rank {
  isOwner: boolean;
  /** Position of the member's highest role; 0 when they have only @everyone. */
  highest: number;
}

/** May `actor` act on `target` (kick, ban, rename)? Only the owner, or someone strictly above. */
export function outranks(actor: Rank, target: Rank): boolean {
  if (target.isOwner) return false;
  return actor.isOwner || actor.highest > target.highest;
}

/** May `actor` edit, assign or delete a role at `position`? Only below their own highest role. */
export function canManageRoleAt(actor: Rank, position: number): boolean {
  return actor.isOwner || position < actor.highest;
}

/**
 * The bits a change would newly grant (or newly deny) that the actor does not hold: nobody may
 * hand out a permission they lack. Keeping bits that were already there is allowed.
 */
export function bitsBeyondActor(actorMask: bigint, before: bigint, after: bigint): bigint {
  return after & ~before & ~actorMask;
}

const NO_OVERRIDE: OverrideBits = { allow: 0n, deny: 0n };

/**
 * The bits an override change touches that the actor does not hold in the channel. Every change
 * counts, lifting a deny as much as adding one: otherwise a moderator could give back what the
 * channel takes from everyone (or from themself). `undefined` is no override (created or deleted).
 * The owner and ADMINISTRATOR hold every bit in every channel, so nothing is beyond them.
 */
export function overrideChangeBeyondActor(actorMask: bigint, before: OverrideBits | undefined, after: OverrideBits | undefined): bigint {
  const [b, a] = [before ?? NO_OVERRIDE, after ?? NO_OVERRIDE];
  return ((b.allow ^ a.allow) | (b.deny ^ a.deny)) & ~actorMask;
}

/** Whose override is being changed: @everyone's, another role's, or one member's. */
export type OverrideTarget = { kind: 'everyone' } | { kind: 'role'; position: number } | { kind: 'member'; rank: Rank };

/**
 * May `actor` change this target's override at all? @everyone's, yes; a role's, only below the
 * actor's highest (as for editing the role); a member's, only one the actor outranks, so nobody edits
 * their own override or that of a peer or a superior. The owner may change any.
 */
export function canEditOverrideOf(actor: Rank, target: OverrideTarget): boolean {
  if (actor.isOwner || target.kind === 'everyone') return true;
  return target.kind === 'role' ? canManageRoleAt(actor, target.position) : outranks(actor, target.rank);
}
