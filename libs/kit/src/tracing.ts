import {
  type Context,
  context,
  propagation,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  SpanStatusCode,
  type TextMapGetter,
  trace,
} from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BatchSpanProcessor, SimpleSpanProcessor, type SpanExporter, TracerProvider } from '@opentelemetry/sdk-trace';

// OpenTelemetry traces across every hop: HTTP (W3C traceparent, the gateway to the services), NATS
// request/reply and the outbox into consumers (traceparent in NATS headers). Off unless an OTLP
// endpoint is configured, and then nothing of it is installed: every helper below checks one
// boolean and calls straight through, so tracing that is off costs a branch per hop.

export { SpanKind };

let provider: TracerProvider | undefined;
const tracer = () => trace.getTracer('@chat/kit');

/** Whether this process records spans (startTracing ran with an endpoint or an exporter). */
export function tracingEnabled(): boolean {
  return provider !== undefined;
}

/**
 * Starts recording spans of `service` and exporting them to the OTLP/HTTP traces endpoint (batched),
 * or to `exporter` as each ends (tests). Without either it does nothing: tracing stays off.
 */
export function startTracing(options: { service: string; endpoint?: string; exporter?: SpanExporter }): void {
  if (provider || (!options.endpoint && !options.exporter)) return;
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  const processor = options.exporter
    ? new SimpleSpanProcessor({ exporter: options.exporter })
    : new BatchSpanProcessor({ exporter: new OTLPTraceExporter({ url: options.endpoint }), scheduledDelayMillis: 1_000 });
  provider = new TracerProvider({ resource: resourceFromAttributes({ 'service.name': options.service }), spanProcessors: [processor] });
  trace.setGlobalTracerProvider(provider);
}

/** Exports what is still buffered and stops recording (shutdown; tests). */
export async function stopTracing(): Promise<void> {
  const stopping = provider;
  if (!stopping) return;
  await stopping.shutdown();
  provider = undefined;
  trace.disable();
  propagation.disable();
  context.disable();
}

const recordGetter: TextMapGetter<Record<string, unknown>> = {
  get: (carrier, key) => {
    const value = carrier[key];
    return Array.isArray(value) ? value.map(String) : value === undefined ? undefined : String(value);
  },
  keys: (carrier) => Object.keys(carrier),
};

/** The trace context that `headers` (HTTP headers, or NATS headers as a record) carry; the root when none. */
export function extractContext(headers: Record<string, unknown> | undefined): Context {
  if (!provider || !headers) return ROOT_CONTEXT;
  return propagation.extract(ROOT_CONTEXT, headers, recordGetter);
}

/** `traceparent` (and `tracestate`) of `ctx`, to send on; empty when tracing is off or there is no span. */
export function traceHeaders(ctx: Context = context.active()): Record<string, string> {
  if (!provider) return {};
  const carrier: Record<string, string> = {};
  propagation.inject(ctx, carrier);
  return carrier;
}

/** The active context with `span` as its span (the context to inject for a hop that span makes). */
export function contextWithSpan(span: Span | undefined): Context {
  return span ? trace.setSpan(context.active(), span) : context.active();
}

/** The trace id of the span in `ctx`, for the logs; undefined when tracing is off. */
export function traceIdOf(ctx: Context = context.active()): string | undefined {
  if (!provider) return undefined;
  const span = trace.getSpan(ctx);
  return span?.isRecording() ? span.spanContext().traceId : undefined;
}

/** Starts a span under `parent` (default: the active context); undefined when tracing is off. */
export function startSpan(
  name: string,
  options: { kind: SpanKind; parent?: Context; attributes?: Record<string, string | number | boolean> },
): Span | undefined {
  if (!provider) return undefined;
  return tracer().startSpan(name, { kind: options.kind, attributes: options.attributes }, options.parent ?? context.active());
}

/** Ends a span, marking it failed when `error` is given. */
export function endSpan(span: Span | undefined, error?: unknown): void {
  if (!span) return;
  if (error !== undefined) {
    span.recordException(error instanceof Error ? error : String(error));
    span.setStatus({ code: SpanStatusCode.ERROR });
  }
  span.end();
}

/** Runs `work` with `span` as the active span, so that what it starts (requests, events) descends from it. */
export function withSpan<T>(span: Span | undefined, work: () => T): T {
  if (!span) return work();
  return context.with(trace.setSpan(context.active(), span), work);
}

/** Runs `work` in a span of its own, ended (and marked failed on a throw) when `work` settles. */
export async function inSpan<T>(
  name: string,
  options: { kind: SpanKind; parent?: Context; attributes?: Record<string, string | number | boolean> },
  work: (span: Span | undefined) => Promise<T>,
): Promise<T> {
  const span = startSpan(name, options);
  if (!span) return work(undefined);
  try {
    const result = await withSpan(span, () => work(span));
    endSpan(span);
    return result;
  } catch (err) {
    endSpan(span, err);
    throw err;
  }
}
