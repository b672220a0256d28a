import { defineRoute } from '@chat/contracts';
import { ROOT_CONTEXT } from '@opentelemetry/api';
import { InMemorySpanExporter } from '@opentelemetry/sdk-trace';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createHttpApp, requestHeaders, route, SpanKind, startSpan, startTracing, stopTracing, traceHeaders } from '../src/index.ts';
import { contextWithSpan, extractContext, inSpan, tracingEnabled } from '../src/tracing.ts';

const ping = defineRoute({
  method: 'GET',
  path: '/v1/ping',
  service: 'auth',
  summary: 'ping',
  auth: false,
  status: 200,
  response: z.object({ traceparent: z.string() }),
});

const executeWebhook = defineRoute({
  method: 'POST',
  path: '/v1/webhooks/:id/:token',
  service: 'guilds',
  summary: 'execute a webhook',
  auth: false,
  status: 204,
  response: z.undefined(),
});

afterEach(() => stopTracing());

describe('tracing', () => {
  it('is off without an endpoint: no spans, and no trace headers read or sent', async () => {
    startTracing({ service: 'test' });
    expect(tracingEnabled()).toBe(false);
    expect(startSpan('x', { kind: SpanKind.INTERNAL })).toBeUndefined();
    expect(traceHeaders()).toEqual({});
    expect(extractContext({ traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' })).toBe(ROOT_CONTEXT);
    expect(requestHeaders('r1').keys()).toEqual(['x-request-id']);
  });

  it('chains a request span, a span inside its handler and a span in another process through traceparent', async () => {
    const exporter = new InMemorySpanExporter();
    startTracing({ service: 'test', exporter });
    const app = createHttpApp({ log: pino({ level: 'silent' }) });
    route(app, ping, async () =>
      inSpan('rpc out', { kind: SpanKind.CLIENT }, async (span) => ({ traceparent: traceHeaders(contextWithSpan(span)).traceparent! })),
    );
    const caller = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
    const res = await app.inject({ method: 'GET', url: '/v1/ping', headers: { traceparent: caller } });
    expect(res.statusCode).toBe(200);
    // What "another process" receives: it continues from the handler's span.
    const remote = startSpan('rpc in', { kind: SpanKind.SERVER, parent: extractContext({ traceparent: res.json().traceparent }) })!;
    remote.end();

    const spans = exporter.getFinishedSpans();
    const byName = Object.fromEntries(spans.map((s) => [s.name, s]));
    expect(Object.keys(byName).sort()).toEqual(['GET /v1/ping', 'rpc in', 'rpc out']);
    const server = byName['GET /v1/ping']!;
    expect(server.spanContext().traceId).toBe('0af7651916cd43dd8448eb211c80319c');
    expect(server.parentSpanContext?.spanId).toBe('b7ad6b7169203331');
    expect(byName['rpc out']!.parentSpanContext?.spanId).toBe(server.spanContext().spanId);
    expect(byName['rpc in']!.parentSpanContext?.spanId).toBe(byName['rpc out']!.spanContext().spanId);
    expect(new Set(spans.map((s) => s.spanContext().traceId))).toEqual(new Set(['0af7651916cd43dd8448eb211c80319c']));
    expect(server.attributes['http.response.status_code']).toBe(200);
  });

  it('never exports a secret of the path: a webhook token is redacted in the span as in the logs', async () => {
    const exporter = new InMemorySpanExporter();
    startTracing({ service: 'test', exporter });
    const app = createHttpApp({ log: pino({ level: 'silent' }) });
    route(app, executeWebhook, async () => undefined);
    const res = await app.inject({ method: 'POST', url: '/v1/webhooks/0190f2a0-0000-7000-8000-000000000001/s3cret-token?wait=true' });
    expect(res.statusCode).toBe(204);

    const [span] = exporter.getFinishedSpans();
    expect(span?.name).toBe('POST /v1/webhooks/:id/:token');
    expect(span?.attributes['url.path']).toBe('/v1/webhooks/0190f2a0-0000-7000-8000-000000000001/[redacted]');
    expect(JSON.stringify(span?.attributes)).not.toContain('s3cret-token');
  });
});
