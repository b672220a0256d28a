import { baseConfig, databaseConfig, env, tokenConfig } from '@chat/kit';
import type { z } from 'zod';

export const AuthConfig = baseConfig
  .extend(databaseConfig.shape)
  .extend(tokenConfig.shape)
  .extend({
    PORT: env.port(3001),
    DATABASE_URL: databaseConfig.shape.DATABASE_URL.default('postgres://postgres@127.0.0.1:5432/auth'),
  });

export type AuthConfig = z.output<typeof AuthConfig>;
