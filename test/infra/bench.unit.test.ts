import Fastify, { type FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clientIpCycle } from '../../scripts/bench/client-ips.ts';
import { measure } from '../../scripts/bench/load.ts';
import { closedLoop } from '../../scripts/bench/references.ts';
import { loadScenarios, selectScenarios } from '../../scripts/bench/registry.ts';
import { type BenchReport, formatReferences, formatTable, type Measurement } from '../../scripts/bench/report.ts';
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

  const report = (measurements: Measurement[], extra: Partial<BenchReport> = {}): BenchReport => ({
    startedAt: '2024-01-01T00:00:00.000Z',
    machine: { node: 'v20', platform: 'linux-x64', cpus: 2, cpuModel: 'x', loadAverage: 0.5 },
    settings: { durationSeconds: 10, warmupSeconds: 2, connections: 64, clientIpPool: 65_536, logLevel: 'warn', nodeEnv: 'production' },
    measurements,
    references: [],
    notRun: [],
    ...extra,
  });

  it('shows each row with its baseline, both ratios, and what went wrong', () => {
    const table = formatTable(
      report([row('gateway', 3_000, { ratioToDirect: 0.5, figures: figures(3_000, { 200: 2_990, 429: 10 }) }), row('auth', 6_000)], {
        notRun: [{ scenario: 'users.me', reason: 'not built yet', failed: false }],
      }),
    );
    const lines = table.split('\n');
    expect(lines[2]).toMatch(/^auth\.jwks\s+gateway\s+64\s+3000\s+2\s+9\s+10000\s+2\s+9\s+0\.300\s+0\.500\s+10 \(200: 2990, 429: 10\)$/);
    expect(lines[3]).toMatch(/^auth\.jwks\s+auth\s+64\s+6000 .* 0\.600\s+0$/);
    expect(table).toContain('skipped users.me: not built yet');
    expect(table).toContain('load average 0.5 at the start');
  });

  it('shows MiB/s for uploads and each row over its reference, listed below the table', () => {
    const upload = (via: string, rps: number) =>
      row(via, rps, {
        scenario: 'media.upload.1mib',
        connections: 4,
        bytesPerRequest: 1024 * 1024,
        reference: 'put',
        ratioToReference: rps / 80,
      });
    const r = report([upload('gateway', 40), upload('media', 60)], {
      references: [
        {
          name: 'put',
          summary: 'raw put',
          unit: 'puts',
          bytesPerOperation: 1024 * 1024,
          connections: 4,
          figures: { perSecond: 80, p50: 40, p99: 90, operations: 800 },
        },
      ],
    });
    expect(formatTable(r).split('\n')[2]).toMatch(/^media\.upload\.1mib\s+gateway\s+4\s+40 .*\s+40\.0\s+0\.500\s+0$/);
    expect(formatReferences(r).split('\n')).toEqual([
      'reference put, 4 callers: 80 puts/s = 80.0 MiB/s, p50 40 ms, p99 90 ms (raw put)',
      '    media.upload.1mib via gateway: 40 req/s = 0.500 x reference',
      '    media.upload.1mib via media: 60 req/s = 0.750 x reference',
    ]);
  });
});

describe('closedLoop', () => {
  it('keeps every caller busy for the duration and reports what completed', async () => {
    let inFlight = 0;
    let mostInFlight = 0;
    const figures = await closedLoop(3, 0.5, async () => {
      mostInFlight = Math.max(mostInFlight, ++inFlight);
      await new Promise((r) => setTimeout(r, 10));
      inFlight--;
    });
    expect(mostInFlight).toBe(3);
    // 3 callers x 500 ms / ~10 ms each, less timer slack.
    expect(figures.operations).toBeGreaterThan(60);
    expect(figures.operations).toBeLessThanOrEqual(150);
    expect(figures.perSecond).toBe(figures.operations * 2);
    expect(figures.p50).toBeGreaterThanOrEqual(9);
    expect(figures.p99).toBeGreaterThanOrEqual(figures.p50);
  });
});
