import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { inject, vi } from 'vitest';
import { type Ask, createAudience } from '../src/domain/audience.ts';
import { createDispatcher } from '../src/domain/dispatch.ts';
import type { Presence } from '../src/domain/presence.ts';
import { createSessionStore } from '../src/domain/session-store.ts';
import { notAsked } from './helpers.ts';

type Frame = { t: string; d: unknown };
type Answers = Record<string, (data: Record<string, string>) => unknown>;

/**
 * The dispatcher with the real session store and audience on the shared Redis, under a key prefix
 * of its own; what it asks other services is answered by `answers` (RPC subject -> answer), and
 * presence and the account are what the test gives. Close it in afterAll.
 */
export function dispatchHarness(options: {
  answers?: Answers;
  presence?: Partial<Presence>;
  account?: Parameters<typeof createDispatcher>[0]['account'];
}) {
  const redis = new Redis(inject('backing').redisUrl);
  const prefix = `gwtest:${randomUUID()}:`;
  const answers = options.answers ?? {};
  const ask = vi.fn(async (contract: { subject: string }, data: Record<string, string>) => {
    const answer = answers[contract.subject];
    if (!answer) throw new Error(`unexpected question ${contract.subject}`);
    return answer(data);
  }) as unknown as Ask & ReturnType<typeof vi.fn>;
  const store = createSessionStore({ redis, prefix, resumeWindowMs: 120_000, livenessMs: 60_000, bufferSize: 10 });
  const audience = createAudience({ ask, redis, prefix });
  const log = { error: vi.fn(), warn: vi.fn(), info: vi.fn(), debug: vi.fn() } as unknown as Logger;
  const presence = (options.presence ?? {}) as Presence;
  const dispatcher = createDispatcher({ store, audience, presence, log, account: options.account ?? notAsked });

  /** A session of the user; the function answers every dispatch it was sent since, in order. */
  async function sessionOf(userId: string): Promise<() => Promise<Frame[]>> {
    const sessionId = randomUUID();
    await store.open({ sessionId, userId, authSid: randomUUID(), node: 'node-x' });
    await store.ready(sessionId, '{}');
    return async () => (await store.framesAfter(sessionId, 1)).map((f) => JSON.parse(f.frame) as Frame);
  }

  return { ask, dispatcher, sessionOf, close: () => redis.disconnect() };
}

/** An event as the stream readers hand it to the dispatcher. */
export const eventOf = (subject: string, data: unknown) => ({ id: randomUUID(), subject, occurredAt: new Date().toISOString(), data });
