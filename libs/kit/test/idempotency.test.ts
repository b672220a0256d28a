import { randomBytes } from 'node:crypto';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defineRoute } from '@chat/contracts';
import { createTestIssuer, createTestRuntime, until } from '@chat/testkit';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { z } from 'zod';
import { many, one, withTx } from '../src/db.ts';
import { AppError } from '../src/errors.ts';
import { enqueueEvent } from '../src/events.ts';
import { createHttpApp, route } from '../src/http.ts';
import {
  commitIdempotent,
  idempotencyKeyOf,
  purgeIdempotencyKeys,
  streamedRequestFingerprint,
  userIdempotencyScope,
} from '../src/idempotency.ts';

// A service of one table, whose creating route opts into Idempotency-Key like the real ones do.
const migrationsDir = await mkdtemp(join(tmpdir(), 'kit-idem-'));
await writeFile(join(migrationsDir, '0001_widgets.sql'), 'CREATE TABLE widgets (id uuid PRIMARY KEY, name text NOT NULL);');
const runtime = await createTestRuntime({
  service: 'kitidem',
  migrationsDir,
  stream: { name: 'IDEM', subjects: ['idem.>'] },
  backing: inject('backing'),
});
const issuer = await createTestIssuer();
const Widget = z.object({ id: z.uuid(), name: z.string() });
const createWidget = defineRoute({
  method: 'POST',
  path: '/v1/widgets',
  service: 'guilds',
  summary: 'test',
  body: z.object({ name: z.string(), fail: z.boolean().optional() }),
  status: 201,
  response: Widget,
});
const executeHook = defineRoute({
  method: 'POST',
  path: '/v1/hooks/:id',
  service: 'guilds',
  summary: 'test',
  auth: false,
  params: z.object({ id: z.uuid() }),
  body: z.object({ name: z.string() }),
  status: 201,
  response: Widget,
});
// A route that reads its own body before anything is written (as an upload does) and commits with commitIdempotent.
const createStreamed = defineRoute({
  method: 'POST',
  path: '/v1/streamed',
  service: 'guilds',
  summary: 'test',
  body: z.object({ name: z.string() }),
  status: 201,
  response: Widget,
});
// A creating route whose answer holds a secret shown once, as a webhook's token is.
const createKeyed = defineRoute({
  method: 'POST',
  path: '/v1/keyed',
  service: 'guilds',
  summary: 'test',
  body: z.object({ name: z.string() }),
  status: 201,
  response: Widget.extend({ secret: z.string() }),
});

// Lets a test hold a request inside its handler, after its write, before it answers.
let gate: Promise<void> | undefined;
let entered: (() => void) | undefined;

/** Holds the next request inside its handler: `inside` once it is there; `release` lets every held one answer. */
function holdNextRequest(): { inside: Promise<void>; release: () => void } {
  let release: () => void = () => {};
  gate = new Promise((resolve) => {
    release = resolve;
  });
  const inside = new Promise<void>((resolve) => {
    entered = resolve;
  });
  return {
    inside: inside.then(() => {
      entered = undefined;
    }),
    release: () => {
      release();
      gate = undefined;
    },
  };
}
const app = createHttpApp({ log: runtime.log, tokens: issuer.verifier(), pool: runtime.pool });
const insertWidget = async (name: string, fail?: boolean) => {
  const widget = await withTx(runtime.pool, async (tx) => {
    const row = await one<{ id: string; name: string }>(
      tx,
      'INSERT INTO widgets (id, name) VALUES (gen_random_uuid(), $1) RETURNING id, name',
      [name],
    );
    await enqueueEvent(tx, 'idem.widget.created', row);
    return row;
  });
  entered?.();
  await gate;
  // After the write: the write must not outlive a failed request.
  if (fail) throw new AppError(400, 'Refused after writing');
  return widget;
};
route(app, createWidget, async (req) => insertWidget(req.body.name, req.body.fail), { idempotent: 'user' });
route(app, executeHook, async (req) => insertWidget(req.body.name), {
  idempotent: (req) => `webhook:${(req.params as { id: string }).id}`,
});
route(app, createKeyed, async (req) => ({ ...(await insertWidget(req.body.name)), secret: randomBytes(32).toString('base64url') }), {
  idempotent: 'user',
  sealed: true,
});
route(app, createStreamed, async (req, reply) => {
  const claim = {
    scope: userIdempotencyScope(req.user.id),
    key: idempotencyKeyOf(req) as string,
    fingerprint: streamedRequestFingerprint(req, req.body.name),
  };
  const answer = await commitIdempotent(runtime.pool, reply, claim, async () => ({ status: 201, body: await insertWidget(req.body.name) }));
  return answer.body as z.infer<typeof Widget>;
});
afterAll(async () => {
  await app.close();
  await runtime.close();
});

const userA = crypto.randomUUID();
const userB = crypto.randomUUID();
async function post(body: unknown, options: { key?: string; user?: string } = {}) {
  const headers: Record<string, string> = { authorization: `Bearer ${await issuer.sign(options.user ?? userA)}` };
  if (options.key !== undefined) headers['idempotency-key'] = options.key;
  return app.inject({ method: 'POST', url: '/v1/widgets', headers, payload: body as object });
}
const widgetsNamed = async (name: string) => many(runtime.pool, 'SELECT id FROM widgets WHERE name = $1', [name]);
const eventsFor = async (name: string) => many(runtime.pool, "SELECT id FROM outbox WHERE payload->'data'->>'name' = $1", [name]);

describe('Idempotency-Key on a creating POST', () => {
  it('answers a retry with the first answer, byte for byte, and writes once (one row, one event)', async () => {
    const key = crypto.randomUUID();
    const first = await post({ name: 'retried' }, { key });
    const again = await post({ name: 'retried' }, { key });
    expect(first.statusCode).toBe(201);
    expect(again.statusCode).toBe(201);
    expect(again.payload).toBe(first.payload);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(first.headers['idempotent-replayed']).toBeUndefined();
    expect(await widgetsNamed('retried')).toHaveLength(1);
    expect(await eventsFor('retried')).toHaveLength(1);
  });

  it('treats the same JSON with its keys in another order as the same request', async () => {
    const key = crypto.randomUUID();
    const first = await app.inject({
      method: 'POST',
      url: '/v1/widgets',
      headers: { authorization: `Bearer ${await issuer.sign(userA)}`, 'idempotency-key': key, 'content-type': 'application/json' },
      payload: '{"name":"reordered","fail":false}',
    });
    const again = await app.inject({
      method: 'POST',
      url: '/v1/widgets',
      headers: { authorization: `Bearer ${await issuer.sign(userA)}`, 'idempotency-key': key, 'content-type': 'application/json' },
      payload: '{ "fail": false, "name": "reordered" }',
    });
    expect(again.statusCode).toBe(201);
    expect(again.json()).toEqual(first.json());
    expect(await widgetsNamed('reordered')).toHaveLength(1);
  });

  it('answers 422 for the same key with another body, and writes nothing', async () => {
    const key = crypto.randomUUID();
    expect((await post({ name: 'original' }, { key })).statusCode).toBe(201);
    const other = await post({ name: 'other body' }, { key });
    expect(other.statusCode).toBe(422);
    expect(other.json()).toEqual({ error: 'This Idempotency-Key was already used for a different request' });
    expect(await widgetsNamed('other body')).toEqual([]);
  });

  it('answers 409 while a request with the same key is still running, and the first one completes once', async () => {
    const key = crypto.randomUUID();
    const held = holdNextRequest();
    const first = post({ name: 'concurrent' }, { key });
    await held.inside;
    const second = await post({ name: 'concurrent' }, { key });
    held.release();
    expect(second.statusCode).toBe(409);
    expect(second.json()).toEqual({ error: 'A request with this Idempotency-Key is still being processed; retry later' });
    expect((await first).statusCode).toBe(201);
    const third = await post({ name: 'concurrent' }, { key });
    expect(third.json()).toEqual((await first).json());
    expect(await widgetsNamed('concurrent')).toHaveLength(1);
  });

  it('records nothing for a request that fails, so its key may be used again; its write is rolled back', async () => {
    const key = crypto.randomUUID();
    const failed = await post({ name: 'fails once', fail: true }, { key });
    expect(failed.statusCode).toBe(400);
    expect(await widgetsNamed('fails once')).toEqual([]);
    expect(await eventsFor('fails once')).toEqual([]);
    const retried = await post({ name: 'fails once', fail: false }, { key });
    expect(retried.statusCode).toBe(201);
    expect(await widgetsNamed('fails once')).toHaveLength(1);
  });

  it('keeps keys per user: the same key from two users makes two writes', async () => {
    const key = crypto.randomUUID();
    const a = await post({ name: 'per user' }, { key, user: userA });
    const b = await post({ name: 'per user' }, { key, user: userB });
    expect(a.statusCode).toBe(201);
    expect(b.statusCode).toBe(201);
    expect(b.json().id).not.toBe(a.json().id);
    expect(await widgetsNamed('per user')).toHaveLength(2);
  });

  it('keeps keys per webhook on a public route', async () => {
    const key = crypto.randomUUID();
    const hook = crypto.randomUUID();
    const call = (id: string) =>
      app.inject({ method: 'POST', url: `/v1/hooks/${id}`, headers: { 'idempotency-key': key }, payload: { name: 'hooked' } });
    const first = await call(hook);
    const again = await call(hook);
    const otherHook = await call(crypto.randomUUID());
    expect(again.payload).toBe(first.payload);
    expect(otherHook.json().id).not.toBe(first.json().id);
    expect(await widgetsNamed('hooked')).toHaveLength(2);
  });

  it('writes every time without a key, and refuses a malformed key with 400', async () => {
    expect((await post({ name: 'no key' })).statusCode).toBe(201);
    expect((await post({ name: 'no key' })).statusCode).toBe(201);
    expect(await widgetsNamed('no key')).toHaveLength(2);
    const bad = await post({ name: 'bad key' }, { key: 'x'.repeat(256) });
    expect(bad.statusCode).toBe(400);
    expect(bad.json()).toEqual({ error: 'Idempotency-Key must be 1 to 255 visible ASCII characters' });
    expect(await widgetsNamed('bad key')).toEqual([]);
  });

  it('forgets a key after 24 hours: the purge removes it and the same key writes anew', async () => {
    const key = crypto.randomUUID();
    const first = await post({ name: 'expired' }, { key });
    await runtime.pool.query("UPDATE idempotency_keys SET created_at = now() - interval '25 hours' WHERE key = $1", [key]);
    const later = await post({ name: 'expired' }, { key });
    expect(later.statusCode).toBe(201);
    expect(later.json().id).not.toBe(first.json().id);
    await runtime.pool.query("UPDATE idempotency_keys SET created_at = now() - interval '25 hours' WHERE key = $1", [key]);
    expect(await purgeIdempotencyKeys(runtime.pool)).toBeGreaterThanOrEqual(1);
    expect(await many(runtime.pool, 'SELECT 1 FROM idempotency_keys WHERE key = $1', [key])).toEqual([]);
  });
});

describe('Idempotency-Key on a route whose answer is sealed (a secret shown once)', () => {
  const postKeyed = async (name: string, key: string) =>
    app.inject({
      method: 'POST',
      url: '/v1/keyed',
      headers: { authorization: `Bearer ${await issuer.sign(userA)}`, 'idempotency-key': key },
      payload: { name },
    });
  const tableText = async () => JSON.stringify((await runtime.pool.query('SELECT * FROM idempotency_keys')).rows);

  it('keeps neither the secret nor the key in the table, and replays the first answer, secret included, to the key', async () => {
    const key = `sealed-${crypto.randomUUID()}`;
    const first = await postKeyed('sealed once', key);
    expect(first.statusCode).toBe(201);
    const { secret } = first.json();
    expect(secret).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const table = await tableText();
    expect(table).not.toContain(secret);
    expect(table).not.toContain(key);
    const again = await postKeyed('sealed once', key);
    expect(again.statusCode).toBe(201);
    expect(again.payload).toBe(first.payload);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(await widgetsNamed('sealed once')).toHaveLength(1);
  });

  it('answers 422 for the same key with another body, and 409 to a request under the key while the first runs', async () => {
    const key = crypto.randomUUID();
    const held = holdNextRequest();
    const first = postKeyed('sealed first', key);
    await held.inside;
    const concurrent = await postKeyed('sealed first', key);
    held.release();
    expect(concurrent.statusCode).toBe(409);
    expect((await first).statusCode).toBe(201);
    const other = await postKeyed('sealed other', key);
    expect(other.statusCode).toBe(422);
    expect(other.json()).toEqual({ error: 'This Idempotency-Key was already used for a different request' });
    expect(await widgetsNamed('sealed first')).toHaveLength(1);
    expect(await widgetsNamed('sealed other')).toEqual([]);
  });

  it('keeps a sealed answer apart from a plain key of the same text and from another user’s same key', async () => {
    const key = crypto.randomUUID();
    const mine = await postKeyed('sealed mine', key);
    const plain = await post({ name: 'sealed mine' }, { key });
    expect(plain.statusCode).toBe(201);
    const theirs = await app.inject({
      method: 'POST',
      url: '/v1/keyed',
      headers: { authorization: `Bearer ${await issuer.sign(userB)}`, 'idempotency-key': key },
      payload: { name: 'sealed mine' },
    });
    expect(theirs.statusCode).toBe(201);
    expect(theirs.json().secret).not.toBe(mine.json().secret);
    expect(await widgetsNamed('sealed mine')).toHaveLength(3);
  });
});

describe('commitIdempotent, for a handler that reads its body before it writes', () => {
  const postStreamed = async (name: string, key: string) =>
    app.inject({
      method: 'POST',
      url: '/v1/streamed',
      headers: { authorization: `Bearer ${await issuer.sign(userA)}`, 'idempotency-key': key },
      payload: { name },
    });

  it('writes once for two concurrent requests with one key: the later one waits, then replays the first answer', async () => {
    const key = crypto.randomUUID();
    const held = holdNextRequest();
    const first = postStreamed('streamed together', key);
    await held.inside;
    const second = postStreamed('streamed together', key);
    const waiting =
      "SELECT 1 FROM pg_locks l JOIN pg_database d ON d.oid = l.database WHERE d.datname = current_database() AND l.locktype = 'advisory' AND NOT l.granted";
    await until(async () => (await many(runtime.pool, waiting)).length > 0, { what: 'the second request waits for the key' });
    held.release();
    const [a, b] = await Promise.all([first, second]);
    expect(a.statusCode).toBe(201);
    expect(b.statusCode).toBe(201);
    expect(b.payload).toBe(a.payload);
    expect(b.headers['idempotent-replayed']).toBe('true');
    expect(await widgetsNamed('streamed together')).toHaveLength(1);
    expect(await eventsFor('streamed together')).toHaveLength(1);
  });

  it('answers 422 for another fingerprint under the key, and writes nothing', async () => {
    const key = crypto.randomUUID();
    expect((await postStreamed('streamed first', key)).statusCode).toBe(201);
    const other = await postStreamed('streamed other', key);
    expect(other.statusCode).toBe(422);
    expect(other.json()).toEqual({ error: 'This Idempotency-Key was already used for a different request' });
    expect(await widgetsNamed('streamed other')).toEqual([]);
  });
});
