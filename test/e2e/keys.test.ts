import { generateKeyPairSync } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { deviceKeys, rawPublic } from './device-keys.ts';
import { api, newUser } from './helpers.ts';

describe('E2EE keys through the gateway', () => {
  it('hands a co-member (asked of the real guilds service) one bundle per claim and hides it from a stranger', async () => {
    const [owner, member, stranger] = await Promise.all([newUser('keys'), newUser('keys'), newUser('keys')]);
    const device = deviceKeys();
    expect((await api('PUT', '/v1/keys/devices/phone', { user: owner, body: device })).status).toBe(201);
    const keys = [1, 2].map((keyId) => ({ keyId, publicKey: rawPublic(generateKeyPairSync('x25519').publicKey) }));
    expect((await api('POST', '/v1/keys/devices/phone/one-time-keys', { user: owner, body: { keys } })).body).toEqual({
      deviceId: 'phone',
      oneTimeKeyCount: 2,
    });

    const server = await api('POST', '/v1/servers', { user: owner, body: { name: 'Keys', isPublic: true } });
    expect(server.status).toBe(201);
    expect((await api('POST', `/v1/servers/${server.body.id}/join`, { user: member })).status).toBe(200);

    const first = await api('GET', `/v1/keys/users/${owner.id}`, { user: member });
    expect(first).toMatchObject({ status: 200, body: [{ deviceId: 'phone', ...device, oneTimeKey: keys[0] }] });
    expect((await api('GET', `/v1/keys/users/${owner.id}`, { user: member })).body[0].oneTimeKey).toEqual(keys[1]);
    expect((await api('GET', `/v1/keys/users/${owner.id}`, { user: member })).body[0].oneTimeKey).toBeNull();
    expect(await api('GET', `/v1/keys/users/${owner.id}`, { user: stranger })).toMatchObject({
      status: 404,
      body: { error: 'User not found' },
    });
    expect((await api('GET', '/v1/keys/count', { user: owner })).body).toEqual([{ deviceId: 'phone', oneTimeKeyCount: 0 }]);
    expect((await api('GET', '/v1/keys/count')).status).toBe(401);
  });
});
