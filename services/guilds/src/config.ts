import { baseConfig, databaseConfig, env, mediaGrantConfig, tokenConfig } from '@chat/kit';
import { z } from 'zod';

export const GuildsConfig = baseConfig
  .extend(databaseConfig.shape)
  .extend(tokenConfig.shape)
  .extend(mediaGrantConfig.shape)
  .extend({
    PORT: env.port(3002),
    DATABASE_URL: databaseConfig.shape.DATABASE_URL.default('postgres://postgres@127.0.0.1:5432/guilds'),
    /** A voice state without a heartbeat for this long ends (a crashed client leaves its channel). */
    VOICE_STATE_TTL_SECONDS: env.int(60).pipe(z.number().min(1).max(3600)),
  });

export type GuildsConfig = z.output<typeof GuildsConfig>;
