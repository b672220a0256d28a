import { baseConfig, databaseConfig, env, tokenConfig } from '@chat/kit';
import type { z } from 'zod';

export const MusicConfig = baseConfig
  .extend(databaseConfig.shape)
  .extend(tokenConfig.shape)
  .extend({
    PORT: env.port(3005),
    DATABASE_URL: databaseConfig.shape.DATABASE_URL.default('postgres://postgres@127.0.0.1:5432/music'),
  });

export type MusicConfig = z.output<typeof MusicConfig>;
