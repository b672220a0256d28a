import { resolveBacking, type ServiceProcess, startIsolatedPlatform } from '@chat/testkit';
import type { TestProject } from 'vitest/node';

declare module 'vitest' {
  export interface ProvidedContext {
    platform: { urls: Record<ServiceProcess, string>; namespace: string; logDir: string };
  }
}

/** media's MEDIA_QUOTA_FILES_PER_HOUR in the end-to-end platform. */
export const E2E_UPLOADS_PER_HOUR = 10;

/**
 * Settings the end-to-end tests rely on: a trusted proxy so tests can pick their client IP,
 * registration without email verification (newUser() expects 201 with a token pair), an hourly
 * upload quota small enough that the quota test passes it with a handful of uploads (every test
 * user is new, and none uploads more than a few files), and link previews allowed to fetch from
 * 127.0.0.1 (the tests' own page server, and nowhere else).
 */
export const E2E_ENV: Partial<Record<ServiceProcess, Record<string, string>>> = {
  gateway: { TRUSTED_PROXIES: '127.0.0.1,::1' },
  auth: { EMAIL_VERIFICATION: 'false', SERVER_OWNER_BADGE_MEMBERS: '2' },
  media: { MEDIA_QUOTA_FILES_PER_HOUR: String(E2E_UPLOADS_PER_HOUR), LINK_PREVIEW_ALLOWLIST: '127.0.0.1' },
};

/** The platform of the whole end-to-end run (see startIsolatedPlatform). */
export default async function setup(project: TestProject) {
  const { backing } = await resolveBacking();
  const run = await startIsolatedPlatform({
    backing,
    label: 'e2e',
    baseEnv: { PATH: process.env.PATH, HOME: process.env.HOME, NODE_ENV: 'test', LOG_LEVEL: process.env.E2E_LOG_LEVEL ?? 'info' },
    extraEnv: E2E_ENV,
  });
  project.provide('platform', { urls: run.platform.urls, namespace: run.namespace, logDir: run.logDir });
  return run.stop;
}
