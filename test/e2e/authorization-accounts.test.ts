import type { MatrixRow } from '@chat/testkit';
import { beforeAll, describe, expect, it } from 'vitest';
import { api, conversationOnceKnown, gateway, newUser, randomIp, type TestUser } from './helpers.ts';
import { matrixTests } from './matrix.ts';

/**
 * The authorization matrix of auth (profile, users, badges, presence, sessions), media (upload,
 * the uploader's view, serving, link previews) and the gateway's own routes, through the gateway.
 * The owner holds the resources (a profile, a session, an upload); `other` is any other signed-in
 * user; `blocked` is a user the owner has blocked in social; anonymous has no token (401 wherever
 * the contract asks for one). Profiles and badges are public to every signed-in user, as in the
 * spec; what a user uploaded is listed to its uploader alone (404 to anyone else), while its
 * served URL is a capability that works without a token.
 */
const ACTORS = ['owner', 'other', 'blocked', 'anonymous'] as const;
type Actor = (typeof ACTORS)[number];
type Row = MatrixRow<Actor>;
const users = {} as Record<Actor, TestUser | undefined>;
const as = (actor: Actor) => users[actor]!;
let upload: { id: string; filename: string };
/** The refresh token of each session the logout row offered, by the actor that offered it. */
const offeredSessions = new Map<Actor, string>();

async function uploadAs(user: TestUser, name: string) {
  const form = new FormData();
  form.append('file', new Blob([Buffer.from('matrix bytes')]), name);
  const res = await fetch(`${gateway}/v1/media`, {
    method: 'POST',
    headers: { authorization: `Bearer ${user.token}`, 'x-forwarded-for': user.ip },
    body: form,
  });
  expect(res.status).toBe(201);
  return (await res.json()) as { id: string; filename: string };
}

/** A fresh session of the owner (a new login): its refresh token. */
async function ownersNewSession(): Promise<string> {
  const owner = as('owner');
  const res = await api('POST', '/v1/auth/login', { ip: randomIp(), body: { login: owner.username, password: owner.password } });
  expect(res.status).toBe(200);
  return res.body.refreshToken;
}

beforeAll(async () => {
  for (const actor of ['owner', 'other', 'blocked'] as const) users[actor] = await newUser(actor);
  await conversationOnceKnown(as('owner'), as('blocked'));
  expect((await api('POST', '/v1/friends/block', { user: as('owner'), body: { userId: as('blocked').id } })).status).toBe(201);
  upload = await uploadAs(as('owner'), 'matrix.txt');
}, 60_000);

const ALL_OK = (status: number) => ({ owner: status, other: status, blocked: status, anonymous: 401 });
const PUBLIC = (status: number) => ({ owner: status, other: status, blocked: status, anonymous: status });
const readAsOwner = async (path: string) => {
  const res = await api('GET', path, { user: as('owner') });
  return { status: res.status, body: res.body };
};

const AUTH: Row[] = [
  { route: 'GET /v1/users/@me', expect: ALL_OK(200) },
  {
    route: 'PATCH /v1/users/@me',
    name: 'only ever the caller',
    request: (actor) => ({ body: { bio: `set by ${actor}` } }),
    state: () => readAsOwner('/v1/users/@me'),
    expect: ALL_OK(200),
  },
  {
    route: 'GET /v1/users/:id',
    name: "the owner's public profile",
    request: () => ({ params: { id: as('owner').id } }),
    expect: ALL_OK(200),
  },
  {
    route: 'GET /v1/users/:id',
    name: 'an id nobody has',
    request: () => ({ params: { id: '0190a6f4-0000-7000-8000-000000000000' } }),
    expect: ALL_OK(404),
  },
  { route: 'GET /v1/badges', expect: ALL_OK(200) },
  { route: 'GET /v1/users/:id/badges', request: () => ({ params: { id: as('owner').id } }), expect: ALL_OK(200) },
  { route: 'GET /v1/badges/founder-status', expect: ALL_OK(200) },
  {
    route: 'PATCH /v1/users/@me/presence',
    name: 'only ever the caller',
    request: () => ({ body: { status: 'idle' } }),
    state: () => readAsOwner('/v1/users/@me'),
    expect: ALL_OK(200),
  },
  {
    route: 'POST /v1/auth/logout',
    name: "with a refresh token of the owner's",
    request: async (actor) => {
      const refreshToken = await ownersNewSession();
      offeredSessions.set(actor, refreshToken);
      return { body: { refreshToken } };
    },
    expect: ALL_OK(204),
  },
  { route: 'GET /v1/auth/jwks', expect: PUBLIC(200) },
];

const MEDIA: Row[] = [
  {
    route: 'POST /v1/media',
    request: () => {
      const form = new FormData();
      form.append('file', new Blob([Buffer.from('cell')]), 'cell.txt');
      return { body: form };
    },
    expect: ALL_OK(201),
  },
  {
    route: 'GET /v1/media/:id',
    name: "the owner's upload",
    request: () => ({ params: { id: upload.id } }),
    expect: { owner: 200, other: 404, blocked: 404, anonymous: 401 },
  },
  {
    route: 'GET /v1/media/:id/:filename',
    name: 'the served URL is a capability',
    request: () => ({ params: { id: upload.id, filename: upload.filename } }),
    expect: PUBLIC(200),
  },
  {
    route: 'GET /v1/media/:id/:filename',
    name: 'another name for the same id',
    request: () => ({ params: { id: upload.id, filename: 'other.txt' } }),
    expect: PUBLIC(404),
  },
  { route: 'GET /v1/link-preview', request: () => ({ query: { url: `${gateway}/v1/docs` } }), expect: ALL_OK(200) },
];

const GATEWAY: Row[] = [
  { route: 'GET /v1/health', expect: PUBLIC(200) },
  { route: 'GET /v1/openapi.json', expect: PUBLIC(200) },
  { route: 'GET /v1/asyncapi.json', expect: PUBLIC(200) },
  { route: 'GET /v1/docs', expect: PUBLIC(200) },
  { route: 'GET /v1/gateway', expect: PUBLIC(200) },
];

describe('auth, media and gateway authorization matrix (owner, another user, blocked, anonymous)', () => {
  matrixTests(ACTORS, () => users, [...AUTH, ...MEDIA, ...GATEWAY]);

  it("ended only the owner's own session: the sessions others offered to logout still refresh", async () => {
    const outcomes = Object.fromEntries(
      await Promise.all(
        [...offeredSessions].map(async ([actor, refreshToken]) => {
          const res = await api('POST', '/v1/auth/refresh', { ip: randomIp(), body: { refreshToken } });
          return [actor, res.status];
        }),
      ),
    );
    expect(outcomes).toEqual({ owner: 401, other: 200, blocked: 200, anonymous: 200 });
  });
});
