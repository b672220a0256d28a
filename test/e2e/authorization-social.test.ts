import { type MatrixRequest, type MatrixRow, until } from '@chat/testkit';
import { beforeAll, describe, expect } from 'vitest';
import { deviceKeys, oneTimeKeys } from './device-keys.ts';
import { api, conversationOnceKnown, newUser, randomIp, type TestUser } from './helpers.ts';
import { matrixTests } from './matrix.ts';

/**
 * Social's authorization matrix through the gateway. The owner holds the resources (a 1:1
 * conversation and a group with the member, their messages, calls, friends, blocks and devices);
 * the member is the owner's friend and shares both conversations; the outsider shares nothing; the
 * owner has blocked `blocked` (after a conversation between them was opened); anonymous has no
 * token. Someone else's private thing answers 404 (never revealing that it exists), someone else's
 * message in a shared conversation 403; every refusal leaves the row's state as it was.
 * For read states and notifications the owner also owns a private server where the member and
 * `denied` (denied VIEW_CHANNEL on its channel by an override) belong; `denied` applies only there.
 */
const ACTORS = ['owner', 'member', 'denied', 'outsider', 'blocked', 'anonymous'] as const;
type Actor = (typeof ACTORS)[number];
type Row = MatrixRow<Actor>;
const users = {} as Record<Actor, TestUser | undefined>;
const as = (actor: Actor) => users[actor]!;
let pair: string;
let blockedPair: string;
let group: string;
let third: TestUser;
let ownerMessage: string;
let gameId: string;
let blockedMessage: string;
let serverId: string;
/** The server's channel, hidden from `denied` by an override. */
let channelId: string;
let channelMessage: string;
/** A word only in the owner's messages of the 1:1 conversation and the group. */
const NEEDLE = 'matrixneedle';
const VIEW_CHANNEL = 1 << 10;

/** Retries a call that social answers 404 only because its read-model has not heard of a new user yet. */
async function once(call: () => ReturnType<typeof api>, wanted: number) {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const res = await call();
    if (res.status === wanted) return res;
    if (res.status !== 404 || Date.now() > deadline) throw new Error(`wanted ${wanted}, got ${res.status}: ${JSON.stringify(res.body)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const post = (user: TestUser, path: string, body?: unknown) => api('POST', path, { user, body, ip: randomIp() });

async function newGroup(): Promise<string> {
  return (await once(() => post(as('owner'), '/v1/dm/conversations', { userIds: [as('member').id, third.id] }), 201)).body.id;
}

async function message(conversationId: string, content = 'matrix'): Promise<string> {
  return (await once(() => post(as('owner'), '/v1/dm/messages', { conversationId, content }), 201)).body.id;
}

async function ringingCall(): Promise<string> {
  return (await post(as('owner'), `/v1/dm/conversations/${await newGroup()}/call`)).body.id;
}

/** A fresh user that social knows, with the owner's friend request, friendship or block set up by `link`. */
async function ownersOther(link: 'request' | 'friend' | 'block'): Promise<string> {
  const other = await newUser('other');
  if (link === 'block') await once(() => post(as('owner'), '/v1/friends/block', { userId: other.id }), 201);
  else await once(() => post(as('owner'), '/v1/friends/requests', { userId: other.id }), 201);
  if (link === 'friend') expect((await post(other, '/v1/friends/accept', { userId: as('owner').id })).status).toBe(200);
  return other.id;
}

/** A fresh user that social's read-model already knows. */
async function knownUser(): Promise<string> {
  const user = await newUser('known');
  await conversationOnceKnown(third, user);
  return user.id;
}

/** A fresh user with a pending friend request to the member. */
async function askerOfMember(): Promise<string> {
  const asker = await newUser('asker');
  await once(() => post(asker, '/v1/friends/requests', { userId: as('member').id }), 201);
  return asker.id;
}

const read = async (user: TestUser, path: string) => {
  const res = await api('GET', path, { user, ip: randomIp() });
  return { status: res.status, body: res.body };
};
const ownersMessages = (conversationId: string) => read(as('owner'), `/v1/dm/conversations/${conversationId}/messages`);
/** Who the user's friends, requests (with their direction) and blocks are: ids only, as names catch up on their own. */
const relationsOf = async (user: TestUser) =>
  Promise.all(
    ['/v1/friends', '/v1/friends/requests', '/v1/friends/blocked'].map(async (path) =>
      (await read(user, path)).body.map((entry: { user: { id: string }; direction?: string }) => [entry.user.id, entry.direction]),
    ),
  );
const ownersRelations = () => relationsOf(as('owner'));
const membersRelations = () => relationsOf(as('member'));
const callState = (request: MatrixRequest) => read(as('owner'), `/v1/calls/${request.params!.id}`);
const groupState = (request: MatrixRequest) => read(as('owner'), `/v1/dm/conversations/${request.params!.id}`);
type Notification = { id: string; messageId: string | null; channelId: string | null; conversationId: string | null };
const feedOf = async (actor: Actor): Promise<Notification[]> => (await read(as(actor), '/v1/notifications')).body.notifications;
/** The caller's own read state of the acked channel or conversation (the owner's, for a call without a token). */
const readStateOf = (targetId: (request: MatrixRequest) => string) => async (request: MatrixRequest, actor: Actor) => {
  const states: { id: string }[] = (await read(as(actor === 'anonymous' ? 'owner' : actor), '/v1/users/@me/read-states')).body;
  return states.find((state) => state.id === targetId(request)) ?? null;
};

beforeAll(async () => {
  for (const actor of ['owner', 'member', 'denied', 'outsider', 'blocked'] as const) users[actor] = await newUser(actor);
  third = await newUser('third');
  pair = await conversationOnceKnown(as('owner'), as('member'));
  blockedPair = await conversationOnceKnown(as('owner'), as('blocked'));
  blockedMessage = await message(blockedPair, 'before the block');
  await conversationOnceKnown(as('owner'), third);
  expect((await post(as('owner'), '/v1/friends/requests', { userId: as('member').id })).status).toBe(201);
  expect((await post(as('member'), '/v1/friends/accept', { userId: as('owner').id })).status).toBe(200);
  expect((await post(as('owner'), '/v1/friends/block', { userId: as('blocked').id })).status).toBe(201);
  group = await newGroup();
  ownerMessage = await message(pair, 'hello');
  expect((await api('PUT', '/v1/keys/devices/phone', { user: as('owner'), body: deviceKeys() })).status).toBe(201);
  gameId = (await read(as('owner'), '/v1/games?q=minecraft&limit=1')).body[0].id;
  for (const conversationId of [pair, group]) await message(conversationId, `${NEEDLE} here`);
  await serverWithHiddenChannel();
}, 60_000);

/**
 * The owner's private server, the member and `denied` in it, its channel hidden from `denied` (who
 * posted there first), a message there naming both, and the owner's own notification settings for
 * it; waits until the member's feed has the mention, so that `denied` having none shows the
 * filter, not lag.
 */
async function serverWithHiddenChannel() {
  serverId = (await post(as('owner'), '/v1/servers', { name: 'Read states matrix' })).body.id;
  const code = (await post(as('owner'), `/v1/servers/${serverId}/invites`, {})).body.code;
  for (const actor of ['member', 'denied'] as const) await once(() => post(as(actor), `/v1/invites/${code}/accept`), 200);
  channelId = (await post(as('owner'), `/v1/servers/${serverId}/channels`, { name: 'news', channelType: 'text' })).body.id;
  // Posted in before the override: `denied` has a read state there, which only the view check hides.
  expect((await post(as('denied'), `/v1/channels/${channelId}/messages`, { content: 'before the override' })).status).toBe(201);
  const deny = { userId: as('denied').id, allowBits: 0, denyBits: VIEW_CHANNEL };
  expect((await api('PUT', `/v1/channels/${channelId}/permissions`, { user: as('owner'), body: deny })).status).toBe(200);
  const content = `<@${as('member').id}> <@${as('denied').id}> read this`;
  channelMessage = (await post(as('owner'), `/v1/channels/${channelId}/messages`, { content })).body.id;
  const settings = { level: 'none' };
  expect((await api('PUT', `/v1/users/@me/notification-settings/${serverId}`, { user: as('owner'), body: settings })).status).toBe(200);
  await until(async () => (await feedOf('member')).some((n) => n.messageId === channelMessage), { what: "the member's mention" });
}

const ALL_OK = (status: number) => ({ owner: status, member: status, outsider: status, blocked: status, anonymous: 401 });
const PARTICIPANTS = (status: number) => ({ owner: status, member: status, outsider: 404, blocked: 404, anonymous: 401 });

const FRIENDS: Row[] = [
  {
    route: 'POST /v1/friends/requests',
    name: 'to the owner',
    request: () => ({ body: { userId: as('owner').id } }),
    state: ownersRelations,
    expect: { owner: 400, member: 409, outsider: 201, blocked: 404, anonymous: 401 },
  },
  { route: 'GET /v1/friends/requests', expect: ALL_OK(200) },
  {
    route: 'POST /v1/friends/accept',
    name: 'a request made to the member',
    request: async () => ({ body: { userId: await askerOfMember() } }),
    state: membersRelations,
    expect: { owner: 404, member: 200, outsider: 404, blocked: 404, anonymous: 401 },
  },
  {
    route: 'POST /v1/friends/decline',
    name: 'a request made to the member',
    request: async () => ({ body: { userId: await askerOfMember() } }),
    state: membersRelations,
    expect: { owner: 404, member: 204, outsider: 404, blocked: 404, anonymous: 401 },
  },
  {
    route: 'POST /v1/friends/cancel',
    name: 'a request the owner made',
    request: async () => ({ body: { userId: await ownersOther('request') } }),
    state: ownersRelations,
    expect: { owner: 204, member: 404, outsider: 404, blocked: 404, anonymous: 401 },
  },
  { route: 'GET /v1/friends', expect: ALL_OK(200) },
  {
    route: 'DELETE /v1/friends/:userId',
    name: 'a friend of the owner',
    request: async () => ({ params: { userId: await ownersOther('friend') } }),
    state: ownersRelations,
    expect: { owner: 204, member: 404, outsider: 404, blocked: 404, anonymous: 401 },
  },
  {
    route: 'POST /v1/friends/block',
    name: 'anyone may block anyone (a fresh user each)',
    request: async () => ({ body: { userId: await knownUser() } }),
    expect: { owner: 201, member: 201, outsider: 201, blocked: 201, anonymous: 401 },
  },
  {
    route: 'DELETE /v1/friends/block/:userId',
    name: 'a block the owner made',
    request: async () => ({ params: { userId: await ownersOther('block') } }),
    state: ownersRelations,
    expect: { owner: 204, member: 404, outsider: 404, blocked: 404, anonymous: 401 },
  },
  { route: 'GET /v1/friends/blocked', expect: ALL_OK(200) },
];

const CONVERSATIONS: Row[] = [
  { route: 'GET /v1/dm/conversations', expect: ALL_OK(200) },
  { route: 'GET /v1/dm/conversations/:id', name: '1:1', request: () => ({ params: { id: pair } }), expect: PARTICIPANTS(200) },
  { route: 'GET /v1/dm/conversations/:id', name: 'group', request: () => ({ params: { id: group } }), expect: PARTICIPANTS(200) },
  {
    route: 'DELETE /v1/dm/conversations/:id/members/@me',
    name: 'leaving a fresh group',
    request: async () => ({ params: { id: await newGroup() } }),
    state: groupState,
    expect: PARTICIPANTS(204),
  },
  {
    route: 'DELETE /v1/dm/conversations/:id/members/@me',
    name: 'a 1:1 conversation cannot be left',
    request: () => ({ params: { id: pair } }),
    state: groupState,
    expect: PARTICIPANTS(400),
  },
  { route: 'GET /v1/dm/conversations/:id/messages', request: () => ({ params: { id: pair } }), expect: PARTICIPANTS(200) },
  {
    route: 'POST /v1/dm/messages',
    name: 'into the 1:1 conversation',
    request: () => ({ body: { conversationId: pair, content: 'cell' } }),
    state: () => ownersMessages(pair),
    expect: PARTICIPANTS(201),
  },
  {
    route: 'POST /v1/dm/messages',
    name: 'into the group',
    request: () => ({ body: { conversationId: group, content: 'cell' } }),
    state: () => ownersMessages(group),
    expect: PARTICIPANTS(201),
  },
  {
    route: 'POST /v1/dm/messages',
    name: 'between the owner and the user they blocked',
    request: () => ({ body: { conversationId: blockedPair, content: 'cell' } }),
    state: () => ownersMessages(blockedPair),
    expect: { owner: 403, member: 404, outsider: 404, blocked: 403, anonymous: 401 },
  },
  {
    route: 'PATCH /v1/dm/messages/:id',
    name: "the owner's message",
    request: () => ({ params: { id: ownerMessage }, body: { content: 'edited by someone' } }),
    state: () => ownersMessages(pair),
    expect: { owner: 200, member: 403, outsider: 404, blocked: 404, anonymous: 401 },
  },
  {
    route: 'DELETE /v1/dm/messages/:id',
    name: "the owner's message",
    request: async () => ({ params: { id: await message(pair) } }),
    state: () => ownersMessages(pair),
    expect: { owner: 204, member: 403, outsider: 404, blocked: 404, anonymous: 401 },
  },
  {
    route: 'PUT /v1/dm/messages/:id/reactions/:emoji/@me',
    request: () => ({ params: { id: ownerMessage, emoji: '👍' } }),
    state: () => ownersMessages(pair),
    expect: PARTICIPANTS(204),
  },
  {
    route: 'DELETE /v1/dm/messages/:id/reactions/:emoji/@me',
    request: () => ({ params: { id: ownerMessage, emoji: '👍' } }),
    state: () => ownersMessages(pair),
    expect: PARTICIPANTS(204),
  },
  { route: 'POST /v1/dm/conversations/:id/typing', request: () => ({ params: { id: pair } }), expect: PARTICIPANTS(204) },
];

const CALLS: Row[] = [
  {
    route: 'POST /v1/dm/conversations/:id/call',
    name: 'in a fresh group',
    request: async () => ({ params: { id: await newGroup() } }),
    expect: PARTICIPANTS(201),
  },
  {
    route: 'POST /v1/dm/conversations/:id/call',
    name: 'between the owner and the user they blocked',
    request: () => ({ params: { id: blockedPair } }),
    expect: { owner: 403, member: 404, outsider: 404, blocked: 403, anonymous: 401 },
  },
  {
    route: 'GET /v1/calls/:id',
    request: async () => ({ params: { id: await ringingCall() } }),
    expect: PARTICIPANTS(200),
  },
  {
    route: 'POST /v1/calls/:id/accept',
    name: 'ringing for the member (the caller is already in it)',
    request: async () => ({ params: { id: await ringingCall() } }),
    state: callState,
    expect: { owner: 200, member: 200, outsider: 404, blocked: 404, anonymous: 401 },
  },
  {
    route: 'POST /v1/calls/:id/decline',
    name: 'ringing for the member',
    request: async () => ({ params: { id: await ringingCall() } }),
    state: callState,
    expect: { owner: 409, member: 200, outsider: 404, blocked: 404, anonymous: 401 },
  },
  {
    route: 'POST /v1/calls/:id/leave',
    name: 'joined by the owner only',
    request: async () => ({ params: { id: await ringingCall() } }),
    state: callState,
    expect: { owner: 200, member: 409, outsider: 404, blocked: 404, anonymous: 401 },
  },
];

const KEYS_AND_GAMES: Row[] = [
  { route: 'PUT /v1/keys/devices/:deviceId', request: () => ({ params: { deviceId: 'tablet' }, body: deviceKeys() }), expect: ALL_OK(201) },
  {
    route: 'POST /v1/keys/devices/:deviceId/one-time-keys',
    name: "the owner's device id",
    request: () => ({ params: { deviceId: 'phone' }, body: { keys: oneTimeKeys(Math.floor(Math.random() * 1e6)) } }),
    state: () => read(as('owner'), '/v1/keys/count'),
    expect: { owner: 200, member: 404, outsider: 404, blocked: 404, anonymous: 401 },
  },
  { route: 'GET /v1/keys/count', expect: ALL_OK(200) },
  {
    route: 'DELETE /v1/keys/devices/:deviceId',
    name: "the owner's device id",
    request: async (actor) => {
      const deviceId = `spare-${actor}`;
      expect((await api('PUT', `/v1/keys/devices/${deviceId}`, { user: as('owner'), body: deviceKeys(), ip: randomIp() })).status).toBe(
        201,
      );
      return { params: { deviceId } };
    },
    state: () => read(as('owner'), '/v1/keys/count'),
    expect: { owner: 204, member: 404, outsider: 404, blocked: 404, anonymous: 401 },
  },
  {
    route: 'GET /v1/keys/users/:userId',
    name: "the owner's bundle: friends and co-participants only; a refusal claims no one-time key",
    request: async () => {
      const body = { keys: oneTimeKeys(Math.floor(Math.random() * 1e6)) };
      expect((await api('POST', '/v1/keys/devices/phone/one-time-keys', { user: as('owner'), body, ip: randomIp() })).status).toBe(200);
      return { params: { userId: as('owner').id } };
    },
    state: () => read(as('owner'), '/v1/keys/count'),
    expect: { owner: 200, member: 200, outsider: 404, blocked: 404, anonymous: 401 },
  },
  { route: 'GET /v1/games', request: () => ({ query: { q: 'minecraft' } }), expect: ALL_OK(200) },
  { route: 'GET /v1/games/:id', request: () => ({ params: { id: gameId } }), expect: ALL_OK(200) },
  { route: 'PUT /v1/users/@me/activity', request: () => ({ body: { gameId } }), expect: ALL_OK(200) },
];

/** Where each actor may see something: the hidden channel only for the owner and the member, the conversations only for theirs. */
const placesOf = (actor: Actor): string[] => {
  if (actor === 'owner') return [channelId, pair, group, blockedPair];
  if (actor === 'member') return [channelId, pair, group];
  return actor === 'blocked' ? [blockedPair] : [];
};
/** An answer that shows nothing of the hidden channel nor of conversations the actor is not in. */
const showsOnlyOwn =
  (idsOf: (body: unknown) => string[]) =>
  (body: unknown, actor: Actor): string | undefined => {
    const hidden = [channelId, pair, group, blockedPair].filter((id) => !placesOf(actor).includes(id));
    const leaked = idsOf(body).filter((id) => hidden.includes(id));
    return leaked.length ? `shows ${leaked.join()}, hidden from them` : undefined;
  };
const EVERYONE = (status: number) => ({ ...ALL_OK(status), denied: status });
/** The server's members (the owner, the member and `denied`) get `status`; the others 404, as the server is to them. */
const SERVER_MEMBERS = (status: number) => ({ ...EVERYONE(status), outsider: 404, blocked: 404 });

const READ_STATES: Row[] = [
  {
    route: 'PUT /v1/channels/:channelId/ack',
    name: 'the channel hidden from denied',
    request: () => ({ params: { channelId }, body: { messageId: channelMessage } }),
    state: readStateOf((request) => request.params!.channelId!),
    expect: { owner: 200, member: 200, denied: 404, outsider: 404, blocked: 404, anonymous: 401 },
  },
  {
    route: 'PUT /v1/dm/conversations/:id/ack',
    name: 'the 1:1 conversation',
    request: () => ({ params: { id: pair }, body: { messageId: ownerMessage } }),
    state: readStateOf((request) => request.params!.id!),
    expect: { ...PARTICIPANTS(200), denied: 404 },
  },
  {
    route: 'PUT /v1/dm/conversations/:id/ack',
    name: 'between the owner and the user they blocked: still theirs to mark read',
    request: () => ({ params: { id: blockedPair }, body: { messageId: blockedMessage } }),
    state: readStateOf((request) => request.params!.id!),
    expect: { owner: 200, member: 404, denied: 404, outsider: 404, blocked: 200, anonymous: 401 },
  },
  {
    route: 'GET /v1/users/@me/read-states',
    name: 'nothing of the hidden channel nor of others’ conversations',
    answer: showsOnlyOwn((body) => (body as { id: string }[]).map((state) => state.id)),
    expect: EVERYONE(200),
  },
  {
    route: 'GET /v1/notifications',
    name: 'no mention from the hidden channel, nothing of others’ conversations',
    answer: showsOnlyOwn((body) =>
      (body as { notifications: Notification[] }).notifications.flatMap((n) => [n.channelId, n.conversationId].filter((id) => id !== null)),
    ),
    expect: EVERYONE(200),
  },
  {
    route: 'POST /v1/notifications/ack',
    name: "each marks only their own feed: the member's newest entry is past everyone else's newest (404)",
    request: async () => ({ body: { until: (await feedOf('member'))[0]!.id } }),
    expect: { owner: 404, member: 200, outsider: 404, blocked: 404, denied: 404, anonymous: 401 },
  },
  {
    route: 'GET /v1/users/@me/notification-settings/:serverId',
    name: "the caller's own (the owner set none); a non-member's is 404, as the server is to them",
    request: () => ({ params: { serverId } }),
    answer: (body, actor) => {
      const level = (body as { level: string }).level;
      return level === (actor === 'owner' ? 'none' : 'all') ? undefined : `got level ${level}`;
    },
    expect: SERVER_MEMBERS(200),
  },
  {
    route: 'PUT /v1/users/@me/notification-settings/:serverId',
    name: "the caller's own, of a server they are in (404 to a non-member: nothing stored)",
    request: () => ({ params: { serverId }, body: { level: 'mentions' } }),
    expect: SERVER_MEMBERS(200),
  },
  {
    route: 'GET /v1/dm/search',
    name: 'hits only in the caller’s own conversations',
    request: () => ({ query: { q: NEEDLE } }),
    answer: (body, actor) => {
      const found = [...new Set((body as { messages: { conversationId: string }[] }).messages.map((m) => m.conversationId))].sort();
      const own = [pair, group].filter((id) => placesOf(actor).includes(id)).sort();
      return found.join() === own.join() ? undefined : `found ${NEEDLE} in ${found.join()}, should in ${own.join()}`;
    },
    expect: EVERYONE(200),
  },
];

/** Last: opening a conversation with the owner would make the outsider a co-participant. */
const OPENING: Row[] = [
  {
    route: 'POST /v1/dm/conversations',
    name: 'with the owner',
    request: () => ({ body: { userIds: [as('owner').id] } }),
    state: () => read(as('owner'), '/v1/dm/conversations'),
    expect: { owner: 400, member: 200, outsider: 201, blocked: 404, anonymous: 401 },
  },
];

describe('social authorization matrix (owner, friend and co-participant, outsider, blocked, anonymous)', () => {
  matrixTests(ACTORS, () => users, [...FRIENDS, ...CONVERSATIONS, ...CALLS, ...KEYS_AND_GAMES, ...READ_STATES, ...OPENING]);
});
