import { describe, expect, it } from 'vitest';
import { api, newUser } from './helpers.ts';

/** Issue 24 through the gateway: hidden channels, explained permissions, positions, paging, AFK, system messages, lookups. */

describe('fields that act, through the gateway', () => {
  it('hides a hidden channel, explains permissions, renumbers positions, pages bans, stores the AFK timeout and greets joiners', async () => {
    const [owner, guest, fresh] = [await newUser('owner'), await newUser('guest'), await newUser('fresh')];
    const server = (await api('POST', '/v1/servers', { user: owner, body: { name: 'Issue 24', isPublic: true } })).body;
    expect(server.afkTimeoutSeconds).toBe(300);
    const welcome = (
      await api('POST', `/v1/servers/${server.id}/channels`, { user: owner, body: { name: 'welcome', channelType: 'text' } })
    ).body;
    const patched = await api('PATCH', `/v1/servers/${server.id}`, {
      user: owner,
      body: { entranceChannelId: welcome.id, afkTimeoutSeconds: 900 },
    });
    expect(patched.body).toMatchObject({ entranceChannelId: welcome.id, afkTimeoutSeconds: 900 });
    expect((await api('POST', `/v1/servers/${server.id}/join`, { user: guest })).status).toBe(200);
    const greeting = await api('GET', `/v1/channels/${welcome.id}/messages`, { user: guest });
    expect(greeting.body).toContainEqual(expect.objectContaining({ authorId: guest.id, type: 'member_join', content: '' }));

    // Hidden: 404 to the guest, as an unknown id; absent from their list.
    expect((await api('PATCH', `/v1/channels/${welcome.id}`, { user: owner, body: { isHidden: true } })).status).toBe(200);
    expect((await api('GET', `/v1/channels/${welcome.id}`, { user: guest })).status).toBe(404);
    const list = await api('GET', `/v1/servers/${server.id}/channels`, { user: guest });
    expect(list.body.map((c: { id: string }) => c.id)).not.toContain(welcome.id);

    // Explained permissions.
    const explained = await api('GET', `/v1/channels/${welcome.id}/permissions/members/${guest.id}?explain=true`, { user: owner });
    expect(explained.status).toBe(200);
    expect(explained.body.permissions).toBe(0);
    expect(explained.body.explanation).toContainEqual({ permission: 'VIEW_CHANNEL', granted: false, source: 'hidden', roleId: null });

    // Positions: reorder the uncategorised channels.
    const second = (await api('POST', `/v1/servers/${server.id}/channels`, { user: owner, body: { name: 'second', channelType: 'text' } }))
      .body;
    const reordered = await api('PATCH', `/v1/servers/${server.id}/channels/positions`, {
      user: owner,
      body: { channelIds: [second.id, welcome.id] },
    });
    expect(reordered.status).toBe(200);
    expect(reordered.body.map((c: { id: string; position: number }) => [c.id, c.position])).toEqual([
      [second.id, 0],
      [welcome.id, 1],
    ]);

    // A user registered a moment ago is banned (the read-model asks auth if it has not heard yet), and bans page.
    expect((await api('PUT', `/v1/servers/${server.id}/bans/${fresh.id}`, { user: owner, body: {} })).status).toBe(200);
    const bans = await api('GET', `/v1/servers/${server.id}/bans?limit=1`, { user: owner });
    expect(bans.body.map((b: { userId: string }) => b.userId)).toEqual([fresh.id]);
    expect((await api('GET', `/v1/servers/${server.id}/bans?after=nope`, { user: owner })).status).toBe(400);
  });
});
