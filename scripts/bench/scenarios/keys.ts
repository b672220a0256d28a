import { Buffer } from 'node:buffer';
import { generateKeyPairSync, type KeyObject, sign } from 'node:crypto';
import { defineScenario } from '../scenario.ts';

const rawPublic = (key: KeyObject): Buffer => Buffer.from(key.export({ format: 'jwk' }).x as string, 'base64url');

/** A device's keys as a client makes them: an Ed25519 identity signing an X25519 prekey. */
function deviceKeys() {
  const identity = generateKeyPairSync('ed25519');
  const prekey = rawPublic(generateKeyPairSync('x25519').publicKey);
  return {
    identityKey: rawPublic(identity.publicKey).toString('base64'),
    signedPreKey: { keyId: 1, publicKey: prekey.toString('base64'), signature: sign(null, prekey, identity.privateKey).toString('base64') },
  };
}

/**
 * Pairs of a caller and a user whose bundle it claims, each target with one device holding the most
 * one-time keys allowed. Many callers, as in real use: one caller's fetches share its rate window row.
 */
const PAIRS = 40;
const KEYS_PER_DEVICE = 500;

/**
 * A claim is one transaction: the reach check (one SQL query: blocks, friendship, shared
 * conversation), the per-caller fetch window, and DELETE ... RETURNING of one one-time key picked
 * with FOR UPDATE SKIP LOCKED. The load cycles over 40 pairs (20,000 keys); once a user's keys are
 * gone, claims answer bundles without one (still 200), so the end of a long run measures that path.
 */
export const keysClaim = defineScenario({
  name: 'keys.claim',
  summary: `GET /v1/keys/users/{id}: ${PAIRS} callers each claim a bundle (one one-time key) of their own contact, in turn, through the gateway and straight to social`,
  direct: 'social',
  setup: async (ctx) => {
    const callers = await Promise.all(Array.from({ length: PAIRS }, () => ctx.registerUser('claimer')));
    const targets = await Promise.all(Array.from({ length: PAIRS }, () => ctx.registerUser('keyholder')));
    for (const [index, target] of targets.entries()) {
      const caller = callers[index] as (typeof callers)[number];
      const device = await ctx.api('PUT', '/v1/keys/devices/bench', { token: target.token, body: deviceKeys() });
      if (device.status === 404) return { skip: 'PUT /v1/keys/devices answered 404' };
      if (device.status !== 201) throw new Error(`PUT /v1/keys/devices answered ${device.status}`);
      for (let from = 0; from < KEYS_PER_DEVICE; from += 100) {
        const keys = Array.from({ length: 100 }, (_, i) => ({
          keyId: from + i,
          publicKey: rawPublic(generateKeyPairSync('x25519').publicKey).toString('base64'),
        }));
        const upload = await ctx.api('POST', '/v1/keys/devices/bench/one-time-keys', { token: target.token, body: { keys } });
        if (upload.status !== 200) throw new Error(`POST one-time-keys answered ${upload.status}`);
      }
      // A shared conversation lets the caller fetch; social learns of new users from auth's events.
      let conversation = await ctx.api('POST', '/v1/dm/conversations', { token: caller.token, body: { userIds: [target.id] } });
      for (let tries = 0; conversation.status === 404 && tries < 50; tries++) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        conversation = await ctx.api('POST', '/v1/dm/conversations', { token: caller.token, body: { userIds: [target.id] } });
      }
      if (conversation.status !== 201 && conversation.status !== 200)
        throw new Error(`POST /v1/dm/conversations answered ${conversation.status}`);
    }
    return {
      requests: targets.map((target, index) => ({
        method: 'GET' as const,
        path: `/v1/keys/users/${target.id}`,
        headers: { authorization: `Bearer ${callers[index]?.token}` },
      })),
    };
  },
});
