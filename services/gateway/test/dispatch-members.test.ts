import { randomUUID } from 'node:crypto';
import { GUILDS_SUBJECTS, ServerMembersRpc } from '@chat/contracts';
import { afterAll, describe, expect, it } from 'vitest';
import { dispatchHarness, eventOf as event } from './dispatch-harness.ts';

/**
 * SERVER_MEMBER_ADD and SERVER_MEMBER_UPDATE show the member as REST lists them, with what others
 * see of them now (the gateway's presence); SERVER_BAN_ADD the ban as REST lists it. Real Redis.
 */

const membersOf = new Map<string, string[]>();
const activity = { gameId: null, name: 'Chess', startedAt: '2026-11-28T09:00:00.000Z' };
const { dispatcher, sessionOf, close } = dispatchHarness({
  answers: { [ServerMembersRpc.subject]: ({ serverId }) => ({ userIds: membersOf.get(serverId as string) ?? [] }) },
  presence: { shown: async (userIds: string[]) => Object.fromEntries(userIds.map((id) => [id, { status: 'dnd' as const, activity }])) },
});
afterAll(close);

describe('member dispatches', () => {
  it('show a joined and a changed member with their user and what others see of them now', async () => {
    const [serverId, owner, member] = [randomUUID(), randomUUID(), randomUUID()];
    membersOf.set(serverId, [owner, member]);
    const ownerSession = await sessionOf(owner);
    const record = {
      serverId,
      userId: member,
      nickname: null,
      roleIds: [],
      joinedAt: '2026-11-28T10:00:00.000Z',
      user: { id: member, username: 'ann', displayName: 'Ann', avatarUrl: null, badges: [] },
    };
    await dispatcher.dispatch(event(GUILDS_SUBJECTS.memberJoined, record));
    await dispatcher.dispatch(event(GUILDS_SUBJECTS.memberUpdated, { ...record, nickname: 'Nick' }));
    expect(await ownerSession()).toEqual([
      expect.objectContaining({ t: 'SERVER_MEMBER_ADD', d: { ...record, status: 'dnd', activity } }),
      expect.objectContaining({ t: 'SERVER_MEMBER_UPDATE', d: { ...record, nickname: 'Nick', status: 'dnd', activity } }),
    ]);
  });

  it('show a ban with the banned user’s names', async () => {
    const [serverId, owner, banned] = [randomUUID(), randomUUID(), randomUUID()];
    membersOf.set(serverId, [owner]);
    const ownerSession = await sessionOf(owner);
    const ban = {
      serverId,
      userId: banned,
      username: 'bob',
      displayName: 'Bob',
      avatarUrl: null,
      bannedBy: owner,
      reason: 'spam',
      createdAt: '2026-11-28T10:00:00.000Z',
    };
    await dispatcher.dispatch(event(GUILDS_SUBJECTS.memberBanned, ban));
    expect(await ownerSession()).toEqual([expect.objectContaining({ t: 'SERVER_BAN_ADD', d: ban })]);
  });
});
