import { keysRoutes as r } from '@chat/contracts';
import { contextOf, route } from '@chat/kit';
import type { FastifyInstance } from 'fastify';
import type { SocialDeps } from '../deps.ts';
import { fetchBundles, type KeysDeps, keyCounts, putDevice, removeDevice, uploadOneTimeKeys } from '../domain/keys.ts';

export function keysRoutes(app: FastifyInstance, deps: SocialDeps): void {
  const keys: KeysDeps = {
    pool: deps.pool,
    bus: deps.bus,
    clock: deps.clock ?? (() => new Date()),
    limits: {
      bundleFetches: deps.config.KEY_BUNDLE_FETCH_LIMIT,
      bundleWindowMs: deps.config.KEY_BUNDLE_FETCH_WINDOW_SECONDS * 1000,
      lowOneTimeKeys: deps.config.ONE_TIME_KEYS_LOW,
    },
  };
  route(app, r.putDevice, async (req, reply) => {
    const { device, created } = await putDevice(keys, contextOf(req), req.params.deviceId, req.body);
    if (created) reply.code(201);
    return device;
  });
  route(app, r.uploadOneTimeKeys, (req) => uploadOneTimeKeys(keys, contextOf(req), req.params.deviceId, req.body));
  route(app, r.counts, (req) => keyCounts(keys, contextOf(req)));
  route(app, r.deleteDevice, (req) => removeDevice(keys, contextOf(req), req.params.deviceId).then(() => undefined));
  route(app, r.claimBundles, (req) => fetchBundles(keys, contextOf(req), req.params.userId));
}
