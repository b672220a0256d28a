import { describe, expect, inject, it } from 'vitest';

const { urls } = inject('platform');
const gateway = urls.gateway;

describe('gateway edge', () => {
  it('reports every service ready on /v1/health without a token', async () => {
    const res = await fetch(`${gateway}/v1/health`);
    const body = (await res.json()) as { status: string; services: Record<string, { status: string }> };
    expect(res.status).toBe(200);
    expect(body.status).toBe('ok');
    expect(Object.keys(body.services).sort()).toEqual(['auth', 'gateway', 'guilds', 'media', 'music', 'social']);
    for (const service of Object.values(body.services)) expect(service.status).toBe('ready');
  });

  it('answers an unknown path with 404 and an error body', async () => {
    const res = await fetch(`${gateway}/v1/nothing-here`);
    expect(res.status).toBe(404);
    expect(await res.json()).toEqual({ error: expect.any(String) });
  });

  it('answers a wrong method on a known path with 405 and an error body', async () => {
    const res = await fetch(`${gateway}/v1/health`, { method: 'DELETE' });
    expect(res.status).toBe(405);
    expect(await res.json()).toEqual({ error: expect.stringContaining('not allowed') });
  });

  it('carries a request id through to the answer, and accepts the client one', async () => {
    const mine = 'req-e2e-12345';
    const res = await fetch(`${gateway}/v1/health`, { headers: { 'x-request-id': mine } });
    expect(res.headers.get('x-request-id')).toBe(mine);
    const generated = await fetch(`${gateway}/v1/health`);
    expect(generated.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('serves the OpenAPI document and the reference page', async () => {
    const doc = (await (await fetch(`${gateway}/v1/openapi.json`)).json()) as { openapi: string; paths: Record<string, unknown> };
    expect(doc.openapi).toBe('3.1.0');
    expect(doc.paths['/v1/health']).toBeDefined();
    const page = await fetch(`${gateway}/v1/docs`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toContain('text/html');
    expect(await page.text()).toContain('/v1/health');
  });
});
