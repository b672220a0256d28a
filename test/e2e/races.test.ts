import { randomBytes } from 'node:crypto';
import { lastAttempt } from '@chat/testkit';
import { describe, expect, it } from 'vitest';
import { deviceKeys, oneTimeKeys } from './device-keys.ts';
import { api, conversationOnceKnown, newUser, postMessage, publicServer, randomIp, type TestUser } from './helpers.ts';

/**
 * Writes that race each other through the gateway: limits and Idempotency-Key under concurrency,
 * social's writes at the same moment, and writes racing the delete of what they touch.
 */

/** The user calling from a client IP of its own: concurrent calls must meet the rule under test, not the rate limit. */
const fresh = (user: TestUser) => ({ ...user, ip: randomIp() });
const sorted = (answers: { status: number }[]) => answers.map((a) => a.status).sort();
const THUMBS = '%F0%9F%91%8D';
type Answer = { status: number };

/** `n` new users, registered five at a time. */
async function newUsers(n: number, prefix: string): Promise<TestUser[]> {
  const users: TestUser[] = [];
  for (let i = 0; i < n; i += 5) users.push(...(await Promise.all(Array.from({ length: Math.min(5, n - i) }, () => newUser(prefix)))));
  return users;
}

/** Posts `n` messages at once and answers their ids. */
const postMany = (user: TestUser, channelId: string, n: number) =>
  Promise.all(Array.from({ length: n }, (_, i) => postMessage(user, channelId, `m${i}`, { ip: randomIp() })));

const memberIds = async (owner: TestUser, serverId: string) =>
  ((await api('GET', `/v1/servers/${serverId}/members?limit=100`, { user: owner })).body as { userId: string }[]).map((m) => m.userId);

async function newTextChannel(owner: TestUser, serverId: string, name = 'doomed'): Promise<string> {
  const res = await api('POST', `/v1/servers/${serverId}/channels`, { user: fresh(owner), body: { name, channelType: 'text' } });
  expect(res.status).toBe(201);
  return res.body.id;
}

describe('limits under concurrency', () => {
  it('lets exactly 3 of 12 users accepting a 3-use invite at once join, the others 404', async () => {
    const owner = await newUser('own');
    const { serverId } = await publicServer(owner, [], { isPublic: false });
    const invite = await api('POST', `/v1/servers/${serverId}/invites`, { user: owner, body: { maxUses: 3 } });
    expect(invite.status).toBe(201);
    const guests = await newUsers(12, 'inv');
    const answers = await Promise.all(guests.map((g) => api('POST', `/v1/invites/${invite.body.code}/accept`, { user: fresh(g) })));
    expect(sorted(answers)).toEqual([...Array(3).fill(200), ...Array(9).fill(404)]);
    const joined = guests.filter((_, i) => answers[i]?.status === 200).map((g) => g.id);
    expect((await memberIds(owner, serverId)).sort()).toEqual([owner.id, ...joined].sort());
  });

  it('pins exactly 5 of 15 messages pinned at once in a channel holding 45 pins, never more than 50', async () => {
    const owner = await newUser('own');
    const { textId } = await publicServer(owner);
    const ids = await postMany(owner, textId, 60);
    for (const id of ids.slice(0, 45)) expect((await api('PUT', `/v1/channels/${textId}/pins/${id}`, { user: owner })).status).toBe(204);
    const answers = await Promise.all(ids.slice(45).map((id) => api('PUT', `/v1/channels/${textId}/pins/${id}`, { user: fresh(owner) })));
    expect(sorted(answers)).toEqual([...Array(5).fill(204), ...Array(10).fill(400)]);
    const pins = await api('GET', `/v1/channels/${textId}/pins`, { user: owner });
    expect(pins.body).toHaveLength(50);
  });

  it('keeps one pending join request of a user who asks 10 times at once', async () => {
    const owner = await newUser('own');
    const { serverId } = await publicServer(owner, [], { requireApproval: true });
    const asker = await newUser('ask');
    const answers = await Promise.all(
      Array.from({ length: 10 }, () =>
        api('POST', `/v1/servers/${serverId}/join-requests`, { user: fresh(asker), body: { message: 'hi' } }),
      ),
    );
    expect(sorted(answers)).toEqual([201, ...Array(9).fill(409)]);
    const pending = await api('GET', `/v1/servers/${serverId}/join-requests`, { user: owner });
    expect(pending.body.map((r: { userId: string }) => r.userId)).toEqual([asker.id]);
  });

  it('takes one decision on a join request approved and rejected at once, and the membership follows it', async () => {
    const owner = await newUser('own');
    const { serverId } = await publicServer(owner, [], { requireApproval: true });
    for (const asker of await newUsers(3, 'ask')) {
      const request = await api('POST', `/v1/servers/${serverId}/join-requests`, { user: asker, body: {} });
      expect(request.status).toBe(201);
      const path = `/v1/servers/${serverId}/join-requests/${request.body.id}`;
      const [approve, reject, approveAgain] = await Promise.all([
        api('POST', `${path}/approve`, { user: fresh(owner) }),
        api('POST', `${path}/reject`, { user: fresh(owner) }),
        api('POST', `${path}/approve`, { user: fresh(owner) }),
      ]);
      const answers = [approve, reject, approveAgain] as Answer[];
      expect(answers.filter((a) => a.status === 200)).toHaveLength(1);
      expect(answers.filter((a) => a.status >= 500)).toEqual([]);
      const approved = approve?.status === 200 || approveAgain?.status === 200;
      expect((await memberIds(owner, serverId)).includes(asker.id), asker.username).toBe(approved);
    }
  });

  it('counts the members a burst of joins, leaves and kicks leaves behind', async () => {
    const owner = await newUser('own');
    const people = await newUsers(10, 'mc');
    const [leaving, joining] = [people.slice(0, 5), people.slice(5)];
    const { serverId } = await publicServer(owner, leaving);
    const answers = await Promise.all([
      ...leaving.map((p) => api('DELETE', `/v1/servers/${serverId}/members/@me`, { user: fresh(p) })),
      ...leaving.map((p) => api('DELETE', `/v1/servers/${serverId}/members/${p.id}`, { user: fresh(owner) })),
      ...joining.map((p) => api('POST', `/v1/servers/${serverId}/join`, { user: fresh(p) })),
      ...joining.map((p) => api('POST', `/v1/servers/${serverId}/join`, { user: fresh(p) })),
    ]);
    expect(sorted(answers).filter((s) => s >= 500)).toEqual([]);
    const members = await memberIds(owner, serverId);
    expect(members.sort()).toEqual([owner.id, ...joining.map((p) => p.id)].sort());
    const invite = await api('POST', `/v1/servers/${serverId}/invites`, { user: owner, body: {} });
    const preview = await api('GET', `/v1/invites/${invite.body.code}/preview`);
    expect(preview.body.server.memberCount).toBe(6);
  });

  it('counts 25 direct messages sent at once as 25 unread, and an ack in the middle leaves 15', async () => {
    const [reader, sender] = [await newUser('ua'), await newUser('ub')];
    const conversationId = await conversationOnceKnown(reader, sender);
    const sent = await Promise.all(
      Array.from({ length: 25 }, (_, i) =>
        api('POST', '/v1/dm/messages', { user: fresh(sender), body: { conversationId, content: `m${i}` } }),
      ),
    );
    expect(sorted(sent).filter((s) => s !== 201)).toEqual([]);
    const mentions = async () =>
      ((await api('GET', '/v1/users/@me/read-states', { user: reader })).body as { id: string; mentionCount: number }[]).find(
        (s) => s.id === conversationId,
      )?.mentionCount;
    // Read states follow social's own events, applied in their own time.
    expect(await lastAttempt(mentions, (n) => n === 25)).toBe(25);
    const ids = sent.map((r) => r.body.id as string).sort();
    expect((await api('PUT', `/v1/dm/conversations/${conversationId}/ack`, { user: reader, body: { messageId: ids[9] } })).status).toBe(
      200,
    );
    expect(await lastAttempt(mentions, (n) => n === 15)).toBe(15);
  });

  it('leaves the read mark of a channel at the newest of 12 acks sent at once, newest first', async () => {
    const [owner, reader] = [await newUser('own'), await newUser('oth')];
    const { textId } = await publicServer(owner, [reader]);
    const ids: string[] = [];
    for (let i = 0; i < 12; i++) ids.push(await postMessage(owner, textId, `a${i}`));
    const answers = await Promise.all(
      [...ids].reverse().map((messageId) => api('PUT', `/v1/channels/${textId}/ack`, { user: fresh(reader), body: { messageId } })),
    );
    expect(sorted(answers)).toEqual(Array(12).fill(200));
    const states = (await api('GET', '/v1/users/@me/read-states', { user: reader })).body as { id: string; lastReadMessageId: string }[];
    expect(states.find((s) => s.id === textId)?.lastReadMessageId).toBe(ids.at(-1));
  });

  it('accepts exactly 5 of 6 uploads of 100 one-time keys at once to an empty device, which then holds 500', async () => {
    const user = await newUser('keys');
    expect((await api('PUT', '/v1/keys/devices/phone', { user, body: deviceKeys() })).status).toBe(201);
    const answers = await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        api('POST', '/v1/keys/devices/phone/one-time-keys', {
          user: fresh(user),
          body: { keys: oneTimeKeys(...Array.from({ length: 100 }, (_, j) => i * 100 + j + 1)) },
        }),
      ),
    );
    expect(sorted(answers)).toEqual([200, 200, 200, 200, 200, 400]);
    expect((await api('GET', '/v1/keys/count', { user })).body).toEqual([{ deviceId: 'phone', oneTimeKeyCount: 500 }]);
  });

  it('stores one-time keys uploaded 5 times at once under the same ids once: one 200, four 409', async () => {
    const user = await newUser('keys');
    expect((await api('PUT', '/v1/keys/devices/phone', { user, body: deviceKeys() })).status).toBe(201);
    const answers = await Promise.all(
      Array.from({ length: 5 }, () =>
        api('POST', '/v1/keys/devices/phone/one-time-keys', { user: fresh(user), body: { keys: oneTimeKeys(1, 2, 3) } }),
      ),
    );
    expect(sorted(answers)).toEqual([200, 409, 409, 409, 409]);
    expect((await api('GET', '/v1/keys/count', { user })).body).toEqual([{ deviceId: 'phone', oneTimeKeyCount: 3 }]);
  });

  it('fills a music queue holding 95 tracks to 100 and no further when 12 tracks are queued at once', async () => {
    const owner = await newUser('own');
    const { serverId, voiceId } = await publicServer(owner);
    expect((await api('POST', '/v1/voice/join', { user: owner, body: { channelId: voiceId } })).status).toBe(200);
    const queue = (url: string) => api('POST', '/v1/music/queue', { user: fresh(owner), body: { channelId: voiceId, serverId, url } });
    for (let i = 0; i < 95; i += 5) {
      const batch = await Promise.all(Array.from({ length: 5 }, (_, j) => queue(`https://example.com/${i + j}.mp3`)));
      expect(sorted(batch)).toEqual(Array(5).fill(201));
    }
    const answers = await Promise.all(Array.from({ length: 12 }, (_, j) => queue(`https://example.com/x${j}.mp3`)));
    expect(sorted(answers)).toEqual([...Array(5).fill(201), ...Array(7).fill(409)]);
    const player = await api('GET', `/v1/music/${voiceId}`, { user: owner });
    expect(player.body.queue.length + (player.body.current ? 1 : 0)).toBe(100);
  });

  it('makes one temporary channel for a member who joins join-to-create 6 times at once', async () => {
    const [owner, member] = [await newUser('own'), await newUser('jt')];
    const { serverId } = await publicServer(owner, [member]);
    const jtc = await api('POST', `/v1/servers/${serverId}/channels`, { user: owner, body: { name: 'jtc', channelType: 'voice' } });
    expect((await api('PATCH', `/v1/servers/${serverId}`, { user: owner, body: { jtcChannelId: jtc.body.id } })).status).toBe(200);
    const answers = await Promise.all(
      Array.from({ length: 6 }, () => api('POST', '/v1/voice/join', { user: fresh(member), body: { channelId: jtc.body.id } })),
    );
    expect(sorted(answers).filter((s) => s >= 500)).toEqual([]);
    const channels = (await api('GET', `/v1/servers/${serverId}/channels`, { user: owner })).body as { id: string; isTemporary: boolean }[];
    const temporary = channels.filter((c) => c.isTemporary);
    expect(temporary).toHaveLength(1);
    const states = (await api('GET', `/v1/servers/${serverId}/voice-states`, { user: owner })).body as {
      userId: string;
      channelId: string;
    }[];
    expect(states.filter((s) => s.userId === member.id).map((s) => s.channelId)).toEqual([temporary[0]?.id]);
  });
});

describe('Idempotency-Key under concurrency', () => {
  const key = () => `k-${randomBytes(8).toString('hex')}`;
  const withKey = (k: string) => ({ 'idempotency-key': k });

  it('sends one direct message for 10 retries at once with one key', async () => {
    const [a, b] = [await newUser('da'), await newUser('db')];
    const conversationId = await conversationOnceKnown(a, b);
    const k = key();
    const answers = await Promise.all(
      Array.from({ length: 10 }, () =>
        api('POST', '/v1/dm/messages', { user: fresh(a), body: { conversationId, content: 'once' }, headers: withKey(k) }),
      ),
    );
    expect(sorted(answers).filter((s) => s !== 201 && s !== 409)).toEqual([]);
    expect(new Set(answers.filter((r) => r.status === 201).map((r) => r.body.id)).size).toBe(1);
    const page = await api('GET', `/v1/dm/conversations/${conversationId}/messages`, { user: a });
    expect(page.body.filter((m: { content: string }) => m.content === 'once')).toHaveLength(1);
  });

  it('sends one friend request for 10 retries at once with one key: 201 or 409 "in progress", and a later retry replays the 201', async () => {
    const [a, b] = [await newUser('fa'), await newUser('fb')];
    await conversationOnceKnown(a, b);
    const k = key();
    const send = () => api('POST', '/v1/friends/requests', { user: fresh(a), body: { userId: b.id }, headers: withKey(k) });
    const answers = await Promise.all(Array.from({ length: 10 }, send));
    expect(sorted(answers).filter((s) => s !== 201 && s !== 409)).toEqual([]);
    for (const conflict of answers.filter((r) => r.status === 409)) expect(conflict.body.error).toMatch(/Idempotency-Key/);
    expect((await send()).status).toBe(201);
    expect((await api('GET', '/v1/friends/requests', { user: b })).body).toHaveLength(1);
  });

  it('opens one group for 8 retries at once with one key', async () => {
    const [a, b, c] = [await newUser('ca'), await newUser('cb'), await newUser('cc')];
    await conversationOnceKnown(b, a);
    await conversationOnceKnown(c, a);
    const k = key();
    const answers = await Promise.all(
      Array.from({ length: 8 }, () =>
        api('POST', '/v1/dm/conversations', { user: fresh(a), body: { userIds: [b.id, c.id] }, headers: withKey(k) }),
      ),
    );
    expect(sorted(answers).filter((s) => s !== 201 && s !== 409)).toEqual([]);
    const ids = new Set(answers.filter((r) => r.status === 201).map((r) => r.body.id));
    expect(ids.size).toBe(1);
    const groups = (await api('GET', '/v1/dm/conversations', { user: a })).body as { id: string; participants: unknown[] }[];
    expect(groups.filter((g) => g.participants.length === 3).map((g) => g.id)).toEqual([...ids]);
  });

  it('queues one track for 10 retries at once with one key', async () => {
    const owner = await newUser('own');
    const { serverId, voiceId } = await publicServer(owner);
    expect((await api('POST', '/v1/voice/join', { user: owner, body: { channelId: voiceId } })).status).toBe(200);
    const k = key();
    const url = 'https://example.com/once.mp3';
    const answers = await Promise.all(
      Array.from({ length: 10 }, () =>
        api('POST', '/v1/music/queue', { user: fresh(owner), body: { channelId: voiceId, serverId, url }, headers: withKey(k) }),
      ),
    );
    expect(sorted(answers).filter((s) => s !== 201 && s !== 409)).toEqual([]);
    const player = await api('GET', `/v1/music/${voiceId}`, { user: owner });
    const tracks = [...(player.body.current ? [player.body.current] : []), ...player.body.queue];
    expect(tracks.filter((t: { url: string }) => t.url === url)).toHaveLength(1);
  });
});

describe('social writes at the same moment', () => {
  it('never leaves two users friends while one blocks the other, when the block races the accept', async () => {
    for (let round = 0; round < 3; round++) {
      const [a, b] = [await newUser('ba'), await newUser('bb')];
      await conversationOnceKnown(a, b);
      expect((await api('POST', '/v1/friends/requests', { user: a, body: { userId: b.id } })).status).toBe(201);
      const [accept, block] = await Promise.all([
        api('POST', '/v1/friends/accept', { user: fresh(b), body: { userId: a.id } }),
        api('POST', '/v1/friends/block', { user: fresh(a), body: { userId: b.id } }),
      ]);
      expect(accept?.status).toBeLessThan(500);
      expect(block?.status).toBe(201);
      expect((await api('GET', '/v1/friends/blocked', { user: a })).body.map((x: { user: { id: string } }) => x.user.id)).toEqual([b.id]);
      expect((await api('GET', '/v1/friends', { user: a })).body).toEqual([]);
      expect((await api('GET', '/v1/friends', { user: b })).body).toEqual([]);
    }
  });

  it('removes a group whose participants all leave at once, answering each 204', async () => {
    const people = await newUsers(5, 'gl');
    const [owner, ...rest] = people as [TestUser, ...TestUser[]];
    for (const p of rest) await conversationOnceKnown(owner, p);
    const group = await api('POST', '/v1/dm/conversations', { user: owner, body: { userIds: rest.map((p) => p.id) } });
    expect(group.status).toBe(201);
    const answers = await Promise.all(
      people.map((p) => api('DELETE', `/v1/dm/conversations/${group.body.id}/members/@me`, { user: fresh(p) })),
    );
    expect(sorted(answers)).toEqual(Array(5).fill(204));
    for (const p of people) expect((await api('GET', `/v1/dm/conversations/${group.body.id}`, { user: p })).status).toBe(404);
  });

  it('hands the group to the one who stays when the owner and the next in line leave at once', async () => {
    for (let round = 0; round < 3; round++) {
      const people = await newUsers(4, 'go');
      const [owner, ...rest] = people as [TestUser, ...TestUser[]];
      for (const p of rest) await conversationOnceKnown(owner, p);
      const group = await api('POST', '/v1/dm/conversations', { user: owner, body: { userIds: rest.map((p) => p.id) } });
      expect(group.status).toBe(201);
      const leavers = [owner, rest[0]!, rest[1]!];
      const answers = await Promise.all(
        leavers.map((p) => api('DELETE', `/v1/dm/conversations/${group.body.id}/members/@me`, { user: fresh(p) })),
      );
      expect(sorted(answers)).toEqual([204, 204, 204]);
      const stayer = rest[2]!;
      const after = await api('GET', `/v1/dm/conversations/${group.body.id}`, { user: stayer });
      expect(after.status).toBe(200);
      expect(after.body.ownerId).toBe(stayer.id);
    }
  });

  it('ends a call in a consistent state when the callee accepts as the caller hangs up', async () => {
    for (let round = 0; round < 3; round++) {
      const [caller, callee] = [await newUser('ca'), await newUser('cb')];
      const conversationId = await conversationOnceKnown(caller, callee);
      const ring = await api('POST', `/v1/dm/conversations/${conversationId}/call`, { user: caller });
      expect(ring.status).toBe(201);
      const answers = await Promise.all([
        api('POST', `/v1/calls/${ring.body.id}/accept`, { user: fresh(callee) }),
        api('POST', `/v1/calls/${ring.body.id}/leave`, { user: fresh(caller) }),
      ]);
      expect(sorted(answers).filter((s) => s >= 500)).toEqual([]);
      const call = (await api('GET', `/v1/calls/${ring.body.id}`, { user: caller })).body;
      const joined = call.participants.filter((p: { state: string }) => p.state === 'joined');
      // Ended with nobody in it, or live with someone in it: never one without the other.
      expect({ state: call.state, joined: joined.length }).toEqual(
        call.state === 'ended' ? { state: 'ended', joined: 0 } : { state: call.state, joined: expect.any(Number) },
      );
      if (call.state !== 'ended') expect(joined.length).toBeGreaterThan(0);
    }
  });
});

describe('writes racing the delete of their channel or server', () => {
  type Write = (owner: TestUser, channelId: string, messageId: string, i: number) => Promise<Answer>;
  const channelWrites: [string, Write, number[]][] = [
    ['a pin', (o, c, m) => api('PUT', `/v1/channels/${c}/pins/${m}`, { user: fresh(o) }), [204, 404]],
    ['a reaction', (o, c, m) => api('PUT', `/v1/channels/${c}/messages/${m}/reactions/${THUMBS}/@me`, { user: fresh(o) }), [204, 404]],
    ['a post', (o, c, _m, i) => api('POST', `/v1/channels/${c}/messages`, { user: fresh(o), body: { content: `p${i}` } }), [201, 404]],
    [
      'an edit or a message delete',
      (o, c, m, i) =>
        i % 2
          ? api('PATCH', `/v1/channels/${c}/messages/${m}`, { user: fresh(o), body: { content: 'edited' } })
          : api('DELETE', `/v1/channels/${c}/messages/${m}`, { user: fresh(o) }),
      [200, 204, 404],
    ],
  ];

  it.each(channelWrites)('answers %s racing its channel’s deletion with success or 404, never a 5xx', async (_what, write, allowed) => {
    const owner = await newUser('own');
    const { serverId } = await publicServer(owner);
    for (let round = 0; round < 3; round++) {
      const channelId = await newTextChannel(owner, serverId);
      const ids = await postMany(owner, channelId, 8);
      const deleting = api('DELETE', `/v1/channels/${channelId}`, { user: fresh(owner) });
      const answers = await Promise.all(ids.map((id, i) => write(owner, channelId, id, i)));
      expect((await deleting).status).toBe(204);
      expect(sorted(answers).filter((s) => !allowed.includes(s))).toEqual([]);
      expect((await api('GET', `/v1/channels/${channelId}/messages`, { user: owner })).status).toBe(404);
    }
  });

  it('answers webhook executions racing their channel’s deletion with 200, 401 or 404, never a 5xx', async () => {
    const owner = await newUser('own');
    const { serverId } = await publicServer(owner);
    for (let round = 0; round < 3; round++) {
      const channelId = await newTextChannel(owner, serverId);
      const hook = await api('POST', `/v1/channels/${channelId}/webhooks`, { user: owner, body: { name: 'hook' } });
      expect(hook.status).toBe(201);
      const [deleted, ...answers] = await Promise.all([
        api('DELETE', `/v1/channels/${channelId}`, { user: fresh(owner) }),
        ...Array.from({ length: 8 }, (_, i) =>
          api('POST', `/v1/webhooks/${hook.body.id}/${hook.body.token}?wait=true`, { ip: randomIp(), body: { content: `w${i}` } }),
        ),
      ]);
      expect(deleted?.status).toBe(204);
      expect(sorted(answers).filter((s) => s !== 200 && s !== 401 && s !== 404)).toEqual([]);
    }
  });

  it('lets every join through while the server’s entrance channel is deleted', async () => {
    const owner = await newUser('own');
    for (let round = 0; round < 2; round++) {
      const { serverId } = await publicServer(owner);
      const entrance = await newTextChannel(owner, serverId, 'welcome');
      expect((await api('PATCH', `/v1/servers/${serverId}`, { user: owner, body: { entranceChannelId: entrance } })).status).toBe(200);
      const guests = await newUsers(6, 'jn');
      const [deleted, ...answers] = await Promise.all([
        api('DELETE', `/v1/channels/${entrance}`, { user: fresh(owner) }),
        ...guests.map((g) => api('POST', `/v1/servers/${serverId}/join`, { user: fresh(g) })),
      ]);
      expect(deleted?.status).toBe(204);
      expect(sorted(answers)).toEqual(Array(6).fill(200));
      expect((await memberIds(owner, serverId)).length).toBe(7);
    }
  });

  it('answers edits racing the delete of their message with 200 or 404, and the message is gone', async () => {
    const owner = await newUser('own');
    const { textId } = await publicServer(owner);
    for (let round = 0; round < 3; round++) {
      const messageId = await postMessage(owner, textId, 'v0');
      const path = `/v1/channels/${textId}/messages/${messageId}`;
      const [deleted, ...edits] = await Promise.all([
        api('DELETE', path, { user: fresh(owner) }),
        ...Array.from({ length: 5 }, (_, i) => api('PATCH', path, { user: fresh(owner), body: { content: `v${i + 1}` } })),
      ]);
      expect(deleted?.status).toBe(204);
      expect(sorted(edits).filter((s) => s !== 200 && s !== 404)).toEqual([]);
      const page = await api('GET', `/v1/channels/${textId}/messages?limit=100`, { user: owner });
      expect(page.body.map((m: { id: string }) => m.id)).not.toContain(messageId);
    }
  });

  it('leaves nobody holding a role deleted while it is given to 8 members', async () => {
    const owner = await newUser('own');
    const guests = await newUsers(8, 'rl');
    const { serverId } = await publicServer(owner, guests);
    const role = await api('POST', `/v1/servers/${serverId}/roles`, { user: owner, body: { name: 'doomed' } });
    expect(role.status).toBe(201);
    const [deleted, ...gives] = await Promise.all([
      api('DELETE', `/v1/servers/${serverId}/roles/${role.body.id}`, { user: fresh(owner) }),
      ...guests.map((g) => api('PUT', `/v1/servers/${serverId}/members/${g.id}/roles/${role.body.id}`, { user: fresh(owner) })),
    ]);
    expect(deleted?.status).toBe(204);
    expect(sorted(gives).filter((s) => s !== 204 && s !== 404)).toEqual([]);
    const members = (await api('GET', `/v1/servers/${serverId}/members?limit=100`, { user: owner })).body as { roleIds: string[] }[];
    expect(members.filter((m) => m.roleIds.includes(role.body.id))).toEqual([]);
  });

  it('leaves no banned user a member when bans race their joins', async () => {
    const owner = await newUser('own');
    const { serverId } = await publicServer(owner);
    const trolls = await newUsers(6, 'tr');
    const answers = await Promise.all(
      trolls.flatMap((t) => [
        api('POST', `/v1/servers/${serverId}/join`, { user: fresh(t) }),
        api('PUT', `/v1/servers/${serverId}/bans/${t.id}`, { user: fresh(owner), body: { reason: 'race' } }),
      ]),
    );
    expect(sorted(answers).filter((s) => s >= 500)).toEqual([]);
    const bans = (await api('GET', `/v1/servers/${serverId}/bans`, { user: owner })).body as { userId: string }[];
    expect(bans.map((b) => b.userId).sort()).toEqual(trolls.map((t) => t.id).sort());
    expect(await memberIds(owner, serverId)).toEqual([owner.id]);
  });

  it('answers invite accepts racing the server’s deletion with 200 or 404, never a 5xx', async () => {
    for (let round = 0; round < 3; round++) {
      const owner = await newUser('own');
      const { serverId } = await publicServer(owner, [], { isPublic: false });
      const invite = await api('POST', `/v1/servers/${serverId}/invites`, { user: owner, body: {} });
      const guests = await newUsers(6, 'dg');
      const [deleted, ...accepts] = await Promise.all([
        api('DELETE', `/v1/servers/${serverId}`, { user: fresh(owner) }),
        ...guests.map((g) => api('POST', `/v1/invites/${invite.body.code}/accept`, { user: fresh(g) })),
      ]);
      expect(deleted?.status).toBe(204);
      expect(sorted(accepts).filter((s) => s !== 200 && s !== 404)).toEqual([]);
      expect((await api('GET', `/v1/servers/${serverId}`, { user: owner })).status).toBe(404);
    }
  });

  it('answers channels and categories created while the server is deleted with 201 or 404, never a foreign-key 500', async () => {
    for (let round = 0; round < 3; round++) {
      const owner = await newUser('own');
      const { serverId } = await publicServer(owner);
      const [deleted, ...creates] = await Promise.all([
        api('DELETE', `/v1/servers/${serverId}`, { user: fresh(owner) }),
        ...Array.from({ length: 4 }, (_, i) =>
          api('POST', `/v1/servers/${serverId}/channels`, { user: fresh(owner), body: { name: `late${i}`, channelType: 'text' } }),
        ),
        ...Array.from({ length: 4 }, (_, i) =>
          api('POST', `/v1/servers/${serverId}/categories`, { user: fresh(owner), body: { name: `late${i}` } }),
        ),
      ]);
      expect(deleted?.status).toBe(204);
      expect(sorted(creates).filter((s) => s !== 201 && s !== 404)).toEqual([]);
    }
  });

  it('answers pins, reactions, role edits, invites and join-request approvals racing the server’s deletion without a 5xx', async () => {
    const failures: string[] = [];
    for (let round = 0; round < 2; round++) {
      const owner = await newUser('own');
      const { serverId, textId } = await publicServer(owner, [], { requireApproval: true });
      const ids = await postMany(owner, textId, 6);
      const requests: string[] = [];
      for (const asker of await newUsers(3, 'ask')) {
        requests.push((await api('POST', `/v1/servers/${serverId}/join-requests`, { user: asker, body: {} })).body.id);
      }
      const role = (await api('POST', `/v1/servers/${serverId}/roles`, { user: owner, body: { name: 'r' } })).body.id;
      const writes: [string, Promise<Answer>][] = [
        ...ids
          .slice(0, 3)
          .map((id): [string, Promise<Answer>] => ['pin', api('PUT', `/v1/channels/${textId}/pins/${id}`, { user: fresh(owner) })]),
        ...ids
          .slice(3)
          .map((id): [string, Promise<Answer>] => [
            'reaction',
            api('PUT', `/v1/channels/${textId}/messages/${id}/reactions/${THUMBS}/@me`, { user: fresh(owner) }),
          ]),
        ...requests.map((r): [string, Promise<Answer>] => [
          'approval',
          api('POST', `/v1/servers/${serverId}/join-requests/${r}/approve`, { user: fresh(owner) }),
        ]),
        ['role edit', api('PATCH', `/v1/servers/${serverId}/roles/${role}`, { user: fresh(owner), body: { name: 'x' } })],
        ['invite', api('POST', `/v1/servers/${serverId}/invites`, { user: fresh(owner), body: {} })],
        ['server delete', api('DELETE', `/v1/servers/${serverId}`, { user: fresh(owner) })],
      ];
      const answers = await Promise.all(writes.map(([, pending]) => pending));
      answers.forEach((a, i) => {
        if (a.status >= 500) failures.push(`${writes[i]?.[0]}: ${a.status}`);
      });
      expect(answers.at(-1)?.status).toBe(204);
    }
    expect(failures).toEqual([]);
  });

  it('answers reactions and an edit racing the delete of a direct message without a 5xx, and the message is gone', async () => {
    const [a, b] = [await newUser('ra'), await newUser('rb')];
    const conversationId = await conversationOnceKnown(a, b);
    for (let round = 0; round < 3; round++) {
      const sent = await api('POST', '/v1/dm/messages', { user: a, body: { conversationId, content: 'r' } });
      expect(sent.status).toBe(201);
      const id = sent.body.id;
      const [deleted, ...answers] = await Promise.all([
        api('DELETE', `/v1/dm/messages/${id}`, { user: fresh(a) }),
        api('PATCH', `/v1/dm/messages/${id}`, { user: fresh(a), body: { content: 'edited' } }),
        ...[THUMBS, '%F0%9F%98%80', '%F0%9F%98%81'].flatMap((emoji) =>
          [a, b].map((user) => api('PUT', `/v1/dm/messages/${id}/reactions/${emoji}/@me`, { user: fresh(user) })),
        ),
      ]);
      expect(deleted?.status).toBe(204);
      expect(sorted(answers).filter((s) => s >= 500)).toEqual([]);
      const page = await api('GET', `/v1/dm/conversations/${conversationId}/messages`, { user: b });
      expect(page.body.map((m: { id: string }) => m.id)).not.toContain(id);
    }
  });

  it('answers an upload of one-time keys racing the device’s re-registration and deletion without a 5xx', async () => {
    const user = await newUser('keys');
    expect((await api('PUT', '/v1/keys/devices/phone', { user, body: deviceKeys() })).status).toBe(201);
    const answers = await Promise.all([
      api('POST', '/v1/keys/devices/phone/one-time-keys', { user: fresh(user), body: { keys: oneTimeKeys(1, 2, 3) } }),
      api('PUT', '/v1/keys/devices/phone', { user: fresh(user), body: deviceKeys() }),
      api('DELETE', '/v1/keys/devices/phone', { user: fresh(user) }),
    ]);
    expect(sorted(answers).filter((s) => s >= 500)).toEqual([]);
    expect((await api('GET', '/v1/keys/count', { user })).status).toBe(200);
  });
});
