import { generateKeyPairSync } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { deviceKeys, rawPublic } from './device-keys.ts';
import { failure, newClientUser, recordingClient } from './helpers.ts';

describe('E2EE keys through the gateway', () => {
  it('hands a co-member (asked of the real guilds service) one bundle per claim and hides it from a stranger', async () => {
    const [owner, member, stranger] = await Promise.all([newClientUser('keys'), newClientUser('keys'), newClientUser('keys')]);
    const device = deviceKeys();
    await owner.client.social.putDevice({ params: { deviceId: 'phone' }, body: device });
    expect(owner.status()).toBe(201);
    const keys = [1, 2].map((keyId) => ({ keyId, publicKey: rawPublic(generateKeyPairSync('x25519').publicKey) }));
    expect(await owner.client.social.uploadOneTimeKeys({ params: { deviceId: 'phone' }, body: { keys } })).toEqual({
      deviceId: 'phone',
      oneTimeKeyCount: 2,
    });

    const server = await owner.client.servers.createServer({ body: { name: 'Keys', isPublic: true } });
    expect(owner.status()).toBe(201);
    await member.client.servers.joinServer({ params: { serverId: server.id } });
    expect(member.status()).toBe(200);

    const claim = () => member.client.social.claimBundles({ params: { userId: owner.id } });
    expect(await claim()).toEqual([{ deviceId: 'phone', ...device, oneTimeKey: keys[0] }]);
    expect(member.status()).toBe(200);
    expect((await claim())[0]?.oneTimeKey).toEqual(keys[1]);
    expect((await claim())[0]?.oneTimeKey).toBeNull();
    expect(await failure(stranger.client.social.claimBundles({ params: { userId: owner.id } }))).toMatchObject({
      status: 404,
      body: { error: 'User not found' },
    });
    expect(await owner.client.social.counts()).toEqual([{ deviceId: 'phone', oneTimeKeyCount: 0 }]);
    expect(await failure(recordingClient().client.social.counts())).toMatchObject({ status: 401 });
  });
});
