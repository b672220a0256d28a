import { baseConfig, databaseConfig, env, mediaGrantConfig, tokenConfig } from '@chat/kit';
import { z } from 'zod';

export const SocialConfig = baseConfig
  .extend(databaseConfig.shape)
  .extend(tokenConfig.shape)
  .extend(mediaGrantConfig.shape)
  .extend({
    PORT: env.port(3003),
    DATABASE_URL: databaseConfig.shape.DATABASE_URL.default('postgres://postgres@127.0.0.1:5432/social'),
    /** Key bundle fetches one caller may make per window (each claims one-time keys of another user). */
    KEY_BUNDLE_FETCH_LIMIT: env.int(30, 1),
    KEY_BUNDLE_FETCH_WINDOW_SECONDS: env.int(60, 1),
    /** A claim that leaves a device with fewer one-time keys than this publishes social.keys.low. */
    ONE_TIME_KEYS_LOW: env.int(10),
    /** How long a call rings before it ends as missed. */
    CALL_RING_TIMEOUT_SECONDS: env.int(30).pipe(z.number().int().min(1).max(600)),
  });

export type SocialConfig = z.output<typeof SocialConfig>;
