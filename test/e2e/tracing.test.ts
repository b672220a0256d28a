import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { join } from 'node:path';
import { createClient } from '@chat/client';
import { freePort, type IsolatedPlatform, type ServiceProcess, startIsolatedPlatform, until } from '@chat/testkit';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { E2E_ENV } from '../setup/platform.ts';

// A platform of its own whose every process exports its spans over OTLP/HTTP to a collector in this
// test process that keeps them in memory; the test then follows one trace from hop to hop, each
// span the child of the one before, across the processes.

interface CollectedSpan {
  service: string;
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  kind: number;
}

// OTLP span kinds.
const KIND = { server: 2, client: 3, producer: 4, consumer: 5 };
const PROCESSES: ServiceProcess[] = ['gateway', 'auth', 'guilds', 'social', 'media', 'music'];
const spans: CollectedSpan[] = [];
let collector: Server;
let run: IsolatedPlatform;

/** The in-memory OTLP/HTTP (JSON) collector the processes export to. */
async function startCollector(port: number): Promise<Server> {
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk) => {
      body += chunk;
    });
    req.on('end', () => {
      const payload = JSON.parse(body) as {
        resourceSpans: {
          resource: { attributes: { key: string; value: { stringValue?: string } }[] };
          scopeSpans: { spans: Omit<CollectedSpan, 'service'>[] }[];
        }[];
      };
      for (const { resource, scopeSpans } of payload.resourceSpans) {
        const service = resource.attributes.find((a) => a.key === 'service.name')?.value.stringValue ?? '?';
        for (const scope of scopeSpans)
          for (const span of scope.spans)
            spans.push({ service, ...span, parentSpanId: span.parentSpanId ?? '', traceId: span.traceId, spanId: span.spanId });
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return server;
}

beforeAll(async () => {
  const port = await freePort();
  collector = await startCollector(port);
  const tracing = { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `http://127.0.0.1:${port}/v1/traces` };
  run = await startIsolatedPlatform({
    backing: inject('backing'),
    label: 'trc',
    logDir: join(inject('platform').logDir, 'tracing'),
    baseEnv: { PATH: process.env.PATH, HOME: process.env.HOME, NODE_ENV: 'test', LOG_LEVEL: 'info' },
    extraEnv: Object.fromEntries(PROCESSES.map((p) => [p, { ...E2E_ENV[p], ...tracing }])),
  });
});

afterAll(async () => {
  await run?.stop();
  await new Promise((resolve) => collector?.close(resolve));
});

/** A W3C traceparent of a span of the test's own, so that every span of the request is findable. */
function callerTrace() {
  const traceId = randomBytes(16).toString('hex');
  const spanId = randomBytes(8).toString('hex');
  return { traceId, spanId, traceparent: `00-${traceId}-${spanId}-01` };
}

async function api(method: string, path: string, options: { body?: unknown; token?: string; traceparent?: string } = {}) {
  const res = await fetch(`${run.platform.urls.gateway}${path}`, {
    method,
    headers: {
      'content-type': 'application/json',
      'x-forwarded-for': '10.202.0.1',
      ...(options.token ? { authorization: `Bearer ${options.token}` } : {}),
      ...(options.traceparent ? { traceparent: options.traceparent } : {}),
    },
    body: options.body === undefined ? undefined : JSON.stringify(options.body),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

/** Waits until the processes have exported the spans `find` looks for (they export every second). */
async function eventually<T>(find: () => T | undefined, what: string, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const found = find();
    if (found !== undefined) return found;
    if (Date.now() > deadline) throw new Error(`${what} never arrived; spans: ${JSON.stringify(spans.slice(-20), null, 1)}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

const childOf = (parent: CollectedSpan, match: Partial<CollectedSpan>) => () =>
  spans.find(
    (s) =>
      s.traceId === parent.traceId &&
      s.parentSpanId === parent.spanId &&
      Object.entries(match).every(([k, v]) => s[k as keyof CollectedSpan] === v),
  );

describe('a trace', () => {
  it('follows a profile change from the gateway through auth and its outbox into the consumers of guilds and social and the socket', async () => {
    const name = `trc_${crypto.randomUUID().slice(0, 8)}`;
    const registered = await api('POST', '/v1/auth/register', {
      body: { username: name, email: `${name}@example.test`, password: 'tracing-pass' },
    });
    expect(registered.status).toBe(201);
    // The user's own socket gets the account as USER_UPDATE.
    const chat = createClient({
      baseUrl: run.platform.urls.gateway,
      headers: { 'x-forwarded-for': '10.202.0.2' },
      tokens: { token: registered.body.token as string, refreshToken: registered.body.refreshToken as string },
    });
    const updates: string[] = [];
    chat.socket.on('USER_UPDATE', (user) => updates.push(user.displayName));
    await chat.socket.connect();

    const caller = callerTrace();
    const updated = await api('PATCH', '/v1/users/@me', {
      body: { displayName: 'Traced' },
      token: registered.body.token as string,
      traceparent: caller.traceparent,
    });
    expect(updated.status).toBe(200);

    const root = { traceId: caller.traceId, spanId: caller.spanId } as CollectedSpan;
    const gateway = await eventually(childOf(root, { service: 'gateway', kind: KIND.server }), 'the gateway span');
    expect(gateway.name).toBe('PATCH /v1/users/@me');
    const auth = await eventually(childOf(gateway, { service: 'auth', kind: KIND.server }), "auth's span");
    expect(auth.name).toBe('PATCH /v1/users/@me');
    const publish = await eventually(
      childOf(auth, { service: 'auth', kind: KIND.producer, name: 'publish auth.user.updated' }),
      'the outbox publication',
    );
    // The account of the user's own sessions is another publication of the same request.
    const account = await eventually(
      childOf(auth, { service: 'auth', kind: KIND.producer, name: 'publish auth.account.updated' }),
      "the account's publication",
    );
    const guilds = await eventually(childOf(publish, { service: 'guilds', kind: KIND.consumer }), "guilds' consumer");
    const social = await eventually(childOf(publish, { service: 'social', kind: KIND.consumer }), "social's consumer");
    expect(guilds.name).toMatch(/ process auth\.user\.updated$/);
    expect(social.name).toMatch(/ process auth\.user\.updated$/);
    // The gateway's dispatch continues the trace too, one span per event it dispatches.
    try {
      await until(async () => updates.includes('Traced'), { what: 'USER_UPDATE reaches the socket' });
    } finally {
      chat.socket.close();
    }
    const dispatch = await eventually(childOf(account, { service: 'gateway', kind: KIND.consumer }), "the gateway's dispatch");
    expect(dispatch.name).toBe('gateway dispatch auth.account.updated');

    // The trace id is logged next to the request id.
    const logged = readFileSync(run.platform.logFile('auth'), 'utf8')
      .split('\n')
      .filter((line) => line.includes(caller.traceId))
      .map((line) => JSON.parse(line) as { reqId?: string; traceId: string });
    expect(logged.length).toBeGreaterThan(0);
    expect(logged[0]?.reqId).toEqual(expect.any(String));
  });

  it('follows a request from the gateway through music and its NATS request to guilds', async () => {
    const name = `trr_${crypto.randomUUID().slice(0, 8)}`;
    const registered = await api('POST', '/v1/auth/register', {
      body: { username: name, email: `${name}@example.test`, password: 'tracing-pass' },
    });
    expect(registered.status).toBe(201);

    const caller = callerTrace();
    // An unknown channel: guilds answers the voice-access request with 404, which music passes on.
    const player = await api('GET', `/v1/music/${crypto.randomUUID()}`, {
      token: registered.body.token as string,
      traceparent: caller.traceparent,
    });
    expect(player.status).toBe(404);

    const root = { traceId: caller.traceId, spanId: caller.spanId } as CollectedSpan;
    const gateway = await eventually(childOf(root, { service: 'gateway', kind: KIND.server }), 'the gateway span');
    const music = await eventually(childOf(gateway, { service: 'music', kind: KIND.server }), "music's span");
    const request = await eventually(childOf(music, { service: 'music', kind: KIND.client }), "music's NATS request");
    expect(request.name).toBe('rpc rpc.guilds.voice.access');
    const answer = await eventually(childOf(request, { service: 'guilds', kind: KIND.server }), "guilds' answer");
    expect(answer.name).toBe('rpc rpc.guilds.voice.access');
  });
});
