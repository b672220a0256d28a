import { randomBytes } from 'node:crypto';
import { Permission, toMask } from '@chat/contracts';
import { beforeAll, describe, expect, it } from 'vitest';
import { api, conversationOnceKnown, newUser, type TestUser } from './helpers.ts';

/** Message search through the gateway: a server's channels (guilds) and the caller's DMs (social). */

let owner: TestUser;
let member: TestUser;
let serverId: string;
let general: string;
let secret: string;

const word = () => `w${randomBytes(5).toString('hex')}`;
const post = async (user: TestUser, channelId: string, content: string) => {
  const res = await api('POST', `/v1/channels/${channelId}/messages`, { user, body: { content } });
  expect(res.status).toBe(201);
  return res.body as { id: string };
};

beforeAll(async () => {
  [owner, member] = [await newUser('searchowner'), await newUser('searchmember')];
  serverId = (await api('POST', '/v1/servers', { user: owner, body: { name: 'E2E search', isPublic: true } })).body.id;
  expect((await api('POST', `/v1/servers/${serverId}/join`, { user: member })).status).toBe(200);
  const channels = (await api('GET', `/v1/servers/${serverId}/channels`, { user: owner })).body as { id: string; channelType: string }[];
  general = channels.find((c) => c.channelType === 'text')!.id;
  secret = (await api('POST', `/v1/servers/${serverId}/channels`, { user: owner, body: { name: 'secret', channelType: 'text' } })).body.id;
  const denied = await api('PUT', `/v1/channels/${secret}/permissions`, {
    user: owner,
    body: { userId: member.id, allowBits: toMask(0n), denyBits: toMask(Permission.VIEW_CHANNEL) },
  });
  expect(denied.status).toBe(200);
});

describe('search through the gateway', () => {
  it("finds a server's messages only in the channels the caller may read, accents ignored", async () => {
    const w = word();
    const visible = await post(member, general, `${w} Crème brûlée tonight`);
    await post(owner, secret, `${w} creme brulee for the staff`);
    const asMember = await api('GET', `/v1/servers/${serverId}/messages/search?q=${encodeURIComponent(`${w} creme brulee`)}`, {
      user: member,
    });
    expect(asMember.status).toBe(200);
    expect(asMember.body).toMatchObject({ total: 1, messages: [{ id: visible.id, channelId: general, authorId: member.id }] });
    const asOwner = await api('GET', `/v1/servers/${serverId}/messages/search?q=${w}`, { user: owner });
    expect(asOwner.body.total).toBe(2);

    const stranger = await newUser('searchstranger');
    await api('PATCH', `/v1/servers/${serverId}`, { user: owner, body: { isPublic: false } });
    const outside = await api('GET', `/v1/servers/${serverId}/messages/search?q=${w}`, { user: stranger });
    expect(outside.status).toBe(404);
    expect(outside.body).toEqual({ error: expect.any(String) });
    const bad = await api('GET', `/v1/servers/${serverId}/messages/search?q=${encodeURIComponent('"!?"')}`, { user: member });
    expect(bad.status).toBe(400);
    expect(bad.body).toEqual({ error: expect.stringMatching(/^query\.q: /) });
  });

  it("finds the caller's direct messages and nobody else's", async () => {
    const [alice, bob, eve] = [await newUser('searchalice'), await newUser('searchbob'), await newUser('searcheve')];
    const w = word();
    const conversationId = await conversationOnceKnown(alice, bob);
    const sent = await api('POST', '/v1/dm/messages', { user: alice, body: { conversationId, content: `${w} see you at the café` } });
    expect(sent.status).toBe(201);
    const found = await api('GET', `/v1/dm/search?q=${encodeURIComponent(`${w} cafe`)}`, { user: bob });
    expect(found.status).toBe(200);
    expect(found.body).toMatchObject({ total: 1, messages: [{ id: sent.body.id, conversationId, senderId: alice.id }] });
    expect((await api('GET', `/v1/dm/search?q=${w}`, { user: eve })).body).toEqual({ total: 0, messages: [] });
  });
});
