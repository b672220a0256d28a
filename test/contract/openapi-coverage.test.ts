import { ALL_ROUTES, buildOpenApi, ROUTE_PREFIXES, STREAMS } from '@chat/contracts';
import { loadConfig } from '@chat/kit';
import { createTestIssuer, createTestRuntime } from '@chat/testkit';
import type { FastifyInstance } from 'fastify';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { startAuth } from '../../services/auth/test/helpers.ts';
import { startGateway } from '../../services/gateway/test/helpers.ts';
import { startGuilds } from '../../services/guilds/test/harness.ts';
import { createMediaHarness } from '../../services/media/test/harness.ts';
import { startMusicTest } from '../../services/music/test/harness.ts';
import { buildApp as buildSocialApp } from '../../services/social/src/app.ts';
import { SocialConfig } from '../../services/social/src/config.ts';

/**
 * Every route an app registers under /v1 must be an operation of the OpenAPI document, with its
 * schemas: a route added without a contract (app.get(...) instead of route(...)) fails here.
 * Each app is built the way its own tests build it, so the test sees whatever routes exist today.
 */
interface Built {
  app: FastifyInstance;
  close(): Promise<unknown>;
}

async function closeAll(...parts: { close(): Promise<unknown> }[]): Promise<void> {
  for (const part of parts) await part.close();
}

async function buildSocial(): Promise<Built> {
  const runtime = await createTestRuntime({
    service: 'social',
    migrationsDir: new URL('../../services/social/migrations', import.meta.url).pathname,
    stream: STREAMS.social,
    backing: inject('backing'),
  });
  const issuer = await createTestIssuer();
  const tokens = issuer.verifier();
  const app = await buildSocialApp({ ...runtime, config: loadConfig(SocialConfig, runtime.env), tokens });
  return { app, close: () => closeAll(app, runtime) };
}

const BUILDERS: Record<string, () => Promise<Built>> = {
  auth: async () => {
    const auth = await startAuth();
    return { app: auth.app, close: () => closeAll(auth.app, auth.runtime) };
  },
  guilds: startGuilds,
  social: buildSocial,
  media: createMediaHarness,
  music: startMusicTest,
  gateway: async () => startGateway({ upstreamUrl: 'http://127.0.0.1:1', keys: (await createTestIssuer()).keys }),
};

const document = buildOpenApi(ALL_ROUTES, { title: 'coverage', version: '0' }) as {
  paths: Record<string, Record<string, Operation>>;
};

interface Operation {
  requestBody?: { content: Record<string, { schema?: unknown }> };
  responses: Record<string, { content?: Record<string, { schema?: unknown }> }>;
}

const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH']);
/** The gateway's proxy routes: wildcards that forward a whole prefix, documented by the services' routes. */
const isProxyRoute = (path: string) => path.endsWith('/*') || Object.hasOwn(ROUTE_PREFIXES, path);
const openApiPath = (path: string) => path.replace(/:([A-Za-z0-9_]+)/g, '{$1}');

/** What is wrong with how one registered route is documented; empty when nothing is. */
function coverageProblems(app: FastifyInstance, method: string, path: string): string[] {
  const operation = document.paths[openApiPath(path)]?.[method.toLowerCase()];
  if (!operation) return [`${method} ${path}: no operation in the OpenAPI document`];
  const contract = app.contracts.find((c) => c.method === method && c.path === path);
  if (!contract) return [`${method} ${path}: registered without route(), so nothing validates it against the document`];
  const problems: string[] = [];
  const success = operation.responses[String(contract.status)];
  if (contract.status !== 204 && contract.response !== null && !success?.content?.['application/json']?.schema) {
    problems.push(`${method} ${path}: no response schema for ${contract.status}`);
  }
  // 204 and a WebSocket's 101 carry no body; the docs page is HTML.
  if (contract.response === null && contract.status !== 204 && contract.status !== 101 && contract.path !== '/v1/docs') {
    problems.push(`${method} ${path}: answers ${contract.status} without a response schema`);
  }
  const hasBodySchema = Object.values(operation.requestBody?.content ?? {}).some((media) => media.schema);
  if (BODY_METHODS.has(method) && contract.body && !hasBodySchema) problems.push(`${method} ${path}: no request body schema`);
  if (BODY_METHODS.has(method) && !contract.body && !contract.multipart && operation.requestBody) {
    problems.push(`${method} ${path}: documents a body it does not validate`);
  }
  return problems;
}

describe('OpenAPI coverage', () => {
  const built: Built[] = [];
  afterAll(async () => {
    for (const b of built) await b.close().catch(() => {});
  });

  it.each(Object.keys(BUILDERS))('documents every /v1 route the %s app registers', async (service) => {
    const b = await (BUILDERS[service] as () => Promise<Built>)();
    built.push(b);
    await b.app.ready();
    const routes = b.app.registeredRoutes.filter((r) => r.path.startsWith('/v1') && !isProxyRoute(r.path));
    const problems = routes.flatMap((r) => coverageProblems(b.app, r.method, r.path));
    expect(problems).toEqual([]);
    // The gateway's own routes must be there: proves the collector sees what the app registers.
    if (service === 'gateway') expect(routes.map((r) => `${r.method} ${r.path}`)).toContain('GET /v1/health');
  });

  it('fails for a route registered without a contract', async () => {
    const { createHttpApp, createLogger } = await import('@chat/kit');
    const app = createHttpApp({ log: createLogger({ service: 'coverage', level: 'silent' }) });
    app.get('/v1/undocumented', async () => ({}));
    app.post('/v1/health', async () => ({}));
    await app.ready();
    const problems = app.registeredRoutes.flatMap((r) => coverageProblems(app, r.method, r.path));
    expect(problems).toEqual([
      'GET /v1/undocumented: no operation in the OpenAPI document',
      'POST /v1/health: no operation in the OpenAPI document',
    ]);
    await app.close();
  });
});
