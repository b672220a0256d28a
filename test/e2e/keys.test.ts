import { generateKeyPairSync } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { deviceKeys, oneTimeKeys, rawPublic } from './device-keys.ts';
import { conversationOnceKnown, failure, fileSockets, newClientUser, recordingClient } from './helpers.ts';

const { identified } = fileSockets();

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

  it('stops handing bundles to someone whose only link to the owner was a group they left (404)', async () => {
    const [owner, host, leaver] = await Promise.all([newClientUser('keysown'), newClientUser('keyshost'), newClientUser('keysleft')]);
    await conversationOnceKnown(host, owner);
    await conversationOnceKnown(host, leaver);
    await owner.client.social.putDevice({ params: { deviceId: 'phone' }, body: deviceKeys() });
    const group = await host.client.social.createConversation({ body: { userIds: [owner.id, leaver.id] } });
    expect(host.status()).toBe(201);

    const claim = () => leaver.client.social.claimBundles({ params: { userId: owner.id } });
    expect((await claim()).map((b) => b.deviceId)).toEqual(['phone']);
    await leaver.client.social.leaveConversation({ params: { id: group.id } });
    expect(leaver.status()).toBe(204);
    expect(await failure(claim())).toMatchObject({ status: 404, body: { error: 'User not found' } });
  });

  it('tells every session of the owner, and no one else, when a claim leaves a device low on one-time keys', async () => {
    const [owner, contact] = await Promise.all([newClientUser('keyslow'), newClientUser('keyslow')]);
    await conversationOnceKnown(contact, owner);
    await owner.client.social.putDevice({ params: { deviceId: 'phone' }, body: deviceKeys() });
    await owner.client.social.uploadOneTimeKeys({ params: { deviceId: 'phone' }, body: { keys: oneTimeKeys(1, 2, 3) } });
    const [phone, laptop, contactSocket] = await Promise.all([identified(owner), identified(owner), identified(contact)]);

    // Below ONE_TIME_KEYS_LOW (10 in the e2e platform): 2 of 3 are left.
    expect(await contact.client.social.claimBundles({ params: { userId: owner.id } })).toHaveLength(1);
    for (const session of [phone, laptop]) {
      expect((await session.dispatch('KEYS_LOW')).d).toEqual({ devices: [{ deviceId: 'phone', remaining: 2 }] });
    }
    // A later event of the same stream reaches the contact: by then KEYS_LOW had its chance.
    await owner.client.social.putDevice({ params: { deviceId: 'laptop' }, body: deviceKeys() });
    await contactSocket.dispatch('KEYS_UPDATE', (d) => d.deviceId === 'laptop');
    expect(contactSocket.dispatches('KEYS_LOW')).toEqual([]);
  });
});
