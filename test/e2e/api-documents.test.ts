import { randomUUID } from 'node:crypto';
import { OP, Permission, toMask } from '@chat/contracts';
import { type Frame, GatewayClient, lastAttempt } from '@chat/testkit';
import { Ajv2020 } from 'ajv/dist/2020.js';
import formats from 'ajv-formats';
import { beforeAll, describe, expect, it } from 'vitest';
import { api, conversationOnceKnown, gateway, newUser, postMessage, publicServer, randomIp, type TestUser } from './helpers.ts';

/**
 * The published API documents against what the platform really does: answers of a sample of routes
 * of every service checked with the schemas of GET /v1/openapi.json, every documented operation
 * routed by the gateway, and the frames of busy sockets checked with GET /v1/asyncapi.json.
 */

interface Operation {
  responses: Record<string, { content?: Record<string, { schema?: object }> }>;
}
interface Documents {
  openapi: { paths: Record<string, Record<string, Operation>>; components: object };
  asyncapi: { components: { messages: Record<string, { payload: object }> } };
}

const THUMBS = '%F0%9F%91%8D';
const ajv = new Ajv2020({ strict: false, allErrors: true });
formats.default(ajv);
let docs: Documents;

beforeAll(async () => {
  docs = {
    openapi: (await (await fetch(`${gateway}/v1/openapi.json`)).json()) as Documents['openapi'],
    asyncapi: (await (await fetch(`${gateway}/v1/asyncapi.json`)).json()) as Documents['asyncapi'],
  };
  ajv.addSchema({ components: docs.openapi.components }, 'openapi');
  ajv.addSchema({ components: docs.asyncapi.components }, 'asyncapi');
});

/** What is wrong with `value` as `schema` of the document `documentId` says it; empty when it conforms. */
function mismatches(documentId: string, schema: object, value: unknown): string[] {
  const resolved = JSON.parse(JSON.stringify(schema).replaceAll('"#/components/', `"${documentId}#/components/`));
  const validate = ajv.compile(resolved);
  if (validate(value)) return [];
  return (validate.errors ?? []).slice(0, 3).map((e) => `${e.instancePath || '/'} ${e.message} ${JSON.stringify(e.params)}`);
}

/** The documented path template of a concrete path: the one with the most literal segments (`@me` before `{userId}`). */
function templateOf(method: string, path: string): string | undefined {
  const segments = path.split('?')[0]!.split('/');
  const literals = (template: string) => template.split('/').filter((s) => !s.startsWith('{')).length;
  return Object.entries(docs.openapi.paths)
    .filter(([template, operations]) => {
      const parts = template.split('/');
      return (
        operations[method.toLowerCase()] &&
        parts.length === segments.length &&
        parts.every((s, i) => s.startsWith('{') || s === segments[i])
      );
    })
    .map(([template]) => template)
    .sort((a, b) => literals(b) - literals(a))[0];
}

/** What is wrong with an answer of `operation` (named `label`) as the OpenAPI document describes it; empty when it conforms. */
function responseProblems(label: string, operation: Operation, status: number, body: unknown): string[] {
  const response = operation.responses[String(status)];
  if (!response) return [`${label}: answered ${status}, documented ${Object.keys(operation.responses).join(', ')}`];
  const schema = response.content?.['application/json']?.schema;
  if (!schema) return body === undefined ? [] : [`${label} ${status}: documented without a body, answered one`];
  return mismatches('openapi', schema, body).map((m) => `${label} ${status}: ${m}`);
}

/** What is wrong with one real answer of `method path` as the OpenAPI document describes it; empty when it conforms. */
function answerProblems(method: string, path: string, status: number, body: unknown): string[] {
  const template = templateOf(method, path);
  if (!template) return [`${method} ${path}: not documented`];
  return responseProblems(`${method} ${template}`, docs.openapi.paths[template]![method.toLowerCase()]!, status, body);
}

describe('GET /v1/openapi.json against real answers', () => {
  it('describes the status and the body of answers of every service, successes and errors', async () => {
    const [owner, member, stranger, friend] = await Promise.all([newUser('doc'), newUser('doc'), newUser('doc'), newUser('doc')]);
    const { serverId, textId, voiceId } = await publicServer(owner, [member], { tags: ['documents'] });
    const messageId = await postMessage(owner, textId, 'hello documents');
    const problems: string[] = [];
    const check = async (method: string, path: string, options: Parameters<typeof api>[2] = {}) => {
      const res = await api(method, path, options);
      problems.push(...answerProblems(method, path, res.status, res.body));
      return res;
    };
    await check('GET', '/v1/health');
    await check('GET', '/v1/gateway');
    await check('GET', '/v1/auth/jwks');
    await check('GET', '/v1/users/@me');
    await check('GET', '/v1/users/@me', { user: owner });
    await check('PATCH', '/v1/users/@me', { user: owner, body: { bio: 'documented' } });
    await check('GET', `/v1/users/${member.id}`, { user: owner });
    await check('GET', `/v1/users/${randomUUID()}`, { user: owner });
    await check('GET', '/v1/badges', { user: owner });
    await check('GET', '/v1/servers', { user: owner });
    await check('GET', `/v1/servers/${serverId}`, { user: stranger });
    await check('GET', `/v1/servers/${randomUUID()}`, { user: stranger });
    await check('PATCH', `/v1/servers/${serverId}`, { user: member, body: { name: 'not yours' } });
    await check('GET', `/v1/servers/${serverId}/channels`, { user: member });
    await check('GET', `/v1/servers/${serverId}/members`, { user: member });
    await check('GET', `/v1/servers/${serverId}/roles`, { user: member });
    await check('GET', `/v1/channels/${textId}/permissions/@me?explain=true`, { user: member });
    await check('POST', `/v1/servers/${serverId}/invites`, { user: owner, body: {} });
    await check('GET', `/v1/channels/${textId}/messages`, { user: member });
    await check('GET', `/v1/channels/${textId}/messages?limit=0`, { user: member });
    await check('PATCH', `/v1/channels/${textId}/messages/${messageId}`, { user: member, body: { content: 'not yours' } });
    await check('GET', `/v1/servers/${serverId}/messages/search?q=hello`, { user: member });
    await check('GET', `/v1/servers/${serverId}/messages/search`, { user: member });
    await check('GET', '/v1/discovery/servers?tag=documents', { user: stranger });
    await check('GET', '/v1/discovery/servers?limit=0', { user: stranger });
    await check('GET', '/v1/games?q=doom&limit=3', { user: stranger });
    await check('PUT', '/v1/users/@me/activity', { user: stranger, body: { gameId: randomUUID() } });
    await lastAttempt(
      () => api('POST', '/v1/friends/requests', { user: owner, body: { userId: friend.id } }),
      (res) => res.status !== 404,
    );
    await check('GET', '/v1/friends/requests', { user: friend });
    await check('POST', '/v1/friends/accept', { user: friend, body: { userId: owner.id } });
    await check('GET', '/v1/friends', { user: friend });
    const conversationId = await conversationOnceKnown(owner, friend);
    await check('POST', '/v1/dm/messages', { user: owner, body: { conversationId, content: 'hello dm' } });
    await check('GET', `/v1/dm/conversations/${conversationId}/messages`, { user: friend });
    await check('GET', `/v1/dm/conversations/${conversationId}`, { user: stranger });
    await check('GET', '/v1/dm/search?q=hello', { user: friend });
    await check('GET', '/v1/notifications', { user: friend });
    await check('GET', '/v1/users/@me/read-states', { user: friend });
    await check('GET', `/v1/keys/users/${owner.id}`, { user: friend });
    await check('GET', `/v1/music/${voiceId}`, { user: member });
    await check('GET', `/v1/media/${randomUUID()}`, { user: member });
    expect(problems).toEqual([]);
    // The check is not vacuous: a body that breaks its schema is caught.
    expect(answerProblems('GET', '/v1/users/@me', 200, { id: 'not-a-uuid' })).not.toEqual([]);
  });

  it('routes every documented operation to a service that answers as documented, with an error body when it fails', async () => {
    const user = await newUser('route');
    const placeholder = (name: string) =>
      name === '{emoji}' ? THUMBS : ['{code}', '{token}', '{filename}'].includes(name) ? 'abc' : randomUUID();
    const problems: string[] = [];
    for (const [template, operations] of Object.entries(docs.openapi.paths)) {
      // The socket's upgrade and the HTML reference page are no JSON routes.
      if (template === '/v1/gateway/ws' || template === '/v1/docs') continue;
      for (const [method, operation] of Object.entries(operations)) {
        const path = template.replace(/\{[^}]+\}/g, placeholder);
        const hasBody = ['post', 'put', 'patch'].includes(method);
        // A client IP of its own per call: the auth tier counts 5 a minute per IP.
        const res = await api(method.toUpperCase(), path, { user, ip: randomIp(), body: hasBody ? {} : undefined });
        const label = `${method.toUpperCase()} ${template}`;
        if (String(res.body?.error).startsWith('No route')) problems.push(`${label}: not routed`);
        if (res.status >= 400 && (typeof res.body?.error !== 'string' || Object.keys(res.body).length !== 1)) {
          problems.push(`${label}: ${res.status} without an error body: ${JSON.stringify(res.body)?.slice(0, 120)}`);
        }
        problems.push(...responseProblems(label, operation, res.status, res.body));
      }
    }
    expect(problems).toEqual([]);
  });
});

/** The name of a frame in the AsyncAPI document: a dispatch's `t`, else its opcode's message. */
const FRAME_NAMES: Record<number, string> = {
  [OP.HELLO]: 'Hello',
  [OP.HEARTBEAT_ACK]: 'HeartbeatAck',
  [OP.RECONNECT]: 'Reconnect',
  [OP.INVALID_SESSION]: 'InvalidSession',
};

/** What is wrong with received frames as the AsyncAPI document describes them, and the names it gives them. */
function frameProblems(frames: Frame[]): { names: string[]; problems: string[] } {
  const names: string[] = [];
  const problems: string[] = [];
  for (const frame of frames) {
    const name = frame.op === OP.DISPATCH ? (frame.t as string) : FRAME_NAMES[frame.op];
    const message = name ? docs.asyncapi.components.messages[name] : undefined;
    if (!name || !message) {
      problems.push(`undocumented frame ${JSON.stringify(frame).slice(0, 200)}`);
      continue;
    }
    names.push(name);
    problems.push(...mismatches('asyncapi', message.payload, frame).map((m) => `${name}: ${m} in ${JSON.stringify(frame).slice(0, 200)}`));
  }
  return { names, problems };
}

describe('GET /v1/asyncapi.json against real frames', () => {
  it('describes every frame of busy sockets: server, channel, member, voice, friend, DM, notification, resume', async () => {
    const [owner, member, friend] = await Promise.all([newUser('frames'), newUser('frames'), newUser('frames')]);
    const connect = async (user: TestUser) => {
      const socket = await GatewayClient.connect(gateway, { ip: user.ip });
      return { socket, ready: await socket.identify(user.token) };
    };
    const [o, m, f] = await Promise.all([connect(owner), connect(member), connect(friend)]);
    const { serverId, textId, voiceId } = await publicServer(owner, [member]);
    const messageId = await postMessage(owner, textId, `hello <@${member.id}> https://example.com`);
    const must = async (pending: ReturnType<typeof api>) => {
      const res = await pending;
      expect(res.status, JSON.stringify(res.body)).toBeLessThan(300);
      return res.body;
    };
    await must(api('PATCH', `/v1/channels/${textId}/messages/${messageId}`, { user: owner, body: { content: 'edited' } }));
    await must(api('PUT', `/v1/channels/${textId}/messages/${messageId}/reactions/${THUMBS}/@me`, { user: member }));
    await must(api('DELETE', `/v1/channels/${textId}/messages/${messageId}/reactions/${THUMBS}/@me`, { user: member }));
    await must(api('PUT', `/v1/channels/${textId}/pins/${messageId}`, { user: owner }));
    await must(api('POST', `/v1/channels/${textId}/typing`, { user: member }));
    await must(api('PUT', `/v1/channels/${textId}/ack`, { user: member, body: { messageId } }));
    const role = await must(api('POST', `/v1/servers/${serverId}/roles`, { user: owner, body: { name: 'r' } }));
    await must(api('PATCH', `/v1/servers/${serverId}/roles/${role.id}`, { user: owner, body: { name: 'r2', color: 5 } }));
    await must(api('PATCH', `/v1/servers/${serverId}/members/@me`, { user: member, body: { nickname: 'nick' } }));
    const category = await must(api('POST', `/v1/servers/${serverId}/categories`, { user: owner, body: { name: 'cat' } }));
    const channel = await must(
      api('POST', `/v1/servers/${serverId}/channels`, { user: owner, body: { name: 'c2', channelType: 'text', categoryId: category.id } }),
    );
    await must(
      api('PUT', `/v1/channels/${channel.id}/permissions`, {
        user: owner,
        body: { roleId: role.id, allowBits: toMask(0n), denyBits: toMask(Permission.SEND_MESSAGES) },
      }),
    );
    await must(api('DELETE', `/v1/channels/${channel.id}`, { user: owner }));
    await must(api('PATCH', `/v1/servers/${serverId}`, { user: owner, body: { description: 'd' } }));
    await must(api('POST', '/v1/voice/join', { user: member, body: { channelId: voiceId } }));
    await must(api('POST', '/v1/voice/leave', { user: member }));
    await must(api('PATCH', '/v1/users/@me/presence', { user: owner, body: { status: 'idle', customStatus: 'x' } }));
    await lastAttempt(
      () => api('POST', '/v1/friends/requests', { user: owner, body: { userId: friend.id } }),
      (res) => res.status !== 404,
    );
    await must(api('POST', '/v1/friends/accept', { user: friend, body: { userId: owner.id } }));
    const conversationId = await conversationOnceKnown(owner, friend);
    const dm = await must(api('POST', '/v1/dm/messages', { user: owner, body: { conversationId, content: 'dm' } }));
    await must(api('PATCH', `/v1/dm/messages/${dm.id}`, { user: owner, body: { content: 'dm2' } }));
    await must(api('PUT', `/v1/dm/messages/${dm.id}/reactions/${THUMBS}/@me`, { user: friend }));
    await must(api('DELETE', `/v1/dm/messages/${dm.id}`, { user: owner }));
    await must(api('POST', '/v1/friends/block', { user: friend, body: { userId: owner.id } }));
    await must(api('DELETE', `/v1/servers/${serverId}/members/${member.id}`, { user: owner }));
    // Dispatches of the changes above, each on a socket it goes to: all of them are checked once they arrived.
    const awaited: [GatewayClient, string[]][] = [
      [
        o.socket,
        [
          ...['SERVER_CREATE', 'MESSAGE_UPDATE', 'REACTION_REMOVE', 'CHANNEL_PIN_ADD', 'TYPING_START', 'ROLE_UPDATE', 'CATEGORY_CREATE'],
          ...['CHANNEL_OVERRIDE_UPDATE', 'CHANNEL_DELETE', 'SERVER_UPDATE', 'VOICE_STATE_DELETE', 'FRIEND_REQUEST_ACCEPT'],
        ],
      ],
      [m.socket, ['NOTIFICATION_CREATE', 'READ_STATE_UPDATE', 'SERVER_MEMBER_UPDATE', 'PRESENCE_UPDATE', 'SERVER_MEMBER_REMOVE']],
      [f.socket, ['FRIEND_REQUEST_CREATE', 'DM_MESSAGE_UPDATE', 'DM_REACTION_ADD', 'DM_MESSAGE_DELETE', 'BLOCK_CREATE']],
    ];
    await Promise.all(awaited.flatMap(([socket, names]) => names.map((t) => socket.dispatch(t))));
    // A fresh socket resuming the member's session, and one resuming a session that never was.
    const seq = m.socket.lastSeq();
    m.socket.ws.terminate();
    const resumed = await GatewayClient.connect(gateway, { ip: member.ip });
    resumed.send({ op: OP.RESUME, d: { token: member.token, sessionId: m.ready.sessionId, seq } });
    await resumed.dispatch('RESUMED');
    const unknown = await GatewayClient.connect(gateway, { ip: friend.ip });
    unknown.send({ op: OP.RESUME, d: { token: friend.token, sessionId: randomUUID(), seq: 1 } });
    await unknown.next((frame) => frame.op === OP.INVALID_SESSION);
    const sockets = [o.socket, m.socket, f.socket, resumed, unknown];
    const { names, problems } = frameProblems(sockets.flatMap((s) => s.frames));
    for (const socket of sockets) socket.close();
    expect(problems).toEqual([]);
    const seen = ['Hello', 'READY', 'RESUMED', 'InvalidSession', 'MESSAGE_CREATE', 'DM_MESSAGE_CREATE', ...awaited.flatMap(([, n]) => n)];
    expect([...new Set(names)]).toEqual(expect.arrayContaining(seen));
  });
});
