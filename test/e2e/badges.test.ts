import { lastAttempt } from '@chat/testkit';
import { describe, expect, it } from 'vitest';
import { attempt, type ClientUser, newClientUser } from './helpers.ts';

// Events travel guilds -> auth -> social in the background: the checks poll (15 s at most).
const EVENTS_MS = 15_000;

const badgeIds = async (user: ClientUser, of: string) => (await user.client.auth.userBadges({ params: { id: of } })).map((b) => b.id);

describe('badges through the gateway', () => {
  it('gives the owner of a server with SERVER_OWNER_BADGE_MEMBERS (2 here) members the badge, shown in the member list and on direct messages', async () => {
    const [owner, guest] = await Promise.all([newClientUser('owner'), newClientUser('guest')]);
    const catalogue = await guest.client.auth.badges();
    expect(guest.status()).toBe(200);
    expect(catalogue.map((b) => b.id)).toContain('server_owner');

    const server = await owner.client.servers.createServer({ body: { name: 'Badges', isPublic: true } });
    expect(owner.status()).toBe(201);
    expect(await badgeIds(guest, owner.id)).not.toContain('server_owner');
    await guest.client.servers.joinServer({ params: { serverId: server.id } });
    expect(guest.status()).toBe(200);
    expect(
      await lastAttempt(
        () => badgeIds(guest, owner.id),
        (ids) => ids.includes('server_owner'),
        EVENTS_MS,
      ),
    ).toContain('server_owner');

    const members = await lastAttempt(
      () => guest.client.servers.listMembers({ params: { serverId: server.id } }),
      (list) => list.find((m) => m.userId === owner.id)?.user?.badges.includes('server_owner') === true,
      EVENTS_MS,
    );
    expect(members.find((m) => m.userId === owner.id)?.user?.badges).toContain('server_owner');

    const conversation = await lastAttempt(
      () => attempt(owner, (c) => c.social.createConversation({ body: { userIds: [guest.id] } })),
      (res) => res.status === 201 || res.status === 200,
      EVENTS_MS,
    );
    const conversationId = conversation.value?.id as string;
    const message = await lastAttempt(
      () => owner.client.social.sendMessage({ body: { conversationId, content: 'hi' } }),
      (m) => m.senderBadges?.includes('server_owner'),
      EVENTS_MS,
    );
    expect(message.senderBadges).toContain('server_owner');

    await guest.client.servers.leaveServer({ params: { serverId: server.id } });
    expect(guest.status()).toBe(204);
    expect(
      await lastAttempt(
        () => badgeIds(guest, owner.id),
        (ids) => !ids.includes('server_owner'),
        EVENTS_MS,
      ),
    ).not.toContain('server_owner');
  });
});
