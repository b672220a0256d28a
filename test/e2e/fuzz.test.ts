import { randomBytes } from 'node:crypto';
import { ALL_ROUTES, type RouteContract } from '@chat/contracts';
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { answerProblem, bodyOf, validOf } from './fuzz-arbitraries.ts';
import { api, gateway, newUser, randomIp, type TestUser } from './helpers.ts';

/**
 * Every route of the contracts receives generated bodies, queries and path ids (valid by its zod
 * schema most of the time, anything JSON otherwise), as an outsider, anonymously and with a broken
 * token. Fails on any 5xx, on a 4xx whose body is not exactly {"error": string}, and on a 2xx that
 * shows the outsider the victim's private data (a direct message, a private server, an email).
 * Seeded: FUZZ_SEED picks the cases, FUZZ_RUNS how many (default 1,500 in `npm test`).
 */
const SEED = Number(process.env.FUZZ_SEED ?? 20261123);
const RUNS = Number(process.env.FUZZ_RUNS ?? 1_500);

let victim: TestUser;
let outsider: TestUser;
const secrets: string[] = [];
const knownIds: string[] = [];

beforeAll(async () => {
  victim = await newUser('victim');
  outsider = await newUser('fuzzer');
  const friend = await newUser('friend');
  const serverName = `secretsrv${randomBytes(4).toString('hex')}`;
  const server = await api('POST', '/v1/servers', { user: victim, body: { name: serverName, isPublic: false } });
  expect(server.status).toBe(201);
  const channels = await api('GET', `/v1/servers/${server.body.id}/channels`, { user: victim });
  const conversation = await api('POST', '/v1/dm/conversations', { user: victim, body: { userIds: [friend.id] } });
  const secretText = `secretdm${randomBytes(6).toString('hex')}`;
  const dm = await api('POST', '/v1/dm/messages', { user: victim, body: { conversationId: conversation.body.id, content: secretText } });
  expect(dm.status).toBe(201);
  const channelMessage = await api('POST', `/v1/channels/${channels.body[0].id}/messages`, {
    user: victim,
    body: { content: `${secretText}ch` },
  });
  expect(channelMessage.status).toBe(201);
  secrets.push(serverName, secretText, victim.email);
  knownIds.push(
    victim.id,
    friend.id,
    outsider.id,
    server.body.id,
    ...channels.body.map((c: { id: string }) => c.id),
    conversation.body.id,
    dm.body.id,
    channelMessage.body.id,
  );
});

const pathValue = () =>
  fc.oneof(
    { arbitrary: fc.constantFrom(...knownIds), weight: 4 },
    { arbitrary: fc.uuid({ version: 7 }), weight: 2 },
    { arbitrary: fc.string({ maxLength: 20 }), weight: 1 },
    { arbitrary: fc.constantFrom('..', '%2e', '@me', '0', 'x'.repeat(300)), weight: 1 },
  );

function pathOf(route: RouteContract): fc.Arbitrary<string> {
  const names = [...route.path.matchAll(/:([A-Za-z]+)/g)].map((m) => m[1] as string);
  return fc.tuple(...names.map(() => pathValue())).map((values) => {
    let path = route.path;
    names.forEach((name, i) => {
      path = path.replace(`:${name}`, encodeURIComponent(String(values[i])));
    });
    return path;
  });
}

function queryOf(route: RouteContract): fc.Arbitrary<string> {
  const valid = validOf(route.query).map((q) => (q && typeof q === 'object' ? q : {}));
  const any = fc.dictionary(fc.string({ maxLength: 8 }), fc.string({ maxLength: 12 }), { maxKeys: 3 });
  return fc.oneof(valid, any).map((q) => {
    const params = new URLSearchParams();
    for (const [k, v] of Object.entries(q as Record<string, unknown>))
      if (v !== undefined) params.set(k, typeof v === 'string' ? v : JSON.stringify(v));
    const text = params.toString();
    return text ? `?${text}` : '';
  });
}

type Caller = 'outsider' | 'anonymous' | 'broken-token';

interface Case {
  route: RouteContract;
  caller: Caller;
  url: string;
  body: unknown;
}

const caseOf = (route: RouteContract): fc.Arbitrary<Case> =>
  fc.record({
    route: fc.constant(route),
    caller: fc.constantFrom<Caller>('outsider', 'outsider', 'anonymous', 'broken-token'),
    url: fc.tuple(pathOf(route), queryOf(route)).map(([p, q]) => p + q),
    body: route.method === 'GET' || route.method === 'DELETE' ? fc.constant(undefined) : bodyOf(route.body),
  });

async function send(c: Case) {
  const headers: Record<string, string> = { 'x-forwarded-for': randomIp() };
  if (c.caller === 'outsider') headers.authorization = `Bearer ${outsider.token}`;
  if (c.caller === 'broken-token') headers.authorization = `Bearer ${outsider.token.slice(0, -4)}AAAA`;
  if (c.body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(`${gateway}${c.url}`, {
    method: c.route.method,
    headers,
    body: c.body === undefined ? undefined : JSON.stringify(c.body),
  });
  return { status: res.status, text: await res.text() };
}

/** What is wrong with an answer, or undefined. */
function problemOf(status: number, text: string): string | undefined {
  const problem = answerProblem(status, text);
  if (problem || status >= 400) return problem;
  const leaked = secrets.find((s) => text.includes(s));
  if (leaked) return `answered ${status} showing another user's private data (${leaked === victim.email ? 'email' : leaked})`;
  return undefined;
}

describe('fuzzing every route', () => {
  it(`finds no 5xx, no malformed 4xx body and no leak of another user's data in ${RUNS} seeded cases`, async () => {
    const routes = ALL_ROUTES.filter((r) => !r.multipart);
    const cases = fc.sample(
      fc.constantFrom(...routes).chain((route) => caseOf(route)),
      { seed: SEED, numRuns: RUNS },
    );
    const problems = new Map<string, string>();
    const covered = new Set<string>();
    for (const c of cases) {
      const { status, text } = await send(c);
      const name = `${c.route.method} ${c.route.path}`;
      covered.add(name);
      const problem = problemOf(status, text);
      if (problem && !problems.has(name))
        problems.set(name, `${c.caller} ${c.route.method} ${c.url} ${JSON.stringify(c.body)?.slice(0, 200)} -> ${problem}`);
    }
    expect([...problems.values()]).toEqual([]);
    // Every route had its turn (the seed and the count are enough for that).
    expect(covered.size).toBe(routes.length);
  }, 600_000);
});
