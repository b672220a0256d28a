import Fastify, { type FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clientIpCycle } from '../../scripts/bench/client-ips.ts';
import { measure } from '../../scripts/bench/load.ts';
import { loadScenarios, selectScenarios } from '../../scripts/bench/registry.ts';
import { formatTable, type Measurement } from '../../scripts/bench/report.ts';
import type { Scenario } from '../../scripts/bench/scenario.ts';

describe('clientIpCycle', () => {
  it('gives a different address to each request until the pool wraps around', () => {
    const next = clientIpCycle(70_000);
    const seen = Array.from({ length: 70_000 }, next);
    expect(new Set(seen).size).toBe(70_000);
    expect(seen.slice(0, 2)).toEqual(['10.0.0.0', '10.0.0.1']);
    expect(seen[65_536]).toBe('10.1.0.0');
    expect(next()).toBe('10.0.0.0');
  });

  it('refuses a pool that does not fit in 10.0.0.0/8', () => {
    expect(() => clientIpCycle(0)).toThrow(/not in 1\.\.2\^24/);
    expect(() => clientIpCycle(2 ** 24 + 1)).toThrow(/not in 1\.\.2\^24/);
  });
});

describe('measure', () => {
  let server: FastifyInstance;
  let url: string;
  const forwardedFor: string[] = [];

  beforeAll(async () => {
    server = Fastify();
    server.get('/ok', async (req) => {
      forwardedFor.push(String(req.headers['x-forwarded-for']));
      return { ok: true };
    });
    server.post('/echo', async (req, reply) => reply.code(201).send({ got: req.body, type: req.headers['content-type'] }));
    url = await server.listen({ host: '127.0.0.1', port: 0 });
  });
  afterAll(() => server.close());

  it('sends every request from its own client IP and counts every answer', async () => {
    const figures = await measure(
      url,
      { requests: [{ method: 'GET', path: '/ok' }] },
      { connections: 4, durationSeconds: 1, warmupSeconds: 0, nextClientIp: clientIpCycle(1_000_000) },
    );
    expect(figures.requests).toBeGreaterThan(50);
    // Requests still in flight when the run stops reach the server but are not counted: one per connection at most.
    expect(forwardedFor.length - figures.requests).toBeGreaterThanOrEqual(0);
    expect(forwardedFor.length - figures.requests).toBeLessThanOrEqual(4);
    expect(new Set(forwardedFor).size).toBe(forwardedFor.length);
    expect(figures).toMatchObject({ unexpected: 0, errors: 0, statuses: { 200: figures.requests } });
    expect(figures.requestsPerSecond).toBeGreaterThan(0);
    expect(figures.p99).toBeGreaterThanOrEqual(figures.p50);
  });

  it('sends a JSON body and counts answers with another status than the expected one', async () => {
    const settings = { connections: 2, durationSeconds: 1, warmupSeconds: 0, nextClientIp: clientIpCycle(10) };
    const posted = await measure(url, { requests: [{ method: 'POST', path: '/echo', body: { a: 1 } }], expectStatus: 201 }, settings);
    expect(posted.unexpected).toBe(0);
    expect(posted.statuses).toEqual({ 201: posted.requests });

    const missing = await measure(url, { requests: [{ method: 'GET', path: '/nowhere' }] }, settings);
    expect(missing.requests).toBeGreaterThan(0);
    expect(missing.unexpected).toBe(missing.requests);
    expect(missing.statuses).toEqual({ 404: missing.requests });
  });
});

describe('the scenario registry', () => {
  it('finds the scenarios of every file in scenarios/, each named once', async () => {
    const names = (await loadScenarios()).map((s) => s.name);
    expect(names).toEqual(expect.arrayContaining(['gateway.health', 'auth.jwks']));
    expect(new Set(names).size).toBe(names.length);
  });

  it('selects by name or by prefix, and refuses a filter that matches nothing', () => {
    const setup: Scenario['setup'] = async () => ({ requests: [] });
    const all = ['users.me', 'users.patch', 'messages.post'].map((name) => ({ name, summary: name, setup }));
    expect(selectScenarios(all, []).map((s) => s.name)).toEqual(['users.me', 'users.patch', 'messages.post']);
    expect(selectScenarios(all, ['users.']).map((s) => s.name)).toEqual(['users.me', 'users.patch']);
    expect(selectScenarios(all, ['messages.post']).map((s) => s.name)).toEqual(['messages.post']);
    expect(() => selectScenarios(all, ['users.m'])).toThrow(/no scenario matches users\.m/);
  });
});

describe('the printed table', () => {
  const figures = (rps: number, statuses: Record<string, number> = { 200: rps }) => ({
    requestsPerSecond: rps,
    p50: 2,
    p99: 9,
    requests: rps,
    unexpected: rps - (statuses['200'] ?? 0),
    errors: 0,
    statuses,
  });
  const row = (via: string, rps: number, extra: Partial<Measurement> = {}): Measurement => ({
    scenario: 'auth.jwks',
    summary: '',
    via,
    connections: 64,
    figures: figures(rps),
    baseline: figures(10_000),
    ratioToBaseline: rps / 10_000,
    ...extra,
  });

  it('shows each row with its baseline, both ratios, and what went wrong', () => {
    const table = formatTable({
      startedAt: '2024-01-01T00:00:00.000Z',
      machine: { node: 'v20', platform: 'linux-x64', cpus: 2, cpuModel: 'x', loadAverage: 0.5 },
      settings: { durationSeconds: 10, warmupSeconds: 2, connections: 64, clientIpPool: 65_536, logLevel: 'warn', nodeEnv: 'production' },
      measurements: [row('gateway', 3_000, { ratioToDirect: 0.5, figures: figures(3_000, { 200: 2_990, 429: 10 }) }), row('auth', 6_000)],
      notRun: [{ scenario: 'users.me', reason: 'not built yet', failed: false }],
    });
    const lines = table.split('\n');
    expect(lines[2]).toMatch(/^auth\.jwks\s+gateway\s+64\s+3000\s+2\s+9\s+10000\s+2\s+9\s+0\.300\s+0\.500\s+10 \(200: 2990, 429: 10\)$/);
    expect(lines[3]).toMatch(/^auth\.jwks\s+auth\s+64\s+6000 .* 0\.600\s+0$/);
    expect(table).toContain('skipped users.me: not built yet');
    expect(table).toContain('load average 0.5 at the start');
  });
});
