import { randomUUID } from 'node:crypto';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { createRedis, redisReady } from '../src/db/redis.ts';
import { createPresence, seenByViewer } from '../src/domain/presence.ts';

/**
 * Issue 18: social asks the gateway what others see of each user of every friend list it answers.
 * The answer is read in one Redis command whatever the list's length (one command per user cost
 * the gateway as much as proxying the request itself).
 */
const redis = createRedis(inject('backing').redisUrl, 3_000);
if (!(await redisReady(redis, 15_000))) throw new Error('the shared Redis did not connect within 15 s');
afterAll(() => redis.disconnect());

const prefix = `presence-seen-${randomUUID()}:`;
const announced: string[] = [];
const presence = createPresence({
  redis,
  prefix,
  livenessMs: 60_000,
  announce: async (update) => void announced.push(`${update.userId}:${update.status}`),
});

/** The commands this client sends while `work` runs (a pipeline's commands each count). */
async function commandsDuring(work: () => Promise<unknown>): Promise<string[]> {
  const sent: string[] = [];
  const original = redis.sendCommand.bind(redis);
  redis.sendCommand = ((command: { name: string }, ...rest: unknown[]) => {
    sent.push(command.name);
    return (original as (...args: unknown[]) => unknown)(command, ...rest);
  }) as typeof redis.sendCommand;
  try {
    await work();
  } finally {
    redis.sendCommand = original;
  }
  return sent;
}

describe('what others see of a list of users', () => {
  it('answers each user as last shown (offline when never connected), in one Redis command for twenty users', async () => {
    const [online, busy] = [randomUUID(), randomUUID()];
    await presence.connected(online, 'session-1');
    await presence.chose(busy, 'dnd', '');
    await presence.connected(busy, 'session-2');
    const strangers = Array.from({ length: 18 }, () => randomUUID());

    let seen: Record<string, string> = {};
    const sent = await commandsDuring(async () => {
      seen = await presence.seen([online, busy, ...strangers]);
    });

    expect(sent).toHaveLength(1);
    expect(seen[online]).toBe('online');
    expect(seen[busy]).toBe('dnd');
    for (const stranger of strangers) expect(seen[stranger]).toBe('offline');
    expect(Object.keys(seen)).toHaveLength(20);
    expect(announced).toEqual([`${online}:online`, `${busy}:dnd`]);
  });

  it('answers an empty list without asking Redis', async () => {
    expect(await commandsDuring(async () => expect(await presence.seen([])).toEqual({}))).toEqual([]);
  });
});

describe('what a viewer sees of a list of users', () => {
  it("shows them live to an acquaintance only, asking once for the viewer's own acquaintances whatever the list's length", async () => {
    const [viewer, friend, comember, stranger, away] = [randomUUID(), randomUUID(), randomUUID(), randomUUID(), randomUUID()];
    for (const [i, user] of [viewer, friend, comember, stranger].entries()) await presence.connected(user, `viewer-session-${i}`);
    const asked: string[] = [];
    const seenBy = seenByViewer(presence, async (userId) => {
      asked.push(userId);
      return userId === viewer ? [friend, comember] : [];
    });

    expect(await seenBy([viewer, friend, comember, stranger, away], viewer)).toEqual({
      [viewer]: 'online',
      [friend]: 'online',
      [comember]: 'online',
      [stranger]: 'offline',
      [away]: 'offline',
    });
    expect(asked).toEqual([viewer]);
    // Nobody listed is seen: nothing to decide, nothing asked.
    expect(await seenBy([away], viewer)).toEqual({ [away]: 'offline' });
    expect(asked).toEqual([viewer]);
    // No viewer: what anyone sees.
    expect((await seenBy([stranger]))[stranger]).toBe('online');
  });
});
