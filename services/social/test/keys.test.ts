import { Buffer } from 'node:buffer';
import { generateKeyPairSync, type KeyObject, sign } from 'node:crypto';
import { SharedServersRpc } from '@chat/contracts';
import { serveRpc } from '@chat/kit';
import { afterAll, describe, expect, it } from 'vitest';
import { createHarness, eventually } from './harness.ts';

/** Bundle fetches one caller may make per window in this file (the 50-claim race is one caller). */
const FETCH_LIMIT = 60;
let now = new Date('2030-01-01T00:00:00Z');
const h = await createHarness({
  env: { KEY_BUNDLE_FETCH_LIMIT: String(FETCH_LIMIT), KEY_BUNDLE_FETCH_WINDOW_SECONDS: '60', ONE_TIME_KEYS_LOW: '5' },
  clock: () => now,
});
afterAll(() => h.close());

/**
 * Guilds' answer to "who shares a server with this user", served on the real NATS from a set of
 * pairs: the guilds service itself answers this RPC in its own test and in the e2e test.
 */
const sharingPairs = new Set<string>();
serveRpc(h.runtime.bus, h.runtime.log, SharedServersRpc, async ({ userId, otherUserIds }) => ({
  sharing: otherUserIds.filter((other) => sharingPairs.has(`${userId}:${other}`)),
}));

const rawPublic = (key: KeyObject): Buffer => Buffer.from(key.export({ format: 'jwk' }).x as string, 'base64url');
const b64 = (raw: Buffer) => raw.toString('base64');

/** A device's keys made here as a client would: an Ed25519 identity signing an X25519 prekey. */
function deviceKeys(keyId = 1) {
  const identity = generateKeyPairSync('ed25519');
  const prekey = rawPublic(generateKeyPairSync('x25519').publicKey);
  return {
    identity,
    body: {
      identityKey: b64(rawPublic(identity.publicKey)),
      signedPreKey: { keyId, publicKey: b64(prekey), signature: b64(sign(null, prekey, identity.privateKey)) },
    },
  };
}

const oneTimeKeys = (from: number, count: number) =>
  Array.from({ length: count }, (_, i) => ({ keyId: from + i, publicKey: b64(rawPublic(generateKeyPairSync('x25519').publicKey)) }));

const rows = async (sql: string, params: unknown[] = []) => (await h.runtime.pool.query(sql, params)).rows;
const heldKeys = async (userId: string, deviceId: string) =>
  (await rows('SELECT key_id FROM one_time_keys WHERE user_id = $1 AND device_id = $2 ORDER BY key_id', [userId, deviceId])).map(
    (r) => r.key_id,
  );
const keyEvents = async (userId: string, subject = 'social.keys.changed') =>
  (await h.events(subject)).filter((e) => e.data.userId === userId).map((e) => e.data);

async function befriend(a: { id: string; token: string }, b: { id: string; token: string }) {
  expect((await h.call(a, 'POST', '/v1/friends/requests', { userId: b.id })).status).toBe(201);
  expect((await h.call(b, 'POST', '/v1/friends/accept', { userId: a.id })).status).toBe(200);
}

describe('devices', () => {
  it('stores a device whose signed prekey verifies, and announces the new device', async () => {
    const alice = await h.addUser();
    const { body } = deviceKeys();
    const res = await h.call(alice, 'PUT', '/v1/keys/devices/phone-1', body);
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      deviceId: 'phone-1',
      ...body,
      oneTimeKeyCount: 0,
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
    });
    const [stored] = await rows('SELECT identity_key, signed_prekey FROM key_devices WHERE user_id = $1', [alice.id]);
    expect(b64(stored.identity_key)).toBe(body.identityKey);
    expect(b64(stored.signed_prekey)).toBe(body.signedPreKey.publicKey);
    expect(await keyEvents(alice.id)).toEqual([{ userId: alice.id, deviceId: 'phone-1', change: 'added', identityKey: body.identityKey }]);
  });

  it('rotates the signed prekey under the same identity with 200 and no key-change event', async () => {
    const alice = await h.addUser();
    const first = deviceKeys(1);
    await h.call(alice, 'PUT', '/v1/keys/devices/laptop', first.body);
    await h.call(alice, 'POST', '/v1/keys/devices/laptop/one-time-keys', { keys: oneTimeKeys(1, 3) });
    const prekey = rawPublic(generateKeyPairSync('x25519').publicKey);
    const rotated = {
      identityKey: first.body.identityKey,
      signedPreKey: { keyId: 2, publicKey: b64(prekey), signature: b64(sign(null, prekey, first.identity.privateKey)) },
    };
    const res = await h.call(alice, 'PUT', '/v1/keys/devices/laptop', rotated);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ signedPreKey: rotated.signedPreKey, oneTimeKeyCount: 3 });
    expect((await keyEvents(alice.id)).map((e) => e.change)).toEqual(['added']);
  });

  it('refuses a signature that does not verify under the identity key, and stores nothing', async () => {
    const alice = await h.addUser();
    const mine = deviceKeys();
    const other = deviceKeys();
    const forged = { identityKey: mine.body.identityKey, signedPreKey: other.body.signedPreKey };
    const res = await h.call(alice, 'PUT', '/v1/keys/devices/phone', forged);
    expect(res).toEqual({ status: 400, body: { error: 'signedPreKey.signature does not verify under identityKey' } });
    const flipped = Buffer.from(mine.body.signedPreKey.signature, 'base64');
    flipped[0] = (flipped[0] ?? 0) ^ 1;
    const tampered = { ...mine.body, signedPreKey: { ...mine.body.signedPreKey, signature: b64(flipped) } };
    expect((await h.call(alice, 'PUT', '/v1/keys/devices/phone', tampered)).status).toBe(400);
    expect(await rows('SELECT 1 FROM key_devices WHERE user_id = $1', [alice.id])).toEqual([]);
    expect(await keyEvents(alice.id)).toEqual([]);
  });

  it('answers 400 for malformed keys and device ids', async () => {
    const alice = await h.addUser();
    const { body } = deviceKeys();
    const cases: [string, unknown][] = [
      ['/v1/keys/devices/phone', { ...body, identityKey: b64(Buffer.alloc(31)) }],
      ['/v1/keys/devices/phone', { ...body, identityKey: 'not base64!' }],
      ['/v1/keys/devices/phone', { ...body, signedPreKey: { ...body.signedPreKey, signature: b64(Buffer.alloc(63)) } }],
      ['/v1/keys/devices/phone', { ...body, signedPreKey: { ...body.signedPreKey, keyId: -1 } }],
      ['/v1/keys/devices/phone', { identityKey: body.identityKey }],
      ['/v1/keys/devices/bad.device', body],
      [`/v1/keys/devices/${'x'.repeat(65)}`, body],
    ];
    for (const [url, payload] of cases) {
      const res = await h.call(alice, 'PUT', url, payload);
      expect(res.status, url).toBe(400);
      expect(res.body).toEqual({ error: expect.any(String) });
    }
    expect(await rows('SELECT 1 FROM key_devices WHERE user_id = $1', [alice.id])).toEqual([]);
  });

  it('drops the one-time keys of a device whose identity key changes, and announces the change', async () => {
    const alice = await h.addUser();
    await h.call(alice, 'PUT', '/v1/keys/devices/tablet', deviceKeys().body);
    await h.call(alice, 'POST', '/v1/keys/devices/tablet/one-time-keys', { keys: oneTimeKeys(1, 4) });
    const reinstalled = deviceKeys();
    const res = await h.call(alice, 'PUT', '/v1/keys/devices/tablet', reinstalled.body);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ identityKey: reinstalled.body.identityKey, oneTimeKeyCount: 0 });
    expect(await heldKeys(alice.id, 'tablet')).toEqual([]);
    expect((await keyEvents(alice.id)).at(-1)).toEqual({
      userId: alice.id,
      deviceId: 'tablet',
      change: 'identity_changed',
      identityKey: reinstalled.body.identityKey,
    });
  });

  it('announces the identity in force when two first PUTs of one device race: added, then identity_changed', async () => {
    const alice = await h.addUser();
    const [first, second] = [deviceKeys().body, deviceKeys().body];
    // Holding back every write to key_devices lets both PUTs read before either writes, as under load.
    const blocker = await h.runtime.pool.connect();
    let answers: { status: number; body: { identityKey: string } }[];
    try {
      await blocker.query('BEGIN');
      await blocker.query('LOCK TABLE key_devices IN SHARE ROW EXCLUSIVE MODE');
      const racing = Promise.all([first, second].map((body) => h.call(alice, 'PUT', '/v1/keys/devices/racy', body)));
      const waiting = async () =>
        (
          await rows(
            'SELECT 1 FROM pg_locks WHERE NOT granted AND database = (SELECT oid FROM pg_database WHERE datname = current_database())',
          )
        ).length === 2;
      await eventually(waiting, { what: 'both PUTs wait' });
      await blocker.query('COMMIT');
      answers = await racing;
    } finally {
      blocker.release();
    }
    expect(answers.map((a) => a.status).sort()).toEqual([200, 201]);
    const [added, replaced] = [201, 200].map((status) => answers.find((a) => a.status === status)?.body.identityKey);
    const [stored] = await rows('SELECT identity_key FROM key_devices WHERE user_id = $1', [alice.id]);
    expect(b64(stored.identity_key)).toBe(replaced);
    expect(await keyEvents(alice.id)).toEqual([
      { userId: alice.id, deviceId: 'racy', change: 'added', identityKey: added },
      { userId: alice.id, deviceId: 'racy', change: 'identity_changed', identityKey: replaced },
    ]);
  });

  it('deletes a device with its keys (204), then answers 404', async () => {
    const alice = await h.addUser();
    await h.call(alice, 'PUT', '/v1/keys/devices/old', deviceKeys().body);
    await h.call(alice, 'POST', '/v1/keys/devices/old/one-time-keys', { keys: oneTimeKeys(1, 2) });
    expect((await h.call(alice, 'DELETE', '/v1/keys/devices/old')).status).toBe(204);
    expect(await rows('SELECT 1 FROM key_devices WHERE user_id = $1', [alice.id])).toEqual([]);
    expect(await heldKeys(alice.id, 'old')).toEqual([]);
    expect((await keyEvents(alice.id)).at(-1)).toEqual({ userId: alice.id, deviceId: 'old', change: 'removed', identityKey: null });
    expect(await h.call(alice, 'DELETE', '/v1/keys/devices/old')).toEqual({ status: 404, body: { error: 'Device not found' } });
  });

  it("never touches another user's device of the same name", async () => {
    const [alice, bob] = [await h.addUser(), await h.addUser()];
    await h.call(alice, 'PUT', '/v1/keys/devices/phone', deviceKeys().body);
    expect((await h.call(bob, 'DELETE', '/v1/keys/devices/phone')).status).toBe(404);
    expect((await h.call(bob, 'POST', '/v1/keys/devices/phone/one-time-keys', { keys: oneTimeKeys(1, 1) })).status).toBe(404);
    expect(await rows('SELECT 1 FROM key_devices WHERE user_id = $1', [alice.id])).toHaveLength(1);
  });
});

describe('one-time keys', () => {
  it('adds keys and counts them per device', async () => {
    const alice = await h.addUser();
    await h.call(alice, 'PUT', '/v1/keys/devices/a', deviceKeys().body);
    await h.call(alice, 'PUT', '/v1/keys/devices/b', deviceKeys().body);
    expect(await h.call(alice, 'POST', '/v1/keys/devices/a/one-time-keys', { keys: oneTimeKeys(1, 3) })).toEqual({
      status: 200,
      body: { deviceId: 'a', oneTimeKeyCount: 3 },
    });
    expect((await h.call(alice, 'POST', '/v1/keys/devices/a/one-time-keys', { keys: oneTimeKeys(10, 2) })).body.oneTimeKeyCount).toBe(5);
    expect(await h.call(alice, 'GET', '/v1/keys/count')).toEqual({
      status: 200,
      body: [
        { deviceId: 'a', oneTimeKeyCount: 5 },
        { deviceId: 'b', oneTimeKeyCount: 0 },
      ],
    });
  });

  it('refuses duplicate keyIds (400 within a call, 409 against held ones), too many, and an unknown device', async () => {
    const alice = await h.addUser();
    await h.call(alice, 'PUT', '/v1/keys/devices/d', deviceKeys().body);
    await h.call(alice, 'POST', '/v1/keys/devices/d/one-time-keys', { keys: oneTimeKeys(1, 2) });
    const [first] = oneTimeKeys(5, 1);
    expect((await h.call(alice, 'POST', '/v1/keys/devices/d/one-time-keys', { keys: [first, first] })).status).toBe(400);
    expect(await h.call(alice, 'POST', '/v1/keys/devices/d/one-time-keys', { keys: oneTimeKeys(2, 2) })).toEqual({
      status: 409,
      body: { error: 'The device already holds keyId 2' },
    });
    expect((await h.call(alice, 'POST', '/v1/keys/devices/d/one-time-keys', { keys: oneTimeKeys(100, 101) })).status).toBe(400);
    expect((await h.call(alice, 'POST', '/v1/keys/devices/d/one-time-keys', { keys: [] })).status).toBe(400);
    expect((await h.call(alice, 'POST', '/v1/keys/devices/nope/one-time-keys', { keys: oneTimeKeys(1, 1) })).status).toBe(404);
    expect(await heldKeys(alice.id, 'd')).toEqual([1, 2]);
  });

  it('holds at most 500 keys per device', async () => {
    const alice = await h.addUser();
    await h.call(alice, 'PUT', '/v1/keys/devices/full', deviceKeys().body);
    for (let i = 0; i < 5; i++) {
      expect((await h.call(alice, 'POST', '/v1/keys/devices/full/one-time-keys', { keys: oneTimeKeys(i * 100, 100) })).status).toBe(200);
    }
    const over = await h.call(alice, 'POST', '/v1/keys/devices/full/one-time-keys', { keys: oneTimeKeys(1000, 1) });
    expect(over).toEqual({ status: 400, body: { error: 'A device holds at most 500 one-time keys (it holds 500)' } });
    expect(await heldKeys(alice.id, 'full')).toHaveLength(500);
  });
});

describe('bundles', () => {
  it('hands each of 10 one-time keys to exactly one of 50 concurrent claims', async () => {
    const [alice, bob] = [await h.addUser(), await h.addUser()];
    await befriend(alice, bob);
    const device = deviceKeys();
    await h.call(bob, 'PUT', '/v1/keys/devices/phone', device.body);
    const uploaded = oneTimeKeys(1, 10);
    await h.call(bob, 'POST', '/v1/keys/devices/phone/one-time-keys', { keys: uploaded });

    const answers = await Promise.all(Array.from({ length: 50 }, () => h.call(alice, 'GET', `/v1/keys/users/${bob.id}`)));
    expect(answers.map((a) => a.status)).toEqual(Array(50).fill(200));
    const bundles = answers.map((a) => a.body);
    for (const b of bundles) expect(b).toEqual([{ deviceId: 'phone', ...device.body, oneTimeKey: b[0].oneTimeKey }]);
    const handedOut = bundles.map((b) => b[0].oneTimeKey).filter(Boolean);
    expect(handedOut).toHaveLength(10);
    expect(new Set(handedOut.map((k) => k.keyId)).size).toBe(10);
    expect(handedOut.sort((x, y) => x.keyId - y.keyId)).toEqual(uploaded);
    expect(await heldKeys(bob.id, 'phone')).toEqual([]);
    expect((await h.call(bob, 'GET', '/v1/keys/count')).body).toEqual([{ deviceId: 'phone', oneTimeKeyCount: 0 }]);
  });

  it('claims one key per device and tells the owner when a device runs low', async () => {
    const [alice, bob] = [await h.addUser(), await h.addUser()];
    await befriend(alice, bob);
    await h.call(bob, 'PUT', '/v1/keys/devices/a', deviceKeys().body);
    await h.call(bob, 'PUT', '/v1/keys/devices/b', deviceKeys().body);
    await h.call(bob, 'POST', '/v1/keys/devices/a/one-time-keys', { keys: oneTimeKeys(1, 8) });
    await h.call(bob, 'POST', '/v1/keys/devices/b/one-time-keys', { keys: oneTimeKeys(1, 3) });

    const res = await h.call(alice, 'GET', `/v1/keys/users/${bob.id}`);
    expect(res.status).toBe(200);
    expect(res.body.map((b: { deviceId: string; oneTimeKey: { keyId: number } }) => [b.deviceId, b.oneTimeKey.keyId])).toEqual([
      ['a', 1],
      ['b', 1],
    ]);
    expect(await heldKeys(bob.id, 'a')).toEqual([2, 3, 4, 5, 6, 7, 8]);
    expect(await heldKeys(bob.id, 'b')).toEqual([2, 3]);
    // Below ONE_TIME_KEYS_LOW (5 here): only device b.
    expect(await keyEvents(bob.id, 'social.keys.low')).toEqual([{ userId: bob.id, devices: [{ deviceId: 'b', remaining: 2 }] }]);
  });

  it('answers a bundle without a one-time key when none is left, announcing nothing new', async () => {
    const [alice, bob] = [await h.addUser(), await h.addUser()];
    await befriend(alice, bob);
    const device = deviceKeys();
    await h.call(bob, 'PUT', '/v1/keys/devices/phone', device.body);
    expect(await h.call(alice, 'GET', `/v1/keys/users/${bob.id}`)).toEqual({
      status: 200,
      body: [{ deviceId: 'phone', ...device.body, oneTimeKey: null }],
    });
    expect(await keyEvents(bob.id, 'social.keys.low')).toEqual([]);
    await h.call(bob, 'POST', '/v1/keys/devices/phone/one-time-keys', { keys: oneTimeKeys(1, 1) });
    expect((await h.call(alice, 'GET', `/v1/keys/users/${bob.id}`)).body[0].oneTimeKey.keyId).toBe(1);
    expect(await keyEvents(bob.id, 'social.keys.low')).toEqual([{ userId: bob.id, devices: [{ deviceId: 'phone', remaining: 0 }] }]);
  });
});

describe('who may fetch a bundle', () => {
  async function userWithKeys() {
    const user = await h.addUser();
    await h.call(user, 'PUT', '/v1/keys/devices/phone', deviceKeys().body);
    await h.call(user, 'POST', '/v1/keys/devices/phone/one-time-keys', { keys: oneTimeKeys(1, 5) });
    return user;
  }

  it('answers a stranger 404, the same as an unknown user, and claims nothing', async () => {
    const [owner, stranger] = [await userWithKeys(), await h.addUser()];
    const hidden = await h.call(stranger, 'GET', `/v1/keys/users/${owner.id}`);
    const unknown = await h.call(stranger, 'GET', '/v1/keys/users/0190f0f0-0000-7000-8000-000000000000');
    expect(hidden).toEqual({ status: 404, body: { error: 'User not found' } });
    expect(unknown).toEqual(hidden);
    expect(await heldKeys(owner.id, 'phone')).toHaveLength(5);
  });

  it('lets the user, friends, conversation partners and server co-members fetch', async () => {
    const [owner, friend, partner, coMember] = [await userWithKeys(), await h.addUser(), await h.addUser(), await h.addUser()];
    await befriend(owner, friend);
    expect((await h.call(partner, 'POST', '/v1/dm/conversations', { userIds: [owner.id] })).status).toBe(201);
    sharingPairs.add(`${coMember.id}:${owner.id}`);
    for (const caller of [owner, friend, partner, coMember]) {
      const res = await h.call(caller, 'GET', `/v1/keys/users/${owner.id}`);
      expect(res.status).toBe(200);
      expect(res.body).toHaveLength(1);
    }
    expect(await heldKeys(owner.id, 'phone')).toHaveLength(1);
  });

  it('answers 404 across a block, either way, even between co-members', async () => {
    const [owner, blocked, blocker] = [await userWithKeys(), await h.addUser(), await h.addUser()];
    sharingPairs.add(`${blocked.id}:${owner.id}`);
    sharingPairs.add(`${blocker.id}:${owner.id}`);
    expect((await h.call(owner, 'POST', '/v1/friends/block', { userId: blocked.id })).status).toBe(201);
    expect((await h.call(blocker, 'POST', '/v1/friends/block', { userId: owner.id })).status).toBe(201);
    expect((await h.call(blocked, 'GET', `/v1/keys/users/${owner.id}`)).status).toBe(404);
    expect((await h.call(blocker, 'GET', `/v1/keys/users/${owner.id}`)).status).toBe(404);
    expect(await heldKeys(owner.id, 'phone')).toHaveLength(5);
  });

  it('limits fetches per caller with 429 and Retry-After, and opens a new window after it ends', async () => {
    const [owner, caller] = [await userWithKeys(), await h.addUser()];
    await befriend(owner, caller);
    await h.call(owner, 'POST', '/v1/keys/devices/phone/one-time-keys', { keys: oneTimeKeys(100, 100) });
    for (let i = 0; i < FETCH_LIMIT; i++) expect((await h.call(caller, 'GET', `/v1/keys/users/${owner.id}`)).status).toBe(200);
    now = new Date(now.getTime() + 45_000);
    const refused = await h.app.inject({
      method: 'GET',
      url: `/v1/keys/users/${owner.id}`,
      headers: { authorization: `Bearer ${caller.token}` },
    });
    expect(refused.statusCode).toBe(429);
    expect(refused.headers['retry-after']).toBe('15');
    expect(refused.json()).toEqual({ error: 'Too many key bundle fetches, try again later' });
    expect(await heldKeys(owner.id, 'phone')).toHaveLength(105 - FETCH_LIMIT);
    now = new Date(now.getTime() + 15_000);
    expect((await h.call(caller, 'GET', `/v1/keys/users/${owner.id}`)).status).toBe(200);
  });

  it('needs a token', async () => {
    expect((await h.call(undefined, 'GET', '/v1/keys/count')).status).toBe(401);
  });
});
