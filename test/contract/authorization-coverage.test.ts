import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ALL_ROUTES } from '@chat/contracts';
import { type RouteKey, routeKey } from '@chat/testkit';
import { describe, expect, it } from 'vitest';

/**
 * Every route of the contracts has at least one row in an authorization matrix (a test file named
 * `authorization*.test.ts` under a service's test/ or test/e2e/, whose rows name their route as
 * `route: 'METHOD /v1/path'`), so a new route cannot ship without its matrix row. Only public routes
 * may be left out, each with its reason here.
 */
const ROOT = new URL('../..', import.meta.url).pathname;
const PUBLIC_WITHOUT_ROW: Partial<Record<RouteKey, string>> = {
  'POST /v1/auth/register': 'an account flow for someone without an account: nothing of anyone to guard (services/auth/test)',
  'POST /v1/auth/verify-email': 'an account flow keyed by the pending registration and its code (services/auth/test)',
  'POST /v1/auth/resend-code': 'an account flow keyed by the pending registration (services/auth/test)',
  'POST /v1/auth/login': 'the credentials are the authorization (services/auth/test)',
  'POST /v1/auth/refresh': 'the refresh token is the authorization; the logout row of the accounts matrix checks refreshes',
  'POST /v1/auth/forgot-password': 'answers 202 whoever asks, telling nothing (services/auth/test)',
  'POST /v1/auth/reset-password': 'the emailed code is the authorization (services/auth/test/reset-attempts.test.ts)',
  'GET /v1/gateway/ws': 'a WebSocket upgrade that authenticates in its IDENTIFY frame (test/e2e/realtime.test.ts)',
};

async function matrixFiles(): Promise<string[]> {
  const dirs = [...(await readdir(join(ROOT, 'services'))).map((s) => join(ROOT, 'services', s, 'test')), join(ROOT, 'test', 'e2e')];
  const files: string[] = [];
  for (const dir of dirs) {
    const names = await readdir(dir).catch(() => []);
    files.push(...names.filter((n) => /^authorization.*\.test\.ts$/.test(n)).map((n) => join(dir, n)));
  }
  return files;
}

async function routesWithRows(): Promise<Set<string>> {
  const covered = new Set<string>();
  for (const file of await matrixFiles()) {
    for (const match of (await readFile(file, 'utf8')).matchAll(/route: '((?:GET|POST|PUT|PATCH|DELETE) \/v1\/[^']*)'/g))
      covered.add(match[1]!);
  }
  return covered;
}

describe('the authorization matrices', () => {
  it('have a row for every route of the contracts but the public ones named here', async () => {
    const covered = await routesWithRows();
    const missing = ALL_ROUTES.map(routeKey).filter((key) => !covered.has(key) && !(key in PUBLIC_WITHOUT_ROW));
    expect(missing).toEqual([]);
  });

  it('name only routes that exist', async () => {
    const known = new Set<string>(ALL_ROUTES.map(routeKey));
    expect([...(await routesWithRows())].filter((key) => !known.has(key))).toEqual([]);
  });

  it('leave out only public routes, each without a row', async () => {
    const covered = await routesWithRows();
    for (const key of Object.keys(PUBLIC_WITHOUT_ROW)) {
      const route = ALL_ROUTES.find((r) => routeKey(r) === key);
      expect({ key, exists: Boolean(route), public: route?.auth === false, hasRow: covered.has(key) }).toEqual({
        key,
        exists: true,
        public: true,
        hasRow: false,
      });
    }
  });
});
