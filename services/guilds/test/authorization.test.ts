import { isDeepStrictEqual } from 'node:util';
import { Permission, toMask } from '@chat/contracts';
import { type MatrixCall, type MatrixRequest, type MatrixRow, rowTitle, runMatrixRow } from '@chat/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId, startGuilds } from './harness.ts';

/**
 * The authorization matrix: every guilds route asked by the owner, an administrator (by role), a
 * plain member, a member denied the channels by an override, a non-member, a banned user of a
 * private server and a caller without a token. Each row states every actor's status, so a route
 * that forgets its check shows up here; where a row has a state, every refusal is checked to have
 * left it as it was. Rows that use their target up (a delete, a kick) make a fresh one per actor.
 */
const g = await startGuilds();
afterAll(() => g.close());

const ACTORS = ['owner', 'admin', 'member', 'denied', 'stranger', 'banned', 'anonymous'] as const;
type Actor = (typeof ACTORS)[number];
type Row = MatrixRow<Actor>;
const ids = {} as Record<Actor, string>;
let serverId: string;
/** A public server that requires approval: where join requests are made. */
let gatedId: string;
let secretId: string;
/** A text channel every member sees: where a search of the denied member finds its hits. */
let lobbyId: string;
let voiceId: string;
let otherVoiceId: string;
let categoryId: string;
let spareRoleId: string;
let inviteCode: string;
let messageId: string;
let webhook: { id: string; token: string };

const ok = async (res: Promise<{ status: number; body: unknown }>, status: number) => {
  const answer = await res;
  expect(answer.status, JSON.stringify(answer.body)).toBe(status);
  // biome-ignore lint/suspicious/noExplicitAny: setup reads ids from the answers
  return answer.body as any;
};
const asOwner = (method: string, path: string, body?: unknown) => g.call(ids.owner, method, path, body);
const S = () => `/v1/servers/${serverId}`;

/** A server of the owner's with every actor in their place: the admin by role, the banned banned. Its invite code. */
async function populate(id: string): Promise<string> {
  const code = (await ok(asOwner('POST', `/v1/servers/${id}/invites`, {}), 201)).code;
  for (const actor of ['admin', 'member', 'denied', 'banned'] as const)
    await ok(g.call(ids[actor], 'POST', `/v1/invites/${code}/accept`), 200);
  const admins = await ok(
    asOwner('POST', `/v1/servers/${id}/roles`, { name: 'admins', permissions: toMask(Permission.ADMINISTRATOR) }),
    201,
  );
  await ok(asOwner('PUT', `/v1/servers/${id}/members/${ids.admin}/roles/${admins.id}`), 204);
  await ok(asOwner('PUT', `/v1/servers/${id}/bans/${ids.banned}`, { reason: 'matrix' }), 200);
  return code;
}

beforeAll(async () => {
  for (const actor of ACTORS) if (actor !== 'anonymous') ids[actor] = await g.knownUser(actor);
  serverId = (await ok(asOwner('POST', '/v1/servers', { name: 'Private matrix' }), 201)).id;
  inviteCode = await populate(serverId);
  gatedId = (await ok(asOwner('POST', '/v1/servers', { name: 'Gated matrix', isPublic: true, requireApproval: true }), 201)).id;
  await populate(gatedId);
  spareRoleId = (await ok(asOwner('POST', `${S()}/roles`, { name: 'spare' }), 201)).id;
  categoryId = (await ok(asOwner('POST', `${S()}/categories`, { name: 'kept' }), 201)).id;
  secretId = (await ok(asOwner('POST', `${S()}/channels`, { name: 'secret', channelType: 'text' }), 201)).id;
  voiceId = (await ok(asOwner('POST', `${S()}/channels`, { name: 'talk', channelType: 'voice' }), 201)).id;
  otherVoiceId = (await ok(asOwner('POST', `${S()}/channels`, { name: 'afk', channelType: 'voice' }), 201)).id;
  for (const channel of [secretId, voiceId]) {
    const deny = { userId: ids.denied, allowBits: 0, denyBits: toMask(Permission.VIEW_CHANNEL) };
    await ok(asOwner('PUT', `/v1/channels/${channel}/permissions`, deny), 200);
  }
  messageId = (await ok(asOwner('POST', `/v1/channels/${secretId}/messages`, { content: 'kept' }), 201)).id;
  lobbyId = (await ok(asOwner('POST', `${S()}/channels`, { name: 'lobby', channelType: 'text' }), 201)).id;
  for (const channel of [secretId, lobbyId])
    await ok(asOwner('POST', `/v1/channels/${channel}/messages`, { content: `${NEEDLE} here` }), 201);
  webhook = await ok(asOwner('POST', `/v1/channels/${secretId}/webhooks`, { name: 'hook' }), 201);
});

/** A fresh known user who is a member of the server. */
async function freshMember(): Promise<string> {
  const id = await g.knownUser('victim');
  await ok(g.call(id, 'POST', `/v1/invites/${inviteCode}/accept`), 200);
  return id;
}

/** A fresh member connected in the voice channel the denied member cannot see: the moderation's target. */
async function connectedTarget(): Promise<MatrixRequest> {
  const userId = await freshMember();
  await ok(g.call(userId, 'POST', '/v1/voice/join', { channelId: voiceId }), 200);
  return { params: { serverId, userId } };
}

/** A fresh known user with a pending join request to the gated server: the request's id. */
async function freshJoinRequest(): Promise<string> {
  return (await ok(g.call(await g.knownUser('asker'), 'POST', `/v1/servers/${gatedId}/join-requests`), 201)).id;
}

/** The server's uncategorised channels (or its categories), in reverse order: a valid reordering. */
async function reversed(what: 'channels' | 'categories'): Promise<string[]> {
  const items: { id: string; categoryId?: string | null }[] = await ok(asOwner('GET', `${S()}/${what}`), 200);
  return items
    .filter((item) => !item.categoryId)
    .map((item) => item.id)
    .reverse();
}

const read = async (path: string) => {
  const res = await asOwner('GET', path);
  return { status: res.status, body: res.body };
};
const serverState = () => read(S());
const channelState = (request: MatrixRequest) => read(`/v1/channels/${request.params!.channelId}`);
const messagesState = () => read(`/v1/channels/${secretId}/messages`);
const membersState = () => read(`${S()}/members`);
const rolesState = () => read(`${S()}/roles`);
const bansState = () => read(`${S()}/bans`);
const invitesState = () => read(`${S()}/invites`);
const joinRequestsState = () => read(`${S()}/join-requests`);
const overridesState = () => read(`/v1/channels/${secretId}/permissions`);
const categoriesState = () => read(`${S()}/categories`);
const channelsState = () => read(`${S()}/channels`);
const webhooksState = () => read(`/v1/channels/${secretId}/webhooks`);
/** The target's voice state as the owner sees it (null once disconnected). */
const voiceStateOf = async (request: MatrixRequest) => {
  const states: { userId: string }[] = await ok(asOwner('GET', `${S()}/voice-states`), 200);
  return states.find((state) => state.userId === request.params!.userId) ?? null;
};

/** A word only in one message of the secret channel and one of the lobby. */
const NEEDLE = 'matrixneedle';
/** A search answer that finds the needle in exactly these channels. */
const findsIn =
  (channels: (actor: Actor) => string[]) =>
  (body: unknown, actor: Actor): string | undefined => {
    const seen = [...new Set((body as { messages: { channelId: string }[] }).messages.map((hit) => hit.channelId))].sort();
    const readable = channels(actor).sort();
    return isDeepStrictEqual(seen, readable) ? undefined : `found ${NEEDLE} in ${seen.join()}, should in ${readable.join()}`;
  };

/** One status for every signed-in actor, 401 without a token (routes about the caller alone). */
const SELF = (status: number) => ({
  owner: status,
  admin: status,
  member: status,
  denied: status,
  stranger: status,
  banned: status,
  anonymous: 401,
});
/** [owner, admin, member, denied, stranger, banned]; anonymous always 401. */
const cells = (...s: [number, number, number, number, number, number]) => ({
  owner: s[0],
  admin: s[1],
  member: s[2],
  denied: s[3],
  stranger: s[4],
  banned: s[5],
  anonymous: 401,
});
const server = () => ({ params: { serverId } });
const secret = () => ({ params: { channelId: secretId } });
const onMessage = (extra: Record<string, string> = {}) => ({ params: { channelId: secretId, messageId, ...extra } });

const SERVERS: Row[] = [
  { route: 'POST /v1/servers', request: () => ({ body: { name: 'mine' } }), expect: SELF(201) },
  { route: 'GET /v1/servers', expect: SELF(200) },
  { route: 'GET /v1/discovery/servers', expect: SELF(200) },
  { route: 'GET /v1/servers/:serverId', request: server, expect: cells(200, 200, 200, 200, 404, 404) },
  {
    route: 'PATCH /v1/servers/:serverId',
    request: () => ({ ...server(), body: { description: 'd' } }),
    state: serverState,
    expect: cells(200, 200, 403, 403, 404, 404),
  },
  {
    route: 'DELETE /v1/servers/:serverId',
    name: 'anyone but the owner (the owner deletes it at the end)',
    request: server,
    state: serverState,
    expect: { admin: 403, member: 403, denied: 403, stranger: 404, banned: 404, anonymous: 401 },
  },
  {
    route: 'POST /v1/servers/:serverId/join',
    name: 'a private server',
    request: server,
    state: membersState,
    expect: cells(409, 409, 409, 409, 404, 404),
  },
  {
    route: 'POST /v1/servers/:serverId/join',
    name: 'a public server that requires approval',
    request: () => ({ params: { serverId: gatedId } }),
    state: () => read(`/v1/servers/${gatedId}/members`),
    expect: cells(409, 409, 409, 409, 400, 400),
  },
  { route: 'GET /v1/servers/:serverId/template', request: server, expect: cells(200, 200, 403, 403, 404, 404) },
  {
    route: 'POST /v1/servers/import',
    request: async () => ({ body: { template: await ok(asOwner('GET', `${S()}/template`), 200) } }),
    expect: SELF(201),
  },
];

const CHANNELS: Row[] = [
  { route: 'GET /v1/servers/:serverId/channels', request: server, expect: cells(200, 200, 200, 200, 404, 404) },
  {
    route: 'POST /v1/servers/:serverId/channels',
    request: () => ({ ...server(), body: { name: 'c', channelType: 'text' } }),
    state: channelsState,
    expect: cells(201, 201, 403, 403, 404, 404),
  },
  {
    route: 'PATCH /v1/servers/:serverId/channels/positions',
    request: async () => ({ ...server(), body: { channelIds: await reversed('channels') } }),
    state: channelsState,
    expect: cells(200, 200, 403, 403, 404, 404),
  },
  { route: 'GET /v1/channels/:channelId', request: secret, expect: cells(200, 200, 200, 404, 404, 404) },
  {
    route: 'PATCH /v1/channels/:channelId',
    request: () => ({ ...secret(), body: { topic: 't' } }),
    state: channelState,
    expect: cells(200, 200, 403, 404, 404, 404),
  },
  {
    route: 'DELETE /v1/channels/:channelId',
    request: async () => ({
      params: { channelId: (await ok(asOwner('POST', `${S()}/channels`, { name: 'gone', channelType: 'text' }), 201)).id },
    }),
    state: channelState,
    expect: cells(204, 204, 403, 403, 404, 404),
  },
  { route: 'GET /v1/servers/:serverId/categories', request: server, expect: cells(200, 200, 200, 200, 404, 404) },
  {
    route: 'POST /v1/servers/:serverId/categories',
    request: () => ({ ...server(), body: { name: 'k' } }),
    state: categoriesState,
    expect: cells(201, 201, 403, 403, 404, 404),
  },
  {
    route: 'PATCH /v1/servers/:serverId/categories/positions',
    request: async () => ({ ...server(), body: { categoryIds: await reversed('categories') } }),
    state: categoriesState,
    expect: cells(200, 200, 403, 403, 404, 404),
  },
  {
    route: 'PATCH /v1/servers/:serverId/categories/:categoryId',
    request: () => ({ params: { serverId, categoryId }, body: { name: 'renamed' } }),
    state: categoriesState,
    expect: cells(200, 200, 403, 403, 404, 404),
  },
  {
    route: 'DELETE /v1/servers/:serverId/categories/:categoryId',
    request: async () => ({ params: { serverId, categoryId: (await ok(asOwner('POST', `${S()}/categories`, { name: 'gone' }), 201)).id } }),
    state: categoriesState,
    expect: cells(204, 204, 403, 403, 404, 404),
  },
];

const OVERRIDES: Row[] = [
  { route: 'GET /v1/channels/:channelId/permissions/@me', request: secret, expect: cells(200, 200, 200, 404, 404, 404) },
  {
    route: 'GET /v1/channels/:channelId/permissions/members/:userId',
    name: "the member's mask",
    request: () => ({ params: { channelId: secretId, userId: ids.member } }),
    expect: cells(200, 200, 403, 404, 404, 404),
  },
  { route: 'GET /v1/channels/:channelId/permissions', request: secret, expect: cells(200, 200, 200, 404, 404, 404) },
  {
    route: 'PUT /v1/channels/:channelId/permissions',
    request: () => ({ ...secret(), body: { roleId: spareRoleId, allowBits: 0, denyBits: 0 } }),
    state: overridesState,
    expect: cells(200, 200, 403, 404, 404, 404),
  },
  {
    route: 'DELETE /v1/channels/:channelId/permissions/:overrideId',
    request: async () => {
      const override = await ok(
        asOwner('PUT', `/v1/channels/${secretId}/permissions`, { userId: await freshMember(), allowBits: 0, denyBits: 0 }),
        200,
      );
      return { params: { channelId: secretId, overrideId: override.id } };
    },
    state: overridesState,
    expect: cells(204, 204, 403, 404, 404, 404),
  },
];

const MEMBERS: Row[] = [
  { route: 'GET /v1/servers/:serverId/members', request: server, expect: cells(200, 200, 200, 200, 404, 404) },
  {
    route: 'PATCH /v1/servers/:serverId/members/@me',
    request: () => ({ ...server(), body: { nickname: 'me' } }),
    state: membersState,
    expect: cells(200, 200, 200, 200, 404, 404),
  },
  {
    route: 'PATCH /v1/servers/:serverId/members/:userId',
    name: "another member's nickname",
    request: async () => ({ params: { serverId, userId: await freshMember() }, body: { nickname: 'renamed' } }),
    state: membersState,
    expect: cells(200, 200, 403, 403, 404, 404),
  },
  { route: 'GET /v1/servers/:serverId/members/@me/permissions', request: server, expect: cells(200, 200, 200, 200, 404, 404) },
  {
    route: 'DELETE /v1/servers/:serverId/members/:userId',
    name: 'kick',
    request: async () => ({ params: { serverId, userId: await freshMember() } }),
    state: membersState,
    expect: cells(204, 204, 403, 403, 404, 404),
  },
];

const ROLES_AND_BANS: Row[] = [
  { route: 'GET /v1/servers/:serverId/roles', request: server, expect: cells(200, 200, 200, 200, 404, 404) },
  {
    route: 'POST /v1/servers/:serverId/roles',
    request: () => ({ ...server(), body: { name: 'r' } }),
    state: rolesState,
    expect: cells(201, 201, 403, 403, 404, 404),
  },
  {
    route: 'PATCH /v1/servers/:serverId/roles/:roleId',
    request: () => ({ params: { serverId, roleId: spareRoleId }, body: { name: 'renamed' } }),
    state: rolesState,
    expect: cells(200, 200, 403, 403, 404, 404),
  },
  {
    route: 'DELETE /v1/servers/:serverId/roles/:roleId',
    request: async () => ({ params: { serverId, roleId: (await ok(asOwner('POST', `${S()}/roles`, { name: 'gone' }), 201)).id } }),
    state: rolesState,
    expect: cells(204, 204, 403, 403, 404, 404),
  },
  {
    route: 'PUT /v1/servers/:serverId/members/:userId/roles/:roleId',
    request: async () => ({ params: { serverId, userId: await freshMember(), roleId: spareRoleId } }),
    state: membersState,
    expect: cells(204, 204, 403, 403, 404, 404),
  },
  {
    route: 'DELETE /v1/servers/:serverId/members/:userId/roles/:roleId',
    request: async () => {
      const userId = await freshMember();
      await ok(asOwner('PUT', `${S()}/members/${userId}/roles/${spareRoleId}`), 204);
      return { params: { serverId, userId, roleId: spareRoleId } };
    },
    state: membersState,
    expect: cells(204, 204, 403, 403, 404, 404),
  },
  { route: 'GET /v1/servers/:serverId/bans', request: server, expect: cells(200, 200, 403, 403, 404, 404) },
  {
    route: 'PUT /v1/servers/:serverId/bans/:userId',
    request: async () => ({ params: { serverId, userId: await g.knownUser('victim') }, body: {} }),
    state: bansState,
    expect: cells(200, 200, 403, 403, 404, 404),
  },
  {
    route: 'DELETE /v1/servers/:serverId/bans/:userId',
    request: async () => {
      const userId = await g.knownUser('victim');
      await ok(asOwner('PUT', `${S()}/bans/${userId}`, {}), 200);
      return { params: { serverId, userId } };
    },
    state: bansState,
    expect: cells(204, 204, 403, 403, 404, 404),
  },
];

const INVITES: Row[] = [
  { route: 'POST /v1/servers/:serverId/invites', request: () => ({ ...server(), body: {} }), expect: cells(201, 201, 201, 201, 404, 404) },
  { route: 'GET /v1/servers/:serverId/invites', request: server, expect: cells(200, 200, 403, 403, 404, 404) },
  {
    route: 'DELETE /v1/invites/:code',
    name: "the owner's invite",
    request: async () => ({ params: { code: (await ok(asOwner('POST', `${S()}/invites`, {}), 201)).code } }),
    state: invitesState,
    expect: cells(204, 204, 403, 403, 404, 404),
  },
  {
    route: 'GET /v1/invites/:code/preview',
    name: 'public: anyone with the code',
    request: () => ({ params: { code: inviteCode } }),
    expect: { ...SELF(200), anonymous: 200 },
  },
  {
    route: 'POST /v1/servers/:serverId/join-requests',
    name: 'a private server',
    request: server,
    state: joinRequestsState,
    expect: cells(409, 409, 409, 409, 404, 404),
  },
  {
    route: 'POST /v1/servers/:serverId/join-requests',
    name: 'a public server that requires approval',
    request: () => ({ params: { serverId: gatedId } }),
    state: () => read(`/v1/servers/${gatedId}/join-requests`),
    expect: cells(409, 409, 409, 409, 201, 403),
  },
  { route: 'GET /v1/servers/:serverId/join-requests', request: server, expect: cells(200, 200, 403, 403, 404, 404) },
  {
    route: 'POST /v1/servers/:serverId/join-requests/:requestId/approve',
    name: 'on the public gated server: a non-member sees it, so 403',
    request: async () => ({ params: { serverId: gatedId, requestId: await freshJoinRequest() } }),
    state: () => read(`/v1/servers/${gatedId}/join-requests`),
    expect: cells(200, 200, 403, 403, 403, 403),
  },
  {
    route: 'POST /v1/servers/:serverId/join-requests/:requestId/reject',
    request: async () => ({ params: { serverId: gatedId, requestId: await freshJoinRequest() } }),
    state: () => read(`/v1/servers/${gatedId}/join-requests`),
    expect: cells(200, 200, 403, 403, 403, 403),
  },
  { route: 'GET /v1/join-requests/@me', expect: SELF(200) },
];

const MESSAGES: Row[] = [
  {
    route: 'POST /v1/channels/:channelId/messages',
    request: () => ({ ...secret(), body: { content: 'cell' } }),
    state: messagesState,
    expect: cells(201, 201, 201, 404, 404, 404),
  },
  { route: 'GET /v1/channels/:channelId/messages', request: secret, expect: cells(200, 200, 200, 404, 404, 404) },
  {
    route: 'PATCH /v1/channels/:channelId/messages/:messageId',
    name: "the owner's message",
    request: () => ({ ...onMessage(), body: { content: 'edited by someone' } }),
    state: messagesState,
    expect: cells(200, 403, 403, 404, 404, 404),
  },
  {
    route: 'DELETE /v1/channels/:channelId/messages/:messageId',
    name: "the owner's message: MANAGE_MESSAGES deletes others'",
    request: async () => {
      const fresh = await ok(asOwner('POST', `/v1/channels/${secretId}/messages`, { content: 'doomed' }), 201);
      return { params: { channelId: secretId, messageId: fresh.id } };
    },
    state: messagesState,
    expect: cells(204, 204, 403, 404, 404, 404),
  },
  { route: 'GET /v1/channels/:channelId/pins', request: secret, expect: cells(200, 200, 200, 404, 404, 404) },
  {
    route: 'PUT /v1/channels/:channelId/pins/:messageId',
    request: () => onMessage(),
    state: () => read(`/v1/channels/${secretId}/pins`),
    expect: cells(204, 204, 403, 404, 404, 404),
  },
  {
    route: 'DELETE /v1/channels/:channelId/pins/:messageId',
    request: async () => {
      await ok(asOwner('PUT', `/v1/channels/${secretId}/pins/${messageId}`), 204);
      return onMessage();
    },
    state: () => read(`/v1/channels/${secretId}/pins`),
    expect: cells(204, 204, 403, 404, 404, 404),
  },
  {
    route: 'PUT /v1/channels/:channelId/messages/:messageId/reactions/:emoji/@me',
    request: () => onMessage({ emoji: '👍' }),
    state: messagesState,
    expect: cells(204, 204, 204, 404, 404, 404),
  },
  {
    route: 'DELETE /v1/channels/:channelId/messages/:messageId/reactions/:emoji/@me',
    request: () => onMessage({ emoji: '👍' }),
    state: messagesState,
    expect: cells(204, 204, 204, 404, 404, 404),
  },
  {
    route: 'GET /v1/channels/:channelId/messages/:messageId/reactions/:emoji',
    request: () => onMessage({ emoji: '👍' }),
    expect: cells(200, 200, 200, 404, 404, 404),
  },
  { route: 'POST /v1/channels/:channelId/typing', request: secret, expect: cells(204, 204, 204, 404, 404, 404) },
  {
    route: 'GET /v1/servers/:id/messages/search',
    name: 'hits only in the channels the caller may read',
    request: () => ({ params: { id: serverId }, query: { q: NEEDLE } }),
    answer: findsIn((actor) => (actor === 'denied' ? [lobbyId] : [lobbyId, secretId])),
    expect: cells(200, 200, 200, 200, 404, 404),
  },
  {
    route: 'GET /v1/servers/:id/messages/search',
    name: 'naming the secret channel: nothing for the denied member',
    request: () => ({ params: { id: serverId }, query: { q: NEEDLE, channelId: secretId } }),
    answer: findsIn((actor) => (actor === 'denied' ? [] : [secretId])),
    expect: cells(200, 200, 200, 200, 404, 404),
  },
];

const WEBHOOKS: Row[] = [
  {
    route: 'POST /v1/channels/:channelId/webhooks',
    request: () => ({ ...secret(), body: { name: 'hook' } }),
    state: webhooksState,
    expect: cells(201, 201, 403, 404, 404, 404),
  },
  { route: 'GET /v1/channels/:channelId/webhooks', request: secret, expect: cells(200, 200, 403, 404, 404, 404) },
  {
    route: 'DELETE /v1/webhooks/:id',
    request: async () => ({ params: { id: (await ok(asOwner('POST', `/v1/channels/${secretId}/webhooks`, { name: 'gone' }), 201)).id } }),
    state: webhooksState,
    expect: cells(204, 204, 403, 404, 404, 404),
  },
  {
    route: 'POST /v1/webhooks/:id/:token',
    name: 'public: the token in the path is the credential',
    request: () => ({ params: webhook, body: { content: 'hooked' } }),
    expect: { ...SELF(204), anonymous: 204 },
  },
  {
    route: 'POST /v1/webhooks/:id/:token',
    name: 'a wrong token, whoever asks',
    request: () => ({ params: { id: webhook.id, token: 'x'.repeat(43) }, body: { content: 'forged' } }),
    state: messagesState,
    expect: { ...SELF(401), anonymous: 401 },
  },
];

const VOICE: Row[] = [
  {
    route: 'POST /v1/voice/join',
    request: () => ({ body: { channelId: voiceId } }),
    expect: cells(200, 200, 200, 404, 404, 404),
  },
  { route: 'POST /v1/voice/grant', name: 'connected or not', expect: cells(200, 200, 200, 404, 404, 404) },
  { route: 'PATCH /v1/voice/state', request: () => ({ body: { selfMute: true } }), expect: cells(200, 200, 200, 404, 404, 404) },
  { route: 'POST /v1/voice/heartbeat', expect: cells(200, 200, 200, 404, 404, 404) },
  { route: 'GET /v1/servers/:serverId/voice-states', request: server, expect: cells(200, 200, 200, 200, 404, 404) },
  {
    route: 'POST /v1/voice/move',
    name: 'the connected member to another channel',
    request: () => ({ body: { userId: ids.member, channelId: otherVoiceId } }),
    expect: cells(200, 200, 403, 403, 404, 404),
  },
  {
    route: 'PATCH /v1/servers/:serverId/voice-states/:userId',
    name: 'server mute (MUTE_MEMBERS); someone in a channel hidden from the caller is not connected for them',
    request: async () => ({ ...(await connectedTarget()), body: { mute: true } }),
    state: voiceStateOf,
    expect: cells(200, 200, 403, 400, 404, 404),
  },
  {
    route: 'PATCH /v1/servers/:serverId/voice-states/:userId',
    name: 'server deafen (DEAFEN_MEMBERS)',
    request: async () => ({ ...(await connectedTarget()), body: { deaf: true } }),
    state: voiceStateOf,
    expect: cells(200, 200, 403, 400, 404, 404),
  },
  {
    route: 'DELETE /v1/servers/:serverId/voice-states/:userId',
    name: 'disconnect (MOVE_MEMBERS)',
    request: connectedTarget,
    state: voiceStateOf,
    expect: cells(204, 204, 403, 400, 404, 404),
  },
  { route: 'POST /v1/voice/leave', expect: SELF(204) },
];

/** Last: these change who belongs to the server. */
const MEMBERSHIP: Row[] = [
  {
    route: 'DELETE /v1/servers/:serverId/members/@me',
    name: 'leaving (the owner cannot)',
    request: server,
    state: membersState,
    expect: cells(400, 204, 204, 204, 404, 404),
  },
  {
    route: 'POST /v1/invites/:code/accept',
    request: () => ({ params: { code: inviteCode } }),
    state: membersState,
    expect: cells(409, 200, 200, 200, 200, 403),
  },
];

const call: MatrixCall<Actor> = async (actor, method, path, request) =>
  g.call(actor === 'anonymous' ? null : ids[actor], method, path, request.body, request.headers);

describe('authorization matrix (owner, administrator, member, denied by override, non-member, banned, anonymous)', () => {
  const rows = [
    ...SERVERS,
    ...CHANNELS,
    ...OVERRIDES,
    ...MEMBERS,
    ...ROLES_AND_BANS,
    ...INVITES,
    ...MESSAGES,
    ...WEBHOOKS,
    ...VOICE,
    ...MEMBERSHIP,
  ];
  it.each(rows.map((row) => ({ ...row, title: rowTitle(row) })))('$title', async (row) => {
    expect(await runMatrixRow(row, ACTORS, call)).toEqual({ statuses: row.expect, problems: [] });
  });

  it('leaves the server standing after every refused delete, and lets the owner delete it', async () => {
    expect((await g.call(ids.owner, 'GET', S())).status).toBe(200);
    expect((await g.call(ids.owner, 'DELETE', S())).status).toBe(204);
    expect((await g.call(ids.admin, 'GET', S())).status).toBe(404);
  });
});

describe('a public server’s non-member', () => {
  it('sees the server but gets 403 on what only members may do', async () => {
    const owner = newId();
    const open = (await g.call(owner, 'POST', '/v1/servers', { name: 'Open', isPublic: true })).body;
    const stranger = newId();
    expect((await g.call(stranger, 'GET', `/v1/servers/${open.id}`)).status).toBe(200);
    for (const path of ['channels', 'members', 'roles', 'categories', 'members/@me/permissions', `messages/search?q=${NEEDLE}`]) {
      expect((await g.call(stranger, 'GET', `/v1/servers/${open.id}/${path}`)).status, path).toBe(403);
    }
    const channel = (await g.call(owner, 'GET', `/v1/servers/${open.id}/channels`)).body[0];
    expect((await g.call(stranger, 'GET', `/v1/channels/${channel.id}`)).status).toBe(404);
  });
});
