import { ConfigError, loadConfig } from '@chat/kit';
import type { ServiceProcess } from '@chat/testkit';
import type { z } from 'zod';
import { AuthConfig } from '../../services/auth/src/config.ts';
import { GatewayConfig } from '../../services/gateway/src/config.ts';
import { GuildsConfig } from '../../services/guilds/src/config.ts';
import { MediaConfig } from '../../services/media/src/config.ts';
import { MusicConfig } from '../../services/music/src/config.ts';
import { SocialConfig } from '../../services/social/src/config.ts';

/** The config schema of every process: deployment files are checked against these, so they cannot drift. */
export const CONFIG_SCHEMAS: Record<ServiceProcess, z.ZodObject> = {
  gateway: GatewayConfig,
  auth: AuthConfig,
  guilds: GuildsConfig,
  social: SocialConfig,
  media: MediaConfig,
  music: MusicConfig,
};

export const PROCESSES = Object.keys(CONFIG_SCHEMAS) as ServiceProcess[];

/** Keys a process cannot start without: those whose schema rejects an absent value (no default, not optional). */
export function requiredKeys(schema: z.ZodObject): string[] {
  return Object.entries(schema.shape)
    .filter(([, field]) => !(field as z.ZodType).safeParse(undefined).success)
    .map(([key]) => key);
}

/**
 * What is wrong with an environment given to a process by a deployment file: a required key
 * missing, a key the schema does not know (a typo, or a variable that was renamed), or a value the
 * schema rejects. Empty when the process would start with it.
 */
export function envProblems(schema: z.ZodObject, env: Record<string, string>): string[] {
  const missing = requiredKeys(schema).filter((key) => !(key in env));
  const unknown = Object.keys(env).filter((key) => !(key in schema.shape));
  const problems = [
    ...missing.map((key) => `${key}: required but not given`),
    ...unknown.map((key) => `${key}: not a variable of this process`),
  ];
  try {
    loadConfig(schema, env);
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    // A missing key is already reported above; keep the schema's word on the values that were given.
    problems.push(...err.problems.filter((problem) => !missing.includes(problem.split(':')[0]!)));
  }
  return problems;
}

/** Deployment files may write numbers and booleans; a process always receives strings. */
export function stringValues(env: Record<string, unknown> | undefined): Record<string, string> {
  return Object.fromEntries(Object.entries(env ?? {}).map(([key, value]) => [key, String(value)]));
}
