import { ALL_ROUTES, type RouteContract } from '@chat/contracts';
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { answerProblem, bodyOf, validOf } from './fuzz-arbitraries.ts';
import { api, gateway, newUser, publicServer, randomIp, type TestUser } from './helpers.ts';

/**
 * Every route receives generated input from users who may act: the owner of a server and one of its
 * members, with path and body ids drawn from what they own and from whatever earlier cases created,
 * so the cases reach the deep code paths the outsider's fuzz (fuzz.test.ts) stops before. Fails on
 * any 5xx and on a 4xx whose body is not exactly {"error": string}. Seeded: FUZZ_SEED, FUZZ_RUNS.
 */
const SEED = Number(process.env.FUZZ_SEED ?? 20261129);
const RUNS = Number(process.env.FUZZ_RUNS ?? 1_500);

/** Routes that would end the context every later case needs (the server, the owner's session). */
const CONTEXT_ENDING = new Set(['DELETE /v1/servers/:serverId', 'POST /v1/auth/logout', 'POST /v1/auth/reset-password']);

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

let owner: TestUser;
let member: TestUser;
/** Ids by kind (a collection's path segment), that the callers can name: grows with every id a 2xx answer shows. */
const pool = new Map<string, string[]>();

function remember(kind: string, id: unknown) {
  if (typeof id !== 'string') return;
  const ids = pool.get(kind) ?? [];
  if (!ids.includes(id)) ids.push(id);
  pool.set(kind, ids);
}

beforeAll(async () => {
  owner = await newUser('fowner');
  member = await newUser('fmember');
  const friend = await newUser('ffriend');
  const { serverId, textId, voiceId } = await publicServer(owner, [member]);
  const message = await api('POST', `/v1/channels/${textId}/messages`, { user: member, body: { content: 'hello @everyone' } });
  const role = await api('POST', `/v1/servers/${serverId}/roles`, { user: owner, body: { name: 'fuzzed' } });
  const category = await api('POST', `/v1/servers/${serverId}/categories`, { user: owner, body: { name: 'fuzzed' } });
  const invite = await api('POST', `/v1/servers/${serverId}/invites`, { user: owner, body: {} });
  const webhook = await api('POST', `/v1/channels/${textId}/webhooks`, { user: owner, body: { name: 'hook' } });
  const conversation = await api('POST', '/v1/dm/conversations', { user: owner, body: { userIds: [friend.id, member.id] } });
  const dm = await api('POST', '/v1/dm/messages', { user: owner, body: { conversationId: conversation.body.id, content: 'hi' } });
  for (const created of [message, role, category, invite, webhook, conversation, dm]) expect(created.status).toBe(201);
  for (const id of [owner.id, member.id, friend.id]) remember('users', id);
  remember('servers', serverId);
  for (const id of [textId, voiceId]) remember('channels', id);
  remember('messages', message.body.id);
  remember('messages', dm.body.id);
  remember('roles', role.body.id);
  remember('categories', category.body.id);
  remember('invites', invite.body.code);
  remember('webhooks', webhook.body.id);
  remember('tokens', webhook.body.token);
  remember('conversations', conversation.body.id);
  for (const emoji of ['👍', '🎉']) remember('emoji', emoji);
  for (const device of ['phone', 'laptop']) remember('devices', device);
});

/** The kind of record a route answers where its last segment is not the collection's name. */
const ANSWERED_KIND: Record<string, string> = { call: 'calls', accept: 'calls', join: 'servers', import: 'servers' };

/** The kind of id a path parameter names: `serverId` servers, and `id` by the segment before it. */
function kindOf(path: string, param: string): string {
  const named: Record<string, string> = { code: 'invites', token: 'tokens', emoji: 'emoji', deviceId: 'devices', itemId: 'queue' };
  if (named[param]) return named[param];
  if (param === 'overrideId') return 'permissions';
  if (param === 'requestId') return 'join-requests';
  if (param !== 'id') return plural(param.replace(/Id$/, ''));
  return path.slice(0, path.indexOf('/:id')).split('/').pop() as string;
}

const plural = (word: string) => (word.endsWith('y') ? `${word.slice(0, -1)}ies` : `${word}s`);

/** A path or body value: an index into the pool of its kind (resolved when sent, so later cases see new ids) or a literal. */
type Pick = { pool: number } | { literal: string };

const pickOf = (): fc.Arbitrary<Pick> =>
  fc.oneof(
    { arbitrary: fc.nat().map((n) => ({ pool: n })), weight: 10 },
    { arbitrary: fc.constantFrom('@me', '%F0%9F%91%8D', 'x'.repeat(120)).map((literal) => ({ literal })), weight: 1 },
    { arbitrary: fc.uuid({ version: 7 }).map((literal) => ({ literal })), weight: 1 },
  );

function resolve(pick: Pick, kind: string): string {
  if ('literal' in pick) return pick.literal;
  const ids = pool.get(kind)?.length ? (pool.get(kind) as string[]) : [...pool.values()].flat();
  return ids[pick.pool % ids.length] as string;
}

/** Replaces the uuids a body holds by ids from the pool, of the kind its field names (random uuids only find 404s). */
function withPoolIds(value: unknown, picks: Pick[], field = ''): unknown {
  if (typeof value === 'string') {
    if (!UUID.test(value) || !picks.length) return value;
    const kind = /channel/i.test(field) ? 'channels' : /replyTo|message/i.test(field) ? 'messages' : plural(field.replace(/Ids?$/, ''));
    return resolve(picks.shift() as Pick, kind);
  }
  if (Array.isArray(value)) return value.map((v) => withPoolIds(v, picks, field));
  if (value && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, withPoolIds(v, picks, k)]));
  return value;
}

function queryOf(route: RouteContract): fc.Arbitrary<Record<string, unknown>> {
  return validOf(route.query).map((q) => (q && typeof q === 'object' ? (q as Record<string, unknown>) : {}));
}

interface Case {
  route: RouteContract;
  asOwner: boolean;
  path: Pick[];
  query: Record<string, unknown>;
  body: unknown;
  picks: Pick[];
}

const caseOf = (route: RouteContract): fc.Arbitrary<Case> =>
  fc.record({
    route: fc.constant(route),
    asOwner: fc.boolean(),
    path: fc.array(pickOf(), { minLength: 4, maxLength: 4 }),
    query: queryOf(route),
    body: route.method === 'GET' || route.method === 'DELETE' ? fc.constant(undefined) : bodyOf(route.body),
    picks: fc.array(pickOf(), { minLength: 8, maxLength: 8 }),
  });

function urlOf(c: Case): string {
  const picks = [...c.path];
  const path = c.route.path.replace(/:([A-Za-z]+)/g, (_, param: string) =>
    encodeURIComponent(resolve(picks.shift() as Pick, kindOf(c.route.path, param))),
  );
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(withPoolIds(c.query, [...c.picks]) as Record<string, unknown>))
    if (v !== undefined) params.set(k, typeof v === 'string' ? v : JSON.stringify(v));
  const query = params.toString();
  return query ? `${path}?${query}` : path;
}

async function send(c: Case) {
  const user = c.asOwner ? owner : member;
  const body = c.body === undefined ? undefined : withPoolIds(c.body, [...c.picks]);
  const headers: Record<string, string> = { 'x-forwarded-for': randomIp(), authorization: `Bearer ${user.token}` };
  if (body !== undefined) headers['content-type'] = 'application/json';
  const url = urlOf(c);
  const res = await fetch(`${gateway}${url}`, {
    method: c.route.method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { url, body, status: res.status, text: await res.text() };
}

/** Ids and invite codes a successful answer shows, by the collection the route names, for later cases to name. */
function learnIds(route: RouteContract, text: string) {
  const segment = route.path
    .split('/')
    .filter((s) => s && !s.startsWith(':') && s !== '@me')
    .pop() as string;
  const collection = ANSWERED_KIND[segment] ?? segment;
  let answer: unknown;
  try {
    answer = JSON.parse(text);
  } catch {
    return;
  }
  for (const record of Array.isArray(answer) ? answer : [answer]) {
    if (!record || typeof record !== 'object') continue;
    const { id, code, userId } = record as Record<string, unknown>;
    remember(collection, code ?? id);
    remember('users', userId);
  }
}

describe('fuzzing every route as its users', () => {
  it(`finds no 5xx and no malformed 4xx body in ${RUNS} seeded cases by a server's owner and member`, async () => {
    const routes = ALL_ROUTES.filter((r) => !r.multipart && r.auth && !CONTEXT_ENDING.has(`${r.method} ${r.path}`));
    const cases = fc.sample(
      fc.constantFrom(...routes).chain((route) => caseOf(route)),
      { seed: SEED, numRuns: RUNS },
    );
    const problems = new Map<string, string>();
    const accepted = new Set<string>();
    for (const c of cases) {
      const { url, body, status, text } = await send(c);
      const name = `${c.route.method} ${c.route.path}`;
      if (status < 300) {
        accepted.add(name);
        learnIds(c.route, text);
      }
      const problem = answerProblem(status, text);
      if (problem && !problems.has(name))
        problems.set(
          name,
          `${c.asOwner ? 'owner' : 'member'} ${c.route.method} ${url} ${JSON.stringify(body)?.slice(0, 300)} -> ${problem}`,
        );
    }
    expect([...problems.values()]).toEqual([]);
    // The cases went deep: most routes accepted at least one of them.
    expect(accepted.size).toBeGreaterThan(routes.length / 2);
  }, 600_000);
});
