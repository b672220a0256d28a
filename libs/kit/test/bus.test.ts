import { defineRpc } from '@chat/contracts';
import { testNamespace } from '@chat/testkit';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { z } from 'zod';
import { connectBus, type RpcContext, requestRpc, serveRpc } from '../src/bus.ts';
import { AppError } from '../src/errors.ts';
import { captureLogs } from './logs.ts';

const logs = captureLogs();
const namespace = testNamespace('kitbus');
const bus = await connectBus({ url: inject('backing').natsUrl, namespace, name: 'kit-bus-test', log: logs.log });
afterAll(() => bus.nc.drain());

const Lookup = z.object({ id: z.string().min(1) });
const LookupRpc = defineRpc('rpc.kit.lookup', Lookup, z.object({ id: z.string(), name: z.string() }));
const NobodyRpc = defineRpc('rpc.kit.nobody', z.object({}), z.null());
const seen: RpcContext[] = [];

serveRpc(bus, logs.log, LookupRpc, async ({ id }, ctx) => {
  seen.push(ctx);
  if (id === 'missing') throw new AppError(404, 'Widget not found');
  if (id === 'crash') throw new Error('secret database detail');
  if (id === 'down') throw new AppError(503, 'pool exhausted at 10.0.0.7');
  if (id === 'slow') await new Promise((resolve) => setTimeout(resolve, 1_000));
  if (id === 'nameless') return { id } as never;
  return { id, name: `widget ${id}`, ...(id === 'leaky' ? { secret: 'column added later' } : {}) };
});
// A server that answers outside the contract (another process at another version, say).
const RogueRpc = defineRpc('rpc.kit.rogue', z.object({}), z.object({ ok: z.literal(true) }));
bus.nc.subscribe(bus.subject(RogueRpc.subject), {
  callback: (_err, msg) => {
    msg.respond(JSON.stringify({ ok: 'maybe' }));
  },
});
await bus.nc.flush();

async function appError(promise: Promise<unknown>): Promise<AppError> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(AppError);
  return err as AppError;
}

describe('serveRpc and requestRpc', () => {
  it("logs each request it answers under the caller's request id, with its status", async () => {
    const [ok, missing] = [`rpc-ok-${crypto.randomUUID()}`, `rpc-404-${crypto.randomUUID()}`];
    await requestRpc(bus, LookupRpc, { id: 'a2' }, { requestId: ok });
    await requestRpc(bus, LookupRpc, { id: 'missing' }, { requestId: missing }).catch(() => undefined);
    const answered = (reqId: string) => logs.entries().filter((e) => e.reqId === reqId && e.msg === 'rpc answered');
    expect(answered(ok)).toEqual([expect.objectContaining({ level: 30, rpc: LookupRpc.subject, status: 200 })]);
    expect(answered(missing)).toEqual([expect.objectContaining({ level: 30, rpc: LookupRpc.subject, status: 404 })]);
  });

  it('answers the handler result', async () => {
    expect(await requestRpc(bus, LookupRpc, { id: 'a1' })).toEqual({ id: 'a1', name: 'widget a1' });
  });

  it('serves on the namespaced subject only', async () => {
    const other = await connectBus({ url: inject('backing').natsUrl, namespace: testNamespace('other'), name: 'other', log: logs.log });
    try {
      expect((await appError(requestRpc(other, LookupRpc, { id: 'a1' }, { timeoutMs: 500 }))).status).toBe(503);
    } finally {
      await other.nc.drain();
    }
  });

  it('strips what the reply contract does not name before the answer leaves', async () => {
    expect(await requestRpc(bus, LookupRpc, { id: 'leaky' })).toEqual({ id: 'leaky', name: 'widget leaky' });
  });

  it('answers 500 and logs when the handler breaks its reply contract', async () => {
    const err = await appError(requestRpc(bus, LookupRpc, { id: 'nameless' }, { requestId: 'req-nameless' }));
    expect(err.status).toBe(500);
    expect(logs.entries().some((e) => e.msg === 'rpc handler failed' && e.reqId === 'req-nameless')).toBe(true);
  });

  it('throws 502 when the reply breaks the contract on the caller side', async () => {
    const err = await appError(requestRpc(bus, RogueRpc, {}));
    expect(err.status).toBe(502);
    expect(err.message).toMatch(/rpc\.kit\.rogue/);
  });

  it('carries the request id in the headers to the handler', async () => {
    await requestRpc(bus, LookupRpc, { id: 'traced' }, { requestId: 'req-abc-123' });
    expect(seen.at(-1)?.requestId).toBe('req-abc-123');
    await requestRpc(bus, LookupRpc, { id: 'untraced' });
    expect(seen.at(-1)?.requestId).toBeUndefined();
  });

  it('keeps the status and message of an AppError across the hop', async () => {
    const err = await appError(requestRpc(bus, LookupRpc, { id: 'missing' }));
    expect(err.status).toBe(404);
    expect(err.message).toBe('Widget not found');
  });

  it('answers 400 to a request that breaks the schema, without running the handler', async () => {
    const before = seen.length;
    const err = await appError(requestRpc(bus, LookupRpc, { id: '' }));
    expect(err.status).toBe(400);
    expect(err.message).toMatch(/^Invalid rpc\.kit\.lookup request/);
    expect(seen).toHaveLength(before);
  });

  it('answers 400 to a payload that is not JSON', async () => {
    const reply = await bus.nc.request(bus.subject(LookupRpc.subject), '{not json', { timeout: 1_000 });
    expect(reply.headers?.get('x-status')).toBe('400');
    expect(reply.json()).toEqual({ error: expect.stringMatching(/not valid JSON/i) });
  });

  it('turns a plain error into a bare 500 and logs the cause with the request id', async () => {
    const err = await appError(requestRpc(bus, LookupRpc, { id: 'crash' }, { requestId: 'req-crash' }));
    expect(err.status).toBe(500);
    expect(err.message).not.toContain('secret');
    const logged = logs.entries().find((e) => e.msg === 'rpc handler failed' && e.reqId === 'req-crash');
    expect((logged?.err as { message?: string })?.message).toBe('secret database detail');
  });

  it('hides the message of a 5xx AppError but keeps its status', async () => {
    const err = await appError(requestRpc(bus, LookupRpc, { id: 'down' }));
    expect(err.status).toBe(503);
    expect(err.message).not.toContain('10.0.0.7');
  });

  it('answers 503 when nobody serves the subject', async () => {
    const started = Date.now();
    const err = await appError(requestRpc(bus, NobodyRpc, {}, { timeoutMs: 2_000 }));
    expect(err.status).toBe(503);
    expect(Date.now() - started).toBeLessThan(1_000);
  });

  it('answers 504 when the handler is too slow', async () => {
    const err = await appError(requestRpc(bus, LookupRpc, { id: 'slow' }, { timeoutMs: 200 }));
    expect(err.status).toBe(504);
  });
});
