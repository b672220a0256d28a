import { lastAttempt, until } from '@chat/testkit';
import { beforeAll, describe, expect, it } from 'vitest';
import { api, conversationOnceKnown, gateway, newUser, postMessage, publicServer, type TestUser } from './helpers.ts';

/**
 * Who may read or change what over HTTP, through the gateway and the real services: role ranks,
 * one's own nickname, the notification feed once access is gone (a kick, an override, the server's
 * deletion), indirect reads of a hidden channel, tokens after logout, and other users' emails.
 */
const BIT = {
  ADMINISTRATOR: 1 << 3,
  VIEW_CHANNEL: 1 << 10,
  SEND_MESSAGES: 1 << 11,
  MANAGE_MESSAGES: 1 << 13,
  CONNECT: 1 << 20,
  MOVE_MEMBERS: 1 << 24,
  CHANGE_NICKNAME: 1 << 26,
  MANAGE_NICKNAMES: 1 << 27,
  MANAGE_ROLES: 1 << 28,
  MANAGE_WEBHOOKS: 1 << 29,
};
const THUMBS = '%F0%9F%91%8D';

/** The body of a call that must answer `status`. */
const expectStatus = async (pending: ReturnType<typeof api>, status: number) => {
  const res = await pending;
  expect(res.status, JSON.stringify(res.body)).toBe(status);
  return res.body;
};

let owner: TestUser;
let serverId: string;
let inviteCode: string;
let lobbyId: string;
let secretId: string;
let secretMessageId: string;

async function newMember(prefix = 'mem'): Promise<TestUser> {
  const user = await newUser(prefix);
  await expectStatus(api('POST', `/v1/invites/${inviteCode}/accept`, { user }), 200);
  return user;
}

/** A new member holding a role of its own with `bits`. */
async function memberWithRole(bits: number, prefix = 'mod'): Promise<TestUser> {
  const user = await newMember(prefix);
  const role = await expectStatus(
    api('POST', `/v1/servers/${serverId}/roles`, { user: owner, body: { name: prefix, permissions: bits } }),
    201,
  );
  await expectStatus(api('PUT', `/v1/servers/${serverId}/members/${user.id}/roles/${role.id}`, { user: owner }), 204);
  return user;
}

const denyView = (channelId: string, user: TestUser) =>
  expectStatus(
    api('PUT', `/v1/channels/${channelId}/permissions`, {
      user: owner,
      body: { userId: user.id, allowBits: 0, denyBits: BIT.VIEW_CHANNEL },
    }),
    200,
  );

const newTextChannel = async (name: string) =>
  (await expectStatus(api('POST', `/v1/servers/${serverId}/channels`, { user: owner, body: { name, channelType: 'text' } }), 201))
    .id as string;

beforeAll(async () => {
  owner = await newUser('owner');
  serverId = (await expectStatus(api('POST', '/v1/servers', { user: owner, body: { name: 'Access rules' } }), 201)).id;
  inviteCode = (await expectStatus(api('POST', `/v1/servers/${serverId}/invites`, { user: owner, body: {} }), 201)).code;
  lobbyId = await newTextChannel('lobby');
  secretId = await newTextChannel('secret');
  secretMessageId = await postMessage(owner, secretId, 'classified');
  await expectStatus(api('PUT', `/v1/channels/${secretId}/messages/${secretMessageId}/reactions/${THUMBS}/@me`, { user: owner }), 204);
}, 60_000);

describe('role ranks', () => {
  it('answers 403 to a MANAGE_ROLES moderator giving @everyone ADMINISTRATOR, and @everyone keeps its bits', async () => {
    const mod = await memberWithRole(BIT.MANAGE_ROLES | BIT.VIEW_CHANNEL);
    const everyone = async () =>
      (
        (await expectStatus(api('GET', `/v1/servers/${serverId}/roles`, { user: owner }), 200)) as { id: string; permissions: number }[]
      ).find((r) => r.id === serverId)!.permissions;
    const before = await everyone();
    const res = await api('PATCH', `/v1/servers/${serverId}/roles/${serverId}`, {
      user: mod,
      body: { permissions: Number(before) + BIT.ADMINISTRATOR },
    });
    expect(res).toMatchObject({ status: 403, body: { error: expect.any(String) } });
    expect(await everyone()).toEqual(before);
  });

  it('answers 403 to a MANAGE_NICKNAMES moderator renaming the owner or a peer of the same rank, and renames nobody', async () => {
    const nicknamers = await expectStatus(
      api('POST', `/v1/servers/${serverId}/roles`, { user: owner, body: { name: 'nicknamers', permissions: BIT.MANAGE_NICKNAMES } }),
      201,
    );
    const [mod, peer] = [await newMember('nick'), await newMember('peer')];
    for (const user of [mod, peer]) {
      await expectStatus(api('PUT', `/v1/servers/${serverId}/members/${user.id}/roles/${nicknamers.id}`, { user: owner }), 204);
    }
    for (const target of [owner, peer]) {
      const res = await api('PATCH', `/v1/servers/${serverId}/members/${target.id}`, { user: mod, body: { nickname: 'renamed' } });
      expect(res, target.username).toMatchObject({ status: 403, body: { error: expect.any(String) } });
    }
    const members = (await expectStatus(api('GET', `/v1/servers/${serverId}/members?limit=100`, { user: owner }), 200)) as {
      userId: string;
      nickname: string | null;
    }[];
    expect(members.filter((m) => m.userId === owner.id || m.userId === peer.id).map((m) => m.nickname)).toEqual([null, null]);
  });
});

describe('one’s own nickname', () => {
  it('needs CHANGE_NICKNAME: once @everyone lacks it, a member renaming themself by @me or by their id gets 403 and keeps the nickname', async () => {
    const member = await newUser('nick');
    const { serverId: ownServerId } = await publicServer(owner, [member]);
    const mine = `/v1/servers/${ownServerId}/members/@me`;
    await expectStatus(api('PATCH', mine, { user: member, body: { nickname: 'chosen' } }), 200);
    const roles = (await expectStatus(api('GET', `/v1/servers/${ownServerId}/roles`, { user: owner }), 200)) as {
      id: string;
      permissions: number;
    }[];
    const everyone = BigInt(roles.find((r) => r.id === ownServerId)!.permissions);
    await expectStatus(
      api('PATCH', `/v1/servers/${ownServerId}/roles/${ownServerId}`, {
        user: owner,
        body: { permissions: Number(everyone & ~BigInt(BIT.CHANGE_NICKNAME)) },
      }),
      200,
    );
    for (const path of [mine, `/v1/servers/${ownServerId}/members/${member.id}`]) {
      const res = await api('PATCH', path, { user: member, body: { nickname: 'renamed' } });
      expect(res, path).toMatchObject({ status: 403, body: { error: expect.any(String) } });
    }
    const members = (await expectStatus(api('GET', `/v1/servers/${ownServerId}/members`, { user: owner }), 200)) as {
      userId: string;
      nickname: string | null;
    }[];
    expect(members.find((m) => m.userId === member.id)?.nickname).toBe('chosen');
  });
});

describe('the notification feed once the reader may no longer see the channel', () => {
  type Entry = { messageId: string; excerpt: string };
  const entriesOf = async (user: TestUser, messageId: string) =>
    ((await expectStatus(api('GET', '/v1/notifications', { user }), 200)).notifications as Entry[]).filter(
      (n) => n.messageId === messageId,
    );

  /** Mentions `target` in `channelId` and answers the message id once social has put the mention in the feed. */
  async function mention(channelId: string, target: TestUser, text: string): Promise<string> {
    const messageId = await postMessage(owner, channelId, `<@${target.id}> ${text}`);
    await until(async () => (await entriesOf(target, messageId)).length === 1, { what: 'the mention reaches the feed' });
    return messageId;
  }

  it('drops the mentions of a server, excerpts included, once the reader is kicked from it', async () => {
    const kicked = await newMember('kicked');
    const channelId = await newTextChannel('staff-plans');
    const messageId = await mention(channelId, kicked, 'the secret plan');
    await expectStatus(api('DELETE', `/v1/servers/${serverId}/members/${kicked.id}`, { user: owner }), 204);
    expect((await api('GET', `/v1/channels/${channelId}/messages`, { user: kicked })).status).toBe(404);
    // The entries go when social applies guilds' member-left event, in its own time.
    await until(async () => (await entriesOf(kicked, messageId)).length === 0, { what: 'the kicked member’s entries leave the feed' });
  });

  it('hides the mentions of a channel as soon as an override denies the reader VIEW_CHANNEL', async () => {
    const denied = await newMember('denied');
    const channelId = await newTextChannel('later-private');
    const messageId = await mention(channelId, denied, 'the later secret');
    await denyView(channelId, denied);
    expect((await api('GET', `/v1/channels/${channelId}/messages`, { user: denied })).status).toBe(404);
    expect(await entriesOf(denied, messageId)).toEqual([]);
  });

  it('drops the mentions of a deleted server from the feed and its unread count, and its channels from the read states', async () => {
    const reader = await newUser('reader');
    const doomed = await publicServer(owner, [reader]);
    const messageId = await mention(doomed.textId, reader, 'the secret plan');
    const readStateIds = async () =>
      ((await expectStatus(api('GET', '/v1/users/@me/read-states', { user: reader }), 200)) as { id: string }[]).map((s) => s.id);
    await until(async () => (await readStateIds()).includes(doomed.textId), { what: 'the channel reaches the read states' });
    const unreadCount = async () => (await expectStatus(api('GET', '/v1/notifications', { user: reader }), 200)).unreadCount;
    expect(await unreadCount()).toBe(1);
    await expectStatus(api('DELETE', `/v1/servers/${doomed.serverId}`, { user: owner }), 204);
    // social asks guilds on every read which channels the reader may view: none of a deleted server.
    expect(await entriesOf(reader, messageId)).toEqual([]);
    expect(await unreadCount()).toBe(0);
    expect(await readStateIds()).not.toContain(doomed.textId);
  });

  it('keeps no text that the author edited out of a mention in the excerpt', async () => {
    const reader = await newMember('reader');
    const messageId = await mention(lobbyId, reader, 'oops my password is hunter2');
    await expectStatus(
      api('PATCH', `/v1/channels/${lobbyId}/messages/${messageId}`, { user: owner, body: { content: `<@${reader.id}> (removed)` } }),
      200,
    );
    // The excerpt follows guilds' message-updated event, applied by social in its own time.
    await until(async () => (await entriesOf(reader, messageId)).every((n) => n.excerpt.endsWith('(removed)')), {
      what: 'the excerpt follows the edit',
    });
    const entries = await entriesOf(reader, messageId);
    expect(entries).toHaveLength(1);
    expect(entries[0]?.excerpt).not.toContain('hunter2');
  });
});

describe('a channel hidden from the caller', () => {
  it('is reached neither through another channel’s routes nor through search, acks, typing or its overrides', async () => {
    const member = await newMember('reader');
    await denyView(secretId, member);
    const answers = {
      replyFromLobby: (
        await api('POST', `/v1/channels/${lobbyId}/messages`, { user: member, body: { content: 'x', replyToId: secretMessageId } })
      ).status,
      reactionUsersViaLobby: (await api('GET', `/v1/channels/${lobbyId}/messages/${secretMessageId}/reactions/${THUMBS}`, { user: member }))
        .status,
      reactViaLobby: (await api('PUT', `/v1/channels/${lobbyId}/messages/${secretMessageId}/reactions/${THUMBS}/@me`, { user: member }))
        .status,
      aroundInLobby: (await api('GET', `/v1/channels/${lobbyId}/messages?around=${secretMessageId}`, { user: member })).body.some(
        (m: { id: string }) => m.id === secretMessageId,
      ),
      overrides: (await api('GET', `/v1/channels/${secretId}/permissions`, { user: member })).status,
      searchTotal: (await api('GET', `/v1/servers/${serverId}/messages/search?q=classified`, { user: member })).body.total,
      ack: (await api('PUT', `/v1/channels/${secretId}/ack`, { user: member, body: { messageId: secretMessageId } })).status,
      typing: (await api('POST', `/v1/channels/${secretId}/typing`, { user: member })).status,
    };
    expect(answers).toEqual({
      replyFromLobby: 400,
      reactionUsersViaLobby: 404,
      reactViaLobby: 404,
      aroundInLobby: false,
      overrides: 404,
      searchTotal: 0,
      ack: 404,
      typing: 404,
    });
    const reactors = await expectStatus(
      api('GET', `/v1/channels/${secretId}/messages/${secretMessageId}/reactions/${THUMBS}`, { user: owner }),
      200,
    );
    expect(reactors.map((u: { id: string }) => u.id)).toEqual([owner.id]);
  });

  it('answers 404 to MANAGE_WEBHOOKS and MANAGE_MESSAGES moderators acting in it, and nothing changes', async () => {
    const mod = await memberWithRole(BIT.VIEW_CHANNEL | BIT.SEND_MESSAGES | BIT.MANAGE_WEBHOOKS | BIT.MANAGE_MESSAGES);
    await denyView(secretId, mod);
    const hook = await expectStatus(api('POST', `/v1/channels/${secretId}/webhooks`, { user: owner, body: { name: 'h' } }), 201);
    const answers = {
      listHooks: (await api('GET', `/v1/channels/${secretId}/webhooks`, { user: mod })).status,
      createHook: (await api('POST', `/v1/channels/${secretId}/webhooks`, { user: mod, body: { name: 'x' } })).status,
      deleteHook: (await api('DELETE', `/v1/webhooks/${hook.id}`, { user: mod })).status,
      pin: (await api('PUT', `/v1/channels/${secretId}/pins/${secretMessageId}`, { user: mod })).status,
      deleteMessage: (await api('DELETE', `/v1/channels/${secretId}/messages/${secretMessageId}`, { user: mod })).status,
    };
    expect(answers).toEqual({ listHooks: 404, createHook: 404, deleteHook: 404, pin: 404, deleteMessage: 404 });
    const hooks = await expectStatus(api('GET', `/v1/channels/${secretId}/webhooks`, { user: owner }), 200);
    expect(hooks.map((h: { id: string }) => h.id)).toEqual([hook.id]);
    expect(await expectStatus(api('GET', `/v1/channels/${secretId}/pins`, { user: owner }), 200)).toEqual([]);
    const page = await expectStatus(api('GET', `/v1/channels/${secretId}/messages`, { user: owner }), 200);
    expect(page.map((m: { id: string }) => m.id)).toContain(secretMessageId);
  });

  it('answers 403 to a MOVE_MEMBERS moderator moving someone into a voice channel they may not connect to, 404 into a hidden one', async () => {
    const mover = await memberWithRole(BIT.VIEW_CHANNEL | BIT.CONNECT | BIT.MOVE_MEMBERS, 'mover');
    const voice = async (name: string) =>
      (await expectStatus(api('POST', `/v1/servers/${serverId}/channels`, { user: owner, body: { name, channelType: 'voice' } }), 201))
        .id as string;
    const [from, noConnect, hidden] = [await voice('from'), await voice('no-connect'), await voice('hidden')];
    await expectStatus(
      api('PUT', `/v1/channels/${noConnect}/permissions`, { user: owner, body: { userId: mover.id, allowBits: 0, denyBits: BIT.CONNECT } }),
      200,
    );
    await expectStatus(api('PATCH', `/v1/channels/${hidden}`, { user: owner, body: { isHidden: true } }), 200);
    const target = await newMember('moved');
    await expectStatus(api('POST', '/v1/voice/join', { user: target, body: { channelId: from } }), 200);
    const intoNoConnect = await api('POST', '/v1/voice/move', { user: mover, body: { userId: target.id, channelId: noConnect } });
    const intoHidden = await api('POST', '/v1/voice/move', { user: mover, body: { userId: target.id, channelId: hidden } });
    expect([intoNoConnect.status, intoHidden.status]).toEqual([403, 404]);
    const states = await expectStatus(api('GET', `/v1/servers/${serverId}/voice-states`, { user: owner }), 200);
    expect(states.filter((s: { userId: string }) => s.userId === target.id).map((s: { channelId: string }) => s.channelId)).toEqual([from]);
  });
});

describe('an access token after logout', () => {
  it('is refused with 401 by every service behind the gateway', async () => {
    const user = await newUser('logout');
    const form = new FormData();
    form.append('file', new Blob([Buffer.from('bytes')]), 'a.txt');
    const upload = await fetch(`${gateway}/v1/media`, {
      method: 'POST',
      headers: { authorization: `Bearer ${user.token}`, 'x-forwarded-for': user.ip },
      body: form,
    });
    expect(upload.status).toBe(201);
    const uploaded = (await upload.json()) as { id: string };
    await expectStatus(api('POST', '/v1/auth/logout', { user, body: { refreshToken: user.refreshToken } }), 204);
    const calls: [string, string, unknown?][] = [
      ['GET', '/v1/users/@me'],
      ['GET', '/v1/servers'],
      ['POST', '/v1/servers', { name: 'after logout' }],
      ['GET', '/v1/friends'],
      ['GET', '/v1/notifications'],
      ['GET', `/v1/media/${uploaded.id}`],
      ['GET', `/v1/music/${serverId}`],
      ['GET', '/v1/link-preview?url=https%3A%2F%2Fexample.com'],
    ];
    const statuses = async () => {
      const answers: Record<string, number> = {};
      for (const [method, path, body] of calls) answers[`${method} ${path}`] = (await api(method, path, { user, body })).status;
      return answers;
    };
    // Each service hears of the revocation from auth's event, in its own time.
    const last = await lastAttempt(statuses, (answers) => Object.values(answers).every((s) => s === 401), 5_000);
    expect(last).toEqual(Object.fromEntries(calls.map(([method, path]) => [`${method} ${path}`, 401])));
    expect((await api('GET', '/v1/servers', { user: owner })).status).toBe(200);
  });
});

describe("other users' emails", () => {
  it('show in no answer that lists those users, to members, friends, moderators or the public', async () => {
    const [host, guest, banned] = [await newUser('host'), await newUser('guest'), await newUser('banned')];
    const server = await expectStatus(
      api('POST', '/v1/servers', { user: host, body: { name: 'Email check', isPublic: true, requireApproval: false } }),
      201,
    );
    for (const user of [guest, banned]) await expectStatus(api('POST', `/v1/servers/${server.id}/join`, { user }), 200);
    const channelId = (
      await expectStatus(api('POST', `/v1/servers/${server.id}/channels`, { user: host, body: { name: 'c', channelType: 'text' } }), 201)
    ).id;
    await conversationOnceKnown(guest, host);
    await expectStatus(api('POST', '/v1/friends/requests', { user: guest, body: { userId: host.id } }), 201);
    const messageId = await postMessage(host, channelId, 'emailcheck here');
    await expectStatus(api('PUT', `/v1/channels/${channelId}/messages/${messageId}/reactions/${THUMBS}/@me`, { user: host }), 204);
    await expectStatus(api('POST', `/v1/channels/${channelId}/webhooks`, { user: host, body: { name: 'h' } }), 201);
    await expectStatus(api('PUT', `/v1/servers/${server.id}/bans/${banned.id}`, { user: host, body: { reason: 'spam' } }), 200);

    const reads: [TestUser, string][] = [
      [guest, `/v1/users/${host.id}`],
      [guest, `/v1/servers/${server.id}/members`],
      [guest, `/v1/channels/${channelId}/messages`],
      [guest, `/v1/channels/${channelId}/messages/${messageId}/reactions/${THUMBS}`],
      [guest, `/v1/servers/${server.id}/messages/search?q=emailcheck`],
      [guest, '/v1/friends/requests'],
      [host, '/v1/friends/requests'],
      [guest, '/v1/dm/conversations'],
      [guest, `/v1/servers/${server.id}`],
      [guest, '/v1/discovery/servers?q=Email%20check'],
      [host, `/v1/servers/${server.id}/bans`],
      [host, `/v1/channels/${channelId}/webhooks`],
      [host, `/v1/servers/${server.id}/template`],
    ];
    const leaks: string[] = [];
    for (const [reader, path] of reads) {
      const res = await api('GET', path, { user: reader });
      expect(res.status, path).toBe(200);
      const text = JSON.stringify(res.body).toLowerCase();
      for (const other of [host, guest, banned].filter((u) => u !== reader)) {
        if (text.includes(other.email.toLowerCase())) leaks.push(`${path} shows ${other.username}`);
      }
    }
    expect(leaks).toEqual([]);
  });
});
