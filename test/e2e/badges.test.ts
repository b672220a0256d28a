import { describe, expect, it } from 'vitest';
import { api, newUser, type TestUser } from './helpers.ts';

/** Polls a call until `check` holds (events travel guilds -> auth -> social in the background). */
async function eventually<T>(call: () => Promise<T>, check: (value: T) => boolean): Promise<T> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const value = await call();
    if (check(value) || Date.now() > deadline) return value;
    await new Promise((r) => setTimeout(r, 100));
  }
}

const badgeIds = async (user: TestUser, of: string) =>
  ((await api('GET', `/v1/users/${of}/badges`, { user })).body as { id: string }[]).map((b) => b.id);

describe('badges through the gateway', () => {
  it('gives the owner of a server with SERVER_OWNER_BADGE_MEMBERS (2 here) members the badge, shown in the member list and on direct messages', async () => {
    const [owner, guest] = await Promise.all([newUser('owner'), newUser('guest')]);
    const catalogue = await api('GET', '/v1/badges', { user: guest });
    expect(catalogue.status).toBe(200);
    expect(catalogue.body.map((b: { id: string }) => b.id)).toContain('server_owner');

    const server = await api('POST', '/v1/servers', { user: owner, body: { name: 'Badges', isPublic: true } });
    expect(server.status).toBe(201);
    expect(await badgeIds(guest, owner.id)).not.toContain('server_owner');
    expect((await api('POST', `/v1/servers/${server.body.id}/join`, { user: guest })).status).toBe(200);
    expect(
      await eventually(
        () => badgeIds(guest, owner.id),
        (ids) => ids.includes('server_owner'),
      ),
    ).toContain('server_owner');

    const members = await eventually(
      async () => (await api('GET', `/v1/servers/${server.body.id}/members`, { user: guest })).body,
      (list: { userId: string; user: { badges: string[] } | null }[]) =>
        list.find((m) => m.userId === owner.id)?.user?.badges.includes('server_owner') === true,
    );
    expect(members.find((m) => m.userId === owner.id)?.user?.badges).toContain('server_owner');

    const conversation = await eventually(
      () => api('POST', '/v1/dm/conversations', { user: owner, body: { userIds: [guest.id] } }),
      (res) => res.status === 201 || res.status === 200,
    );
    const message = await eventually(
      async () => {
        const sent = await api('POST', '/v1/dm/messages', { user: owner, body: { conversationId: conversation.body.id, content: 'hi' } });
        return sent.body as { senderBadges: string[] };
      },
      (m) => m.senderBadges?.includes('server_owner'),
    );
    expect(message.senderBadges).toContain('server_owner');

    expect((await api('DELETE', `/v1/servers/${server.body.id}/members/@me`, { user: guest })).status).toBe(204);
    expect(
      await eventually(
        () => badgeIds(guest, owner.id),
        (ids) => !ids.includes('server_owner'),
      ),
    ).not.toContain('server_owner');
  });
});
