import { randomBytes, randomUUID } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import { MEDIA_SUBJECTS, MESSAGES_SUBJECTS } from '@chat/contracts';
import { AppError, type ConsumerHandle } from '@chat/kit';
import { channelMessageRecord } from '@chat/testkit';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { consumeMessagesForEmbeds } from '../src/bus/embeds.ts';
import type { ObjectStore } from '../src/db/storage.ts';
import { createMediaHarness, type MediaHarness, PNG_1X1 } from './harness.ts';
import { html, startPageServer } from './page-server.ts';

// Sites that take their time, and the embeds of everyone else. The fetcher is the production one
// (LINK_PREVIEW_TIMEOUT_MS 5 s), allowed to reach this machine's page server only.

let h: MediaHarness;
let server: Awaited<ReturnType<typeof startPageServer>>;
let consumers: ConsumerHandle[];
/** Requests to /slow, unanswered until the test answers them. */
const waiting: ServerResponse[] = [];
const answerSlowPages = () => {
  for (const res of waiting.splice(0)) res.writeHead(200, { 'content-type': 'text/html' }).end('<title>Slow at last</title>');
};
/** The next preview image stored fails as with MinIO down (503). */
let storeDown = false;
let puts = 0;
const failingOnce = (store: ObjectStore): ObjectStore => ({
  ...store,
  put: (key, source, contentTypeOf) => {
    puts++;
    if (!storeDown) return store.put(key, source, contentTypeOf);
    storeDown = false;
    return Promise.reject(new AppError(503, 'Storage unavailable'));
  },
});
// Images of their own, so that no earlier copy of them is reused.
const IMAGE = Buffer.concat([PNG_1X1, randomBytes(16)]);
const PAGE_IMAGE = Buffer.concat([PNG_1X1, randomBytes(16)]);

beforeAll(async () => {
  server = await startPageServer({
    '/slow': (_req, res) => void waiting.push(res),
    '/fast': html('<title>Fast</title>'),
    '/image.png': (_req, res) => res.writeHead(200, { 'content-type': 'image/png' }).end(IMAGE),
    '/illustrated': html('<title>Illustrated</title><meta property="og:image" content="/page-image.png">'),
    '/page-image.png': (_req, res) => res.writeHead(200, { 'content-type': 'image/png' }).end(PAGE_IMAGE),
  });
  // A pool of the app's own, which only the consumers use here: what it has checked out is theirs.
  h = await createMediaHarness({ env: { LINK_PREVIEW_ALLOWLIST: '127.0.0.1' }, poolSize: 4, storage: failingOnce });
  consumers = await consumeMessagesForEmbeds(h.deps);
});
afterAll(async () => {
  answerSlowPages();
  await Promise.all(consumers.map((c) => c.stop()));
  await h.close();
  await server.close();
});

async function post(content: string) {
  const message = channelMessageRecord({ content });
  const envelope = { id: randomUUID(), subject: MESSAGES_SUBJECTS.messageCreated, occurredAt: new Date().toISOString(), data: message };
  await h.runtime.bus.js.publish(h.runtime.bus.subject(envelope.subject), JSON.stringify(envelope), { msgID: envelope.id });
  return message;
}

async function resolvedFor(messageId: string) {
  const { rows } = await h.runtime.pool.query(
    "SELECT payload->'data' AS data FROM outbox WHERE subject = $1 AND payload->'data'->'target'->>'messageId' = $2",
    [MEDIA_SUBJECTS.embedsResolved, messageId],
  );
  return rows.map((r) => r.data);
}

describe('embeds while a linked site takes its time', () => {
  it('publishes the embeds of a message posted after one whose site does not answer, without waiting for it', async () => {
    const slow = await post(`${server.origin}/slow?case=behind`);
    await vi.waitFor(() => expect(waiting).toHaveLength(1), { timeout: 3_000 });
    const fast = await post(`${server.origin}/fast`);
    try {
      // Well within the 5 s the slow site may still take.
      await vi.waitFor(async () => expect(await resolvedFor(fast.id)).toHaveLength(1), { timeout: 2_000 });
      expect((await resolvedFor(fast.id))[0].embeds).toEqual([expect.objectContaining({ url: `${server.origin}/fast`, title: 'Fast' })]);
      expect(await resolvedFor(slow.id)).toEqual([]);
    } finally {
      answerSlowPages();
    }
    await vi.waitFor(async () => expect(await resolvedFor(slow.id)).toHaveLength(1), { timeout: 3_000 });
    expect((await resolvedFor(slow.id))[0].embeds).toEqual([expect.objectContaining({ title: 'Slow at last' })]);
    expect(server.hits('/slow')).toBe(1);
  });

  it('holds no database connection while a linked site takes its time', async () => {
    const message = await post(`${server.origin}/slow?case=connections`);
    await vi.waitFor(() => expect(waiting).toHaveLength(1), { timeout: 3_000 });
    const held: number[] = [];
    try {
      for (let i = 0; i < 20; i++) {
        held.push(h.deps.pool.totalCount - h.deps.pool.idleCount);
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
    } finally {
      answerSlowPages();
    }
    expect(Math.max(...held)).toBe(0);
    await vi.waitFor(async () => expect(await resolvedFor(message.id)).toHaveLength(1), { timeout: 3_000 });
  });

  it('fails the event of a link whose image cannot be stored (MinIO down), and publishes its embeds once the store is back', async () => {
    storeDown = true;
    const putsBefore = puts;
    const message = await post(`${server.origin}/image.png`);
    // Redelivered a second after the failure.
    await vi.waitFor(async () => expect(await resolvedFor(message.id)).toHaveLength(1), { timeout: 5_000 });
    expect(puts - putsBefore).toBe(2);
    expect(server.hits('/image.png')).toBe(2);
    expect((await resolvedFor(message.id))[0].embeds).toEqual([
      expect.objectContaining({
        url: `${server.origin}/image.png`,
        type: 'image',
        imageUrl: expect.stringContaining('https://chat.example.test/'),
      }),
    ]);
  });

  it('fails the event of a page whose image cannot be stored (MinIO down) rather than publishing it without the image', async () => {
    storeDown = true;
    const putsBefore = puts;
    const message = await post(`${server.origin}/illustrated`);
    await vi.waitFor(async () => expect(await resolvedFor(message.id)).toHaveLength(1), { timeout: 5_000 });
    expect(puts - putsBefore).toBe(2);
    expect((await resolvedFor(message.id))[0].embeds).toEqual([
      expect.objectContaining({ title: 'Illustrated', imageUrl: expect.stringContaining('https://chat.example.test/') }),
    ]);
  });
});
