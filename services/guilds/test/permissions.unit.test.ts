import { isDeepStrictEqual } from 'node:util';
import { ALL_PERMISSIONS, Permission } from '@chat/contracts';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  type ApplicableOverrides,
  bitsBeyondActor,
  type ChannelVisibility,
  canEditOverrideOf,
  canManageRoleAt,
  channelPermissions,
  type Decision,
  type MemberPermissionInput,
  type OverrideBits,
  outranks,
  overrideChangeBeyondActor,
  PermissionTrace,
  serverPermissions,
} from '../src/domain/permissions.ts';

/**
 * A plain reference of DESIGN.md's algorithm, one bit at a time with booleans, written without the
 * masks of the real module, so the two can disagree.
 */
const BIT_COUNT = 32;
const ADMIN_BIT = 3;
const VIEW_BIT = 10;
const MANAGE_CHANNELS_BIT = 4;
const bitOf = (mask: bigint, i: number) => ((mask >> BigInt(i)) & 1n) === 1n;
const fromBits = (bits: boolean[]) => bits.reduce((mask, on, i) => (on ? mask | (1n << BigInt(i)) : mask), 0n);

function referenceServer(input: MemberPermissionInput): boolean[] {
  const all = [input.everyone, ...input.roles.map((r) => r.permissions)];
  const admin = all.some((m) => bitOf(m, ADMIN_BIT));
  return Array.from({ length: BIT_COUNT }, (_, i) => input.isOwner || admin || all.some((m) => bitOf(m, i)));
}

function referenceChannel(server: boolean[], o: ApplicableOverrides, v?: ChannelVisibility): boolean[] {
  if (server[ADMIN_BIT]) return server.map(() => true);
  const result = server.map((allowed, i) => {
    let on = allowed;
    if (o.everyone && bitOf(o.everyone.deny, i)) on = false;
    if (o.everyone && bitOf(o.everyone.allow, i)) on = true;
    if (o.roles.some((r) => bitOf(r.deny, i))) on = false;
    if (o.roles.some((r) => bitOf(r.allow, i))) on = true;
    if (o.member && bitOf(o.member.deny, i)) on = false;
    if (o.member && bitOf(o.member.allow, i)) on = true;
    return on;
  });
  const explicitView = [o.everyone, ...o.roles, o.member].some((x) => x !== undefined && bitOf(x.allow, VIEW_BIT));
  const hiddenFromMe = v?.isHidden && !(result[MANAGE_CHANNELS_BIT] || v.isChannelOwner || v.isConnected || explicitView);
  return result[VIEW_BIT] && !hiddenFromMe ? result : result.map(() => false);
}

/** The reference's explanation of one bit: the last step of DESIGN.md's order that set it. */
function referenceDecision(m: MemberPermissionInput, o: ApplicableOverrides, v: ChannelVisibility, i: number): Decision {
  if (m.isOwner) return { granted: true, by: { source: 'owner' } };
  if (bitOf(m.everyone, ADMIN_BIT)) return { granted: true, by: { source: 'administrator', roleId: null } };
  const admin = m.roles.find((r) => bitOf(r.permissions, ADMIN_BIT));
  if (admin) return { granted: true, by: { source: 'administrator', roleId: admin.id } };
  const granter = m.roles.find((r) => bitOf(r.permissions, i));
  let d: Decision = bitOf(m.everyone, i)
    ? { granted: true, by: { source: 'everyone' } }
    : granter
      ? { granted: true, by: { source: 'role', roleId: granter.id } }
      : { granted: false, by: { source: 'none' } };
  if (o.everyone && bitOf(o.everyone.deny, i)) d = { granted: false, by: { source: 'everyoneOverride' } };
  if (o.everyone && bitOf(o.everyone.allow, i)) d = { granted: true, by: { source: 'everyoneOverride' } };
  const denier = o.roles.find((r) => bitOf(r.deny, i));
  if (denier) d = { granted: false, by: { source: 'roleOverride', roleId: denier.roleId } };
  const allower = o.roles.find((r) => bitOf(r.allow, i));
  if (allower) d = { granted: true, by: { source: 'roleOverride', roleId: allower.roleId } };
  if (o.member && bitOf(o.member.deny, i)) d = { granted: false, by: { source: 'memberOverride' } };
  if (o.member && bitOf(o.member.allow, i)) d = { granted: true, by: { source: 'memberOverride' } };
  const plain = referenceChannel(referenceServer(m), o);
  if (!plain[VIEW_BIT]) return i === VIEW_BIT ? d : { granted: false, by: { source: 'noViewChannel' } };
  if (!referenceChannel(referenceServer(m), o, v)[VIEW_BIT]) return { granted: false, by: { source: 'hidden' } };
  return d;
}

const mask = fc.bigInt({ min: 0n, max: ALL_PERMISSIONS }).map((m) => m & ALL_PERMISSIONS);
/** Masks without ADMINISTRATOR, so the channel algorithm is actually exercised. */
const plainMask = mask.map((m) => m & ~Permission.ADMINISTRATOR);
const override = fc.record({ allow: plainMask, deny: plainMask });
const withIds = (masks: bigint[]) => masks.map((permissions, i) => ({ id: `role-${i}`, permissions }));
const member = fc.record({ isOwner: fc.boolean(), everyone: mask, roles: fc.array(mask, { maxLength: 5 }).map(withIds) });
const plainMember = fc.record({
  isOwner: fc.constant(false),
  everyone: plainMask,
  roles: fc.array(plainMask, { maxLength: 5 }).map(withIds),
});
const overrides = fc.record({
  everyone: fc.option(override, { nil: undefined }),
  roles: fc.array(override, { maxLength: 5 }).map((os) => os.map((o, i) => ({ ...o, roleId: `role-${i}` }))),
  member: fc.option(override, { nil: undefined }),
});
const visibility = fc.record({ isHidden: fc.boolean(), isChannelOwner: fc.boolean(), isConnected: fc.boolean() });
const singleBit = fc.integer({ min: 0, max: BIT_COUNT - 1 }).map((i) => 1n << BigInt(i));
const nonViewBit = singleBit.filter((b) => b !== Permission.VIEW_CHANNEL && b !== Permission.ADMINISTRATOR);

describe('serverPermissions', () => {
  it('agrees with the reference for any member', () => {
    fc.assert(fc.property(member, (m) => serverPermissions(m) === fromBits(referenceServer(m))));
  });

  it('gives the owner and any ADMINISTRATOR every bit', () => {
    fc.assert(fc.property(member, (m) => serverPermissions({ ...m, isOwner: true }) === ALL_PERMISSIONS));
    fc.assert(
      fc.property(member, fc.nat(5), (m, at) => {
        const roles = [...m.roles];
        roles.splice(at, 0, { id: 'admin', permissions: Permission.ADMINISTRATOR });
        return serverPermissions({ ...m, roles }) === ALL_PERMISSIONS;
      }),
    );
  });

  it('is @everyone alone for a member without roles', () => {
    expect(serverPermissions({ isOwner: false, everyone: Permission.VIEW_CHANNEL, roles: [] })).toBe(Permission.VIEW_CHANNEL);
  });
});

describe('channelPermissions', () => {
  it('agrees with the reference for any member and overrides', () => {
    fc.assert(
      fc.property(member, overrides, (m, o) => {
        const server = serverPermissions(m);
        return channelPermissions(server, o) === fromBits(referenceChannel(referenceServer(m), o));
      }),
      { numRuns: 2_000 },
    );
  });

  it('agrees with the reference for hidden channels, whoever the member is', () => {
    fc.assert(
      fc.property(fc.oneof(member, plainMember), overrides, visibility, (m, o, v) => {
        const server = serverPermissions(m);
        return channelPermissions(server, o, v) === fromBits(referenceChannel(referenceServer(m), o, v));
      }),
      { numRuns: 4_000 },
    );
  });

  it('hides a hidden channel from a member who only has VIEW_CHANNEL from their roles', () => {
    const v = { isHidden: true, isChannelOwner: false, isConnected: false };
    const everyone = Permission.VIEW_CHANNEL | Permission.SEND_MESSAGES;
    expect(channelPermissions(everyone, { roles: [] }, v)).toBe(0n);
    expect(channelPermissions(everyone, { roles: [] }, { ...v, isHidden: false })).toBe(everyone);
    expect(channelPermissions(everyone, { roles: [] }, { ...v, isConnected: true })).toBe(everyone);
    expect(channelPermissions(everyone, { roles: [] }, { ...v, isChannelOwner: true })).toBe(everyone);
    expect(channelPermissions(everyone | Permission.MANAGE_CHANNELS, { roles: [] }, v)).toBe(everyone | Permission.MANAGE_CHANNELS);
    const viaRole = { roles: [{ roleId: 'r', allow: Permission.VIEW_CHANNEL, deny: 0n }] };
    expect(channelPermissions(everyone, viaRole, v)).toBe(everyone);
    // An explicit allow that the member override then denies does not show it.
    expect(channelPermissions(everyone, { ...viaRole, member: { allow: 0n, deny: Permission.VIEW_CHANNEL } }, v)).toBe(0n);
  });

  it('gives the owner and any ADMINISTRATOR every bit whatever the overrides deny', () => {
    fc.assert(
      fc.property(member, overrides, (m, o) => {
        const denyAll = { ...o, member: { allow: 0n, deny: ALL_PERMISSIONS } };
        return (
          channelPermissions(serverPermissions({ ...m, isOwner: true }), denyAll) === ALL_PERMISSIONS &&
          channelPermissions(
            serverPermissions({ ...m, roles: [...m.roles, { id: 'admin', permissions: Permission.ADMINISTRATOR }] }),
            denyAll,
          ) === ALL_PERMISSIONS
        );
      }),
    );
  });

  it('lets one role override allow a bit that another role override denies', () => {
    fc.assert(
      fc.property(plainMember, nonViewBit, (m, bit) => {
        const server = serverPermissions(m) | Permission.VIEW_CHANNEL;
        const deny = { roleId: 'a', allow: 0n, deny: bit };
        const allow = { roleId: 'b', allow: bit, deny: 0n };
        // Whatever order the roles come in: the roles' allows are applied after all their denies.
        return [
          [deny, allow],
          [allow, deny],
        ].every((roles) => (channelPermissions(server, { roles }) & bit) === bit);
      }),
    );
  });

  it('applies the role overrides over the @everyone override', () => {
    fc.assert(
      fc.property(plainMember, nonViewBit, (m, bit) => {
        const server = serverPermissions(m) | Permission.VIEW_CHANNEL;
        const allowed = channelPermissions(server, { everyone: { allow: 0n, deny: bit }, roles: [{ roleId: 'r', allow: bit, deny: 0n }] });
        const denied = channelPermissions(server, { everyone: { allow: bit, deny: 0n }, roles: [{ roleId: 'r', allow: 0n, deny: bit }] });
        return (allowed & bit) === bit && (denied & bit) === 0n;
      }),
    );
  });

  it('applies the member override last', () => {
    fc.assert(
      fc.property(plainMember, overrides, nonViewBit, (m, o, bit) => {
        const server = serverPermissions(m);
        const view = { allow: Permission.VIEW_CHANNEL, deny: 0n };
        const allowed = channelPermissions(server, { ...o, member: { allow: bit | view.allow, deny: 0n } });
        const denied = channelPermissions(server, { ...o, member: { allow: view.allow, deny: bit } });
        return (allowed & bit) === bit && (denied & bit) === 0n;
      }),
    );
  });

  it('removes every bit when VIEW_CHANNEL ends up denied', () => {
    fc.assert(
      fc.property(plainMember, overrides, (m, o) => {
        const hidden = { ...o, member: { allow: 0n, deny: Permission.VIEW_CHANNEL } };
        return channelPermissions(serverPermissions(m), hidden) === 0n;
      }),
    );
    expect(channelPermissions(ALL_PERMISSIONS & ~Permission.ADMINISTRATOR & ~Permission.VIEW_CHANNEL, { roles: [] })).toBe(0n);
  });

  it('is the server mask when the channel has no overrides', () => {
    fc.assert(
      fc.property(plainMember, (m) => {
        const server = serverPermissions(m) | Permission.VIEW_CHANNEL;
        return channelPermissions(server, { roles: [] }) === server;
      }),
    );
  });
});

describe('explanations', () => {
  const explain = (m: MemberPermissionInput, o: ApplicableOverrides, v: ChannelVisibility) => {
    const trace = new PermissionTrace();
    const result = channelPermissions(serverPermissions(m, trace), o, v, trace);
    return { result, trace };
  };

  it('decide every bit, with a verdict that equals the mask, and the same decider as the reference', () => {
    fc.assert(
      fc.property(fc.oneof(member, plainMember), overrides, visibility, (m, o, v) => {
        const { result, trace } = explain(m, o, v);
        if (result !== channelPermissions(serverPermissions(m), o, v)) return false;
        return Array.from({ length: BIT_COUNT }, (_, i) => i).every((i) => {
          const bit = 1n << BigInt(i);
          const decision = trace.decisions.get(bit);
          return decision?.granted === ((result & bit) === bit) && isDeepStrictEqual(decision, referenceDecision(m, o, v, i));
        });
      }),
      { numRuns: 2_000 },
    );
  });

  it('name the highest role that grants a bit, the @everyone role first', () => {
    const m = {
      isOwner: false,
      everyone: Permission.VIEW_CHANNEL,
      roles: [
        { id: 'high', permissions: Permission.SEND_MESSAGES },
        { id: 'low', permissions: Permission.SEND_MESSAGES | Permission.VIEW_CHANNEL | Permission.CONNECT },
      ],
    };
    const { trace } = explain(m, { roles: [] }, { isHidden: false, isChannelOwner: false, isConnected: false });
    expect(trace.decisions.get(Permission.VIEW_CHANNEL)).toEqual({ granted: true, by: { source: 'everyone' } });
    expect(trace.decisions.get(Permission.SEND_MESSAGES)).toEqual({ granted: true, by: { source: 'role', roleId: 'high' } });
    expect(trace.decisions.get(Permission.CONNECT)).toEqual({ granted: true, by: { source: 'role', roleId: 'low' } });
    expect(trace.decisions.get(Permission.BAN_MEMBERS)).toEqual({ granted: false, by: { source: 'none' } });
  });
});

describe('hierarchy', () => {
  it('lets only the owner or someone strictly higher act on a member, and nobody act on the owner', () => {
    expect(outranks({ isOwner: false, highest: 3 }, { isOwner: false, highest: 2 })).toBe(true);
    expect(outranks({ isOwner: false, highest: 2 }, { isOwner: false, highest: 2 })).toBe(false);
    expect(outranks({ isOwner: false, highest: 1 }, { isOwner: false, highest: 2 })).toBe(false);
    expect(outranks({ isOwner: true, highest: 0 }, { isOwner: false, highest: 9 })).toBe(true);
    expect(outranks({ isOwner: false, highest: 99 }, { isOwner: true, highest: 0 })).toBe(false);
  });

  it('lets one manage only roles below one’s highest', () => {
    expect(canManageRoleAt({ isOwner: false, highest: 3 }, 2)).toBe(true);
    expect(canManageRoleAt({ isOwner: false, highest: 3 }, 3)).toBe(false);
    expect(canManageRoleAt({ isOwner: true, highest: 0 }, 7)).toBe(true);
  });

  it('names exactly the newly granted bits the actor lacks', () => {
    fc.assert(
      fc.property(mask, mask, mask, (actor, before, after) => {
        const beyond = bitsBeyondActor(actor, before, after);
        return (
          (beyond & actor) === 0n &&
          (beyond & before) === 0n &&
          (beyond & ~after) === 0n &&
          ((after & ~before) | beyond) === (after & ~before)
        );
      }),
    );
    expect(bitsBeyondActor(Permission.KICK_MEMBERS, Permission.BAN_MEMBERS, Permission.BAN_MEMBERS | Permission.KICK_MEMBERS)).toBe(0n);
    expect(bitsBeyondActor(Permission.KICK_MEMBERS, 0n, Permission.BAN_MEMBERS)).toBe(Permission.BAN_MEMBERS);
  });
});

/** The reference of issue 16's override rule, bit by bit: a bit whose allow or deny changes must be the actor's. */
function referenceChangeBeyond(actor: bigint, before: OverrideBits | undefined, after: OverrideBits | undefined): boolean[] {
  const [b, a] = [before ?? { allow: 0n, deny: 0n }, after ?? { allow: 0n, deny: 0n }];
  return Array.from(
    { length: BIT_COUNT },
    (_, i) => !bitOf(actor, i) && (bitOf(b.allow, i) !== bitOf(a.allow, i) || bitOf(b.deny, i) !== bitOf(a.deny, i)),
  );
}

const maybeOverride = fc.option(override, { nil: undefined });
/** Which override of the channel the actor changes: @everyone's, the i-th role's, or the member's. */
const slot = fc.oneof(fc.constant('everyone' as const), fc.constant('member' as const), fc.nat(4));

function withSlot(o: ApplicableOverrides, at: 'everyone' | 'member' | number, value: OverrideBits | undefined): ApplicableOverrides {
  if (at === 'everyone') return { ...o, everyone: value };
  if (at === 'member') return { ...o, member: value };
  const roles = [...o.roles];
  roles.splice(Math.min(at, roles.length), 1, ...(value ? [{ roleId: `slot-${at}`, ...value }] : []));
  return { ...o, roles };
}

function slotOf(o: ApplicableOverrides, at: 'everyone' | 'member' | number): OverrideBits | undefined {
  if (at === 'everyone') return o.everyone;
  if (at === 'member') return o.member;
  return o.roles[Math.min(at, o.roles.length)];
}

describe('changing an override (issue 16)', () => {
  it('names exactly the bits whose allow or deny changes and the actor lacks', () => {
    fc.assert(
      fc.property(mask, maybeOverride, maybeOverride, (actor, before, after) => {
        return overrideChangeBeyondActor(actor, before, after) === fromBits(referenceChangeBeyond(actor, before, after));
      }),
      { numRuns: 2_000 },
    );
    const deny = { allow: 0n, deny: Permission.SEND_MESSAGES };
    expect(overrideChangeBeyondActor(Permission.MANAGE_ROLES, deny, undefined)).toBe(Permission.SEND_MESSAGES);
    expect(overrideChangeBeyondActor(Permission.MANAGE_ROLES, deny, { allow: 0n, deny: 0n })).toBe(Permission.SEND_MESSAGES);
    expect(overrideChangeBeyondActor(Permission.MANAGE_ROLES, deny, deny)).toBe(0n);
  });

  it('never changes, for any member who sees the channel, a bit the actor lacks (checked on the reference model)', () => {
    fc.assert(
      fc.property(plainMask, plainMember, overrides, slot, maybeOverride, (actor, m, o, at, next) => {
        const before = slotOf(o, at);
        fc.pre(overrideChangeBeyondActor(actor, before, next) === 0n);
        const server = referenceServer(m);
        const was = fromBits(referenceChannel(server, o));
        const now = fromBits(referenceChannel(server, withSlot(o, at, next)));
        // Losing or gaining VIEW_CHANNEL takes or gives the whole channel, as on Discord.
        fc.pre((was & now & Permission.VIEW_CHANNEL) !== 0n);
        return ((was ^ now) & ~actor) === 0n;
      }),
      { numRuns: 1_000 },
    );
  });

  it('leaves nothing beyond the owner or an ADMINISTRATOR, whose channel mask is every bit', () => {
    fc.assert(
      fc.property(member, overrides, maybeOverride, maybeOverride, (m, o, before, after) => {
        const owner = channelPermissions(serverPermissions({ ...m, isOwner: true }), o);
        const admin = channelPermissions(
          serverPermissions({ ...m, roles: [...m.roles, { id: 'admin', permissions: Permission.ADMINISTRATOR }] }),
          o,
        );
        return overrideChangeBeyondActor(owner, before, after) === 0n && overrideChangeBeyondActor(admin, before, after) === 0n;
      }),
    );
  });

  it('lets one edit the overrides of @everyone, of roles below one’s highest and of members one outranks, never one’s own', () => {
    const moderator = { isOwner: false, highest: 3 };
    expect(canEditOverrideOf(moderator, { kind: 'everyone' })).toBe(true);
    expect(canEditOverrideOf({ isOwner: false, highest: 0 }, { kind: 'everyone' })).toBe(true);
    expect(canEditOverrideOf(moderator, { kind: 'role', position: 2 })).toBe(true);
    expect(canEditOverrideOf(moderator, { kind: 'role', position: 3 })).toBe(false);
    expect(canEditOverrideOf(moderator, { kind: 'role', position: 4 })).toBe(false);
    expect(canEditOverrideOf(moderator, { kind: 'member', rank: { isOwner: false, highest: 2 } })).toBe(true);
    expect(canEditOverrideOf(moderator, { kind: 'member', rank: moderator })).toBe(false);
    expect(canEditOverrideOf(moderator, { kind: 'member', rank: { isOwner: true, highest: 0 } })).toBe(false);
    const owner = { isOwner: true, highest: 0 };
    expect(canEditOverrideOf(owner, { kind: 'member', rank: owner })).toBe(true);
    expect(canEditOverrideOf(owner, { kind: 'role', position: 9 })).toBe(true);
  });
});
