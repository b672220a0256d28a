import {
  type Device,
  KEYS_SUBJECTS,
  type KeyBundle,
  type KeysChangedEvent,
  MAX_ONE_TIME_KEYS_PER_DEVICE,
  type OneTimeKeyCount,
  type PutDeviceBody,
  SharedServersRpc,
  type UploadOneTimeKeysBody,
} from '@chat/contracts';
import {
  type Bus,
  badRequest,
  conflict,
  enqueueEvent,
  notFound,
  type Pool,
  type RequestContext,
  requestRpc,
  tooManyRequests,
  withTx,
} from '@chat/kit';
import {
  claimBundles,
  countFetchAndReach,
  countOneTimeKeys,
  deleteDevice,
  deleteOneTimeKeys,
  findDevice,
  heldKeyIds,
  insertOneTimeKeys,
  lockDevice,
  oneTimeKeyCounts,
  upsertDevice,
} from '../db/keys.ts';
import { verifiesSignedPreKey } from './key-signatures.ts';

/** E2EE key distribution: the server stores and hands out public keys, and checks what it can. */

export type KeysDeps = {
  pool: Pool;
  bus: Bus;
  clock: () => Date;
  limits: { bundleFetches: number; bundleWindowMs: number; lowOneTimeKeys: number };
};

type PutDeviceOutcome = { device: Device; created: boolean };

/**
 * Publishes a device's identity key and signed prekey. The signature must verify under the
 * identity key. A new identity key makes the device's one-time keys meaningless (they belonged to
 * the old one), so they go, and contacts are told (`social.keys.changed`). PUTs of one device take
 * turns, so of two racing first PUTs the second is an identity change like any other.
 */
export async function putDevice(deps: KeysDeps, ctx: RequestContext, deviceId: string, body: PutDeviceBody): Promise<PutDeviceOutcome> {
  const { publicKey, signature } = body.signedPreKey;
  if (!verifiesSignedPreKey(body.identityKey, publicKey, signature)) {
    throw badRequest('signedPreKey.signature does not verify under identityKey');
  }
  return withTx(deps.pool, async (tx) => {
    const before = await lockDevice(tx, ctx.userId, deviceId);
    const identityChanged = before !== undefined && before.identityKey !== body.identityKey;
    if (identityChanged) await deleteOneTimeKeys(tx, ctx.userId, deviceId);
    const created = await upsertDevice(tx, ctx.userId, deviceId, body);
    if (created || identityChanged) {
      await announceKeys(tx, ctx, { deviceId, change: created ? 'added' : 'identity_changed', identityKey: body.identityKey });
    }
    const device = await findDevice(tx, ctx.userId, deviceId);
    if (!device) throw new Error('device vanished inside its own transaction');
    return { device, created };
  });
}

/** Adds one-time keys to one of the caller's devices; answers how many it holds now. */
export async function uploadOneTimeKeys(
  deps: KeysDeps,
  ctx: RequestContext,
  deviceId: string,
  body: UploadOneTimeKeysBody,
): Promise<OneTimeKeyCount> {
  return withTx(deps.pool, async (tx) => {
    // The device row's lock serialises uploads, so the cap holds under concurrency.
    if (!(await lockDevice(tx, ctx.userId, deviceId))) throw notFound('Device');
    const held = await heldKeyIds(
      tx,
      ctx.userId,
      deviceId,
      body.keys.map((k) => k.keyId),
    );
    if (held.length) throw conflict(`The device already holds keyId ${held.join(', ')}`);
    const count = await countOneTimeKeys(tx, ctx.userId, deviceId);
    if (count + body.keys.length > MAX_ONE_TIME_KEYS_PER_DEVICE) {
      throw badRequest(`A device holds at most ${MAX_ONE_TIME_KEYS_PER_DEVICE} one-time keys (it holds ${count})`);
    }
    await insertOneTimeKeys(tx, ctx.userId, deviceId, body.keys);
    return { deviceId, oneTimeKeyCount: count + body.keys.length };
  });
}

export const keyCounts = (deps: KeysDeps, ctx: RequestContext): Promise<OneTimeKeyCount[]> => oneTimeKeyCounts(deps.pool, ctx.userId);

export async function removeDevice(deps: KeysDeps, ctx: RequestContext, deviceId: string): Promise<void> {
  await withTx(deps.pool, async (tx) => {
    if (!(await deleteDevice(tx, ctx.userId, deviceId))) throw notFound('Device');
    await announceKeys(tx, ctx, { deviceId, change: 'removed', identityKey: null });
  });
}

/**
 * A bundle per device of `userId`, each claiming one one-time key. Counted against the caller's
 * window first (a refused or unreachable fetch counts too, so probing costs the same). Someone
 * the caller may not reach is answered like an unknown user. A claim that leaves a device with few
 * one-time keys is announced (`social.keys.low`) so that the owner's clients top up: at most
 * ONE_TIME_KEYS_LOW announcements per stock, since a claim that finds none left says nothing new.
 */
export async function fetchBundles(deps: KeysDeps, ctx: RequestContext, userId: string): Promise<KeyBundle[]> {
  const now = deps.clock();
  const check = await countFetchAndReach(deps.pool, ctx.userId, userId, now, deps.limits.bundleWindowMs);
  if (check.fetches > deps.limits.bundleFetches) {
    const retryAfterMs = check.windowStartedAt.getTime() + deps.limits.bundleWindowMs - now.getTime();
    throw tooManyRequests(retryAfterMs / 1000, 'Too many key bundle fetches, try again later');
  }
  if (!(await mayReach(deps, ctx, userId, check))) throw notFound('User');
  return withTx(deps.pool, async (tx) => {
    const claimed = await claimBundles(tx, userId);
    const low = claimed.filter((b) => b.oneTimeKey !== null && b.remaining < deps.limits.lowOneTimeKeys);
    if (low.length) {
      const devices = low.map((b) => ({ deviceId: b.deviceId, remaining: b.remaining }));
      await enqueueEvent(tx, KEYS_SUBJECTS.keysLow, { userId, devices }, ctx.requestId);
    }
    return claimed.map(({ remaining: _remaining, ...bundle }) => bundle);
  });
}

/**
 * Oneself, friends, people in a conversation with the caller, and people who share a server with
 * the caller (one question to guilds, only when the first two do not settle it); never across a
 * block.
 */
async function mayReach(
  deps: KeysDeps,
  ctx: RequestContext,
  userId: string,
  reach: { blocked: boolean; close: boolean },
): Promise<boolean> {
  if (userId === ctx.userId) return true;
  if (reach.blocked) return false;
  if (reach.close) return true;
  const reply = await requestRpc(deps.bus, SharedServersRpc, { userId: ctx.userId, otherUserIds: [userId] }, { requestId: ctx.requestId });
  return reply.sharing.includes(userId);
}

async function announceKeys(tx: Parameters<typeof enqueueEvent>[0], ctx: RequestContext, change: Omit<KeysChangedEvent, 'userId'>) {
  const data: KeysChangedEvent = { userId: ctx.userId, ...change };
  await enqueueEvent(tx, KEYS_SUBJECTS.keysChanged, data, ctx.requestId);
}
