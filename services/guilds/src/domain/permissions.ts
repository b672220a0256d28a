import { ALL_PERMISSIONS, Permission } from '@chat/contracts';

/**
 * DESIGN.md's permission algorithm (Discord's), pure and bigint inside: the one place that decides
 * what a member may do. Everything that answers a question about access goes through here.
 */

/** A role as the algorithm sees it. */
export interface RoleBits {
  id: string;
  permissions: bigint;
}

/** What the server-level mask depends on. */
export interface MemberPermissionInput {
  isOwner: boolean;
  /** The @everyone role's permissions. */
  everyone: bigint;
  /** The member's other roles, highest first (the first one granting a bit is named as its source). */
  roles: readonly RoleBits[];
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
  roles: readonly (OverrideBits & { roleId: string })[];
  /** The override of the member themself, if any. */
  member?: OverrideBits;
}

/** What a hidden channel's visibility depends on besides the mask. */
export interface ChannelVisibility {
  isHidden: boolean;
  /** The member owns the channel (a temporary voice channel's creator). */
  isChannelOwner: boolean;
  /** The member's live voice state is in this channel. */
  isConnected: boolean;
}

/**
 * What last decided one bit, in the algorithm's order. `roleId` null means the @everyone role.
 * `none`: no role grants it; `noViewChannel`: cleared because VIEW_CHANNEL is not granted;
 * `hidden`: cleared because the channel is hidden from the member.
 */
export type Decider =
  | { source: 'owner' }
  | { source: 'administrator'; roleId: string | null }
  | { source: 'everyone' }
  | { source: 'role'; roleId: string }
  | { source: 'none' }
  | { source: 'everyoneOverride' }
  | { source: 'roleOverride'; roleId: string }
  | { source: 'memberOverride' }
  | { source: 'noViewChannel' }
  | { source: 'hidden' };

export interface Decision {
  granted: boolean;
  by: Decider;
}

const BITS = Object.values(Permission);

/**
 * The optional recorder of an explanation. Each step of the algorithm tells it which bits it
 * decided and how; the mask itself is computed apart, so a test can check that both agree.
 */
export class PermissionTrace {
  readonly decisions = new Map<bigint, Decision>();

  decide(bits: bigint, granted: boolean, by: Decider): void {
    for (const bit of BITS) if ((bits & bit) === bit) this.decisions.set(bit, { granted, by });
  }
}

/** Server level: the owner has all; ADMINISTRATOR grants all; otherwise @everyone | the member's roles. */
export function serverPermissions(input: MemberPermissionInput, trace?: PermissionTrace): bigint {
  if (input.isOwner) {
    trace?.decide(ALL_PERMISSIONS, true, { source: 'owner' });
    return ALL_PERMISSIONS;
  }
  const base = input.roles.reduce((mask, role) => mask | role.permissions, input.everyone);
  if (has(base, Permission.ADMINISTRATOR)) {
    const admin = input.roles.find((r) => has(r.permissions, Permission.ADMINISTRATOR));
    trace?.decide(ALL_PERMISSIONS, true, {
      source: 'administrator',
      roleId: has(input.everyone, Permission.ADMINISTRATOR) ? null : admin!.id,
    });
    return ALL_PERMISSIONS;
  }
  if (trace) {
    trace.decide(ALL_PERMISSIONS & ~base, false, { source: 'none' });
    for (const role of [...input.roles].reverse()) trace.decide(role.permissions, true, { source: 'role', roleId: role.id });
    trace.decide(input.everyone, true, { source: 'everyone' });
  }
  return base;
}

/**
 * Channel level: from the server-level mask apply the @everyone override, then all role overrides
 * together (deny, then allow, so a role's allow beats another role's deny), then the member's
 * override. Without VIEW_CHANNEL nothing else in the channel is allowed. A hidden channel is
 * viewable only with MANAGE_CHANNELS there, by its owner, by those connected to it, and by those
 * whom an override explicitly allows VIEW_CHANNEL; to anyone else it is as if it did not exist.
 * With a trace (holding the server level's decisions), each step records what it decided.
 */
export function channelPermissions(
  serverMask: bigint,
  overrides: ApplicableOverrides,
  visibility?: ChannelVisibility,
  trace?: PermissionTrace,
): bigint {
  if (has(serverMask, Permission.ADMINISTRATOR)) return ALL_PERMISSIONS;
  let mask = apply(serverMask, overrides.everyone, trace, { source: 'everyoneOverride' });
  const roles = overrides.roles.reduce((sum, o) => ({ allow: sum.allow | o.allow, deny: sum.deny | o.deny }), { allow: 0n, deny: 0n });
  if (trace) {
    // Later calls win in the trace, so walk backwards: the first role (the highest) is named.
    for (const o of [...overrides.roles].reverse()) trace.decide(o.deny, false, { source: 'roleOverride', roleId: o.roleId });
    for (const o of [...overrides.roles].reverse()) trace.decide(o.allow, true, { source: 'roleOverride', roleId: o.roleId });
  }
  mask = apply(mask, roles);
  mask = apply(mask, overrides.member, trace, { source: 'memberOverride' });
  if (!has(mask, Permission.VIEW_CHANNEL)) {
    trace?.decide(ALL_PERMISSIONS & ~Permission.VIEW_CHANNEL, false, { source: 'noViewChannel' });
    return 0n;
  }
  if (visibility?.isHidden && !maySeeHidden(mask, overrides, visibility)) {
    trace?.decide(ALL_PERMISSIONS, false, { source: 'hidden' });
    return 0n;
  }
  return mask;
}

function maySeeHidden(mask: bigint, overrides: ApplicableOverrides, visibility: ChannelVisibility): boolean {
  const allowsView = (o: OverrideBits | undefined) => o !== undefined && has(o.allow, Permission.VIEW_CHANNEL);
  return (
    has(mask, Permission.MANAGE_CHANNELS) ||
    visibility.isChannelOwner ||
    visibility.isConnected ||
    allowsView(overrides.everyone) ||
    overrides.roles.some(allowsView) ||
    allowsView(overrides.member)
  );
}

function apply(mask: bigint, override: OverrideBits | undefined, trace?: PermissionTrace, by?: Decider): bigint {
  if (!override) return mask;
  if (trace && by) {
    trace.decide(override.deny, false, by);
    trace.decide(override.allow, true, by);
  }
  return (mask & ~override.deny) | override.allow;
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
