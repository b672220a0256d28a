import { randomUUID } from 'node:crypto';
import { MEDIA_SUBJECTS, MESSAGES_SUBJECTS, SOCIAL_SUBJECTS } from '@chat/contracts';
import type { ConsumerHandle } from '@chat/kit';
import { linksIn } from '@chat/messaging';
import { channelMessageRecord } from '@chat/testkit';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { consumeMessagesForEmbeds } from '../src/bus/embeds.ts';
import { addressPolicy } from '../src/domain/address-policy.ts';
import { createSafeFetch } from '../src/domain/safe-fetch.ts';
import { createMediaHarness, type MediaHarness } from './harness.ts';
import { html, redirect, startPageServer } from './page-server.ts';

let h: MediaHarness;
let server: Awaited<ReturnType<typeof startPageServer>>;
let consumers: ConsumerHandle[];

beforeAll(async () => {
  server = await startPageServer({
    '/a': html('<meta property="og:title" content="Page A">'),
    '/b': html('<title>Page B</title>'),
    '/nul': html('<title>Before\u0000after</title><meta property="og:description" content="d\u0000e">'),
    '/to-bad-port': redirect('http://a:99999/'),
    '/plain.txt': (_req, res) => res.writeHead(200, { 'content-type': 'text/plain' }).end('just text'),
    '/data.json': (_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end('{"a":1}'),
    '/nothing': html('<html><head></head><body>no title</body></html>'),
    '/c': html('<title>Page C</title>'),
  });
  const safeFetch = createSafeFetch({ policy: addressPolicy(['127.0.0.1']), timeoutMs: 5_000, maxRedirects: 5, userAgent: 'test' });
  // A link under /bug fails as a bug would: not a refused link (400), an error nobody foresaw.
  const fetchLink: typeof safeFetch = async (url, options) => {
    if (new URL(url).pathname.startsWith('/bug')) throw new TypeError('an unforeseen failure');
    return safeFetch(url, options);
  };
  h = await createMediaHarness({ fetchLink });
  consumers = await consumeMessagesForEmbeds(h.deps);
});
afterAll(async () => {
  await Promise.all(consumers.map((c) => c.stop()));
  await h.close();
  await server.close();
});

/** Publishes a message's event as its owner would; answers the event's id. */
async function publish(subject: string, data: unknown) {
  const envelope = { id: randomUUID(), subject, occurredAt: new Date().toISOString(), data };
  await h.runtime.bus.js.publish(h.runtime.bus.subject(subject), JSON.stringify(envelope), { msgID: envelope.id });
  return envelope.id;
}

/** Whether the consumer has applied the event (its record is committed with whatever it published). */
async function applied(eventId: string) {
  const { rows } = await h.runtime.pool.query('SELECT 1 FROM processed_events WHERE event_id = $1', [eventId]);
  return rows.length === 1;
}

async function resolvedFor(messageId: string) {
  const { rows } = await h.runtime.pool.query(
    "SELECT payload->'data' AS data FROM outbox WHERE subject = $1 AND payload->'data'->'target'->>'messageId' = $2",
    [MEDIA_SUBJECTS.embedsResolved, messageId],
  );
  return rows.map((r) => r.data);
}

const channelMessage = (content: string) => channelMessageRecord({ content });

describe('embeds of posted messages', () => {
  it('finds the first five distinct links, skipping <wrapped> ones and trailing punctuation', () => {
    expect(linksIn('see http://x.test/a, and <http://x.test/skip> then https://y.test/b. http://x.test/a')).toEqual([
      'http://x.test/a',
      'https://y.test/b',
    ]);
    expect(linksIn(Array.from({ length: 7 }, (_, i) => `http://x.test/${i}`).join(' '))).toHaveLength(5);
    expect(linksIn('no links here, javascript:alert(1)')).toEqual([]);
  });

  it('publishes the previews of a channel message for guilds to store, once', async () => {
    const message = channelMessage(`look ${server.origin}/a and ${server.origin}/b and http://10.0.0.1/private`);
    await publish(MESSAGES_SUBJECTS.messageCreated, message);
    await vi.waitFor(async () => expect(await resolvedFor(message.id)).toHaveLength(1), { timeout: 15_000 });
    const [resolved] = await resolvedFor(message.id);
    expect(resolved).toEqual({
      target: { kind: 'channel', channelId: message.channelId, messageId: message.id },
      embeds: [
        expect.objectContaining({ url: `${server.origin}/a`, title: 'Page A' }),
        expect.objectContaining({ url: `${server.origin}/b`, title: 'Page B' }),
      ],
    });
  });

  it('reads only the id, channel and content of a message: fields it never uses may change shape (a tolerant reader)', async () => {
    const message = { ...channelMessage(`${server.origin}/a`), mentions: 'a shape of a later version', attachments: null };
    await publish(MESSAGES_SUBJECTS.messageCreated, message);
    await vi.waitFor(async () => expect(await resolvedFor(message.id)).toHaveLength(1), { timeout: 15_000 });
  });

  it('publishes the previews of a direct message for social to store', async () => {
    const message = {
      id: randomUUID(),
      conversationId: randomUUID(),
      senderId: randomUUID(),
      content: `${server.origin}/b`,
      attachments: {},
      replyToId: null,
      editedAt: null,
      createdAt: new Date().toISOString(),
      senderName: 'someone',
      senderAvatar: null,
      senderBadges: [],
      type: 'default',
    };
    await publish(SOCIAL_SUBJECTS.dmCreated, { message, participantIds: [message.senderId] });
    await vi.waitFor(async () => expect(await resolvedFor(message.id)).toHaveLength(1), { timeout: 15_000 });
    expect((await resolvedFor(message.id))[0]).toMatchObject({
      target: { kind: 'dm', conversationId: message.conversationId, messageId: message.id },
      embeds: [{ url: `${server.origin}/b`, title: 'Page B' }],
    });
  });

  it('publishes the previews of the other links when one link cannot be fetched (a redirect to no url)', async () => {
    const message = channelMessage(`${server.origin}/to-bad-port then ${server.origin}/a`);
    await publish(MESSAGES_SUBJECTS.messageCreated, message);
    await vi.waitFor(async () => expect(await resolvedFor(message.id)).toHaveLength(1), { timeout: 15_000 });
    expect((await resolvedFor(message.id))[0]).toEqual({
      target: { kind: 'channel', channelId: message.channelId, messageId: message.id },
      embeds: [expect.objectContaining({ url: `${server.origin}/a`, title: 'Page A' })],
    });
    const { rows } = await h.runtime.pool.query('SELECT error FROM link_previews WHERE url = $1', [`${server.origin}/to-bad-port`]);
    expect(rows).toEqual([{ error: 'The link could not be fetched' }]);
  });

  it('publishes the previews of the other links when one fails unexpectedly, instead of retrying the message for ever', async () => {
    const message = channelMessage(`${server.origin}/bug and ${server.origin}/b`);
    await publish(MESSAGES_SUBJECTS.messageCreated, message);
    await vi.waitFor(async () => expect(await resolvedFor(message.id)).toHaveLength(1), { timeout: 15_000 });
    expect((await resolvedFor(message.id))[0].embeds).toEqual([expect.objectContaining({ url: `${server.origin}/b`, title: 'Page B' })]);
  });

  it('keeps the embed of a page whose title holds U+0000 (PostgreSQL refuses it in jsonb), beside the others', async () => {
    const message = channelMessage(`${server.origin}/nul and ${server.origin}/a`);
    await publish(MESSAGES_SUBJECTS.messageCreated, message);
    await vi.waitFor(async () => expect(await resolvedFor(message.id)).toHaveLength(1), { timeout: 15_000 });
    expect((await resolvedFor(message.id))[0].embeds).toEqual([
      expect.objectContaining({ url: `${server.origin}/nul`, title: 'Before\uFFFDafter', description: 'd\uFFFDe' }),
      expect.objectContaining({ url: `${server.origin}/a`, title: 'Page A' }),
    ]);
  });

  it('publishes nothing for a message whose links give no preview', async () => {
    const message = channelMessage('only http://192.168.1.1/ here');
    const eventId = await publish(MESSAGES_SUBJECTS.messageCreated, message);
    await vi.waitFor(async () => expect(await applied(eventId)).toBe(true), { timeout: 15_000 });
    expect(await resolvedFor(message.id)).toEqual([]);
  });
});

describe('embeds with nothing to show', () => {
  it('publishes no empty embed for a text or JSON document, or a page that names nothing, beside the others', async () => {
    const message = channelMessage(`${server.origin}/plain.txt ${server.origin}/data.json ${server.origin}/nothing ${server.origin}/a`);
    await publish(MESSAGES_SUBJECTS.messageCreated, message);
    await vi.waitFor(async () => expect(await resolvedFor(message.id)).toHaveLength(1), { timeout: 15_000 });
    expect((await resolvedFor(message.id))[0].embeds).toEqual([expect.objectContaining({ url: `${server.origin}/a`, title: 'Page A' })]);

    const only = channelMessage(`${server.origin}/plain.txt`);
    const eventId = await publish(MESSAGES_SUBJECTS.messageCreated, only);
    await vi.waitFor(async () => expect(await applied(eventId)).toBe(true), { timeout: 15_000 });
    expect(await resolvedFor(only.id)).toEqual([]);
  });
});

describe('embeds of edited messages', () => {
  const previewOf = (path: string, title: string) => ({
    url: `${server.origin}${path}`,
    title,
    description: null,
    siteName: null,
    imageUrl: null,
    type: 'website',
  });

  it('previews the links an edit of a channel message added, not those whose previews it shows', async () => {
    const message = { ...channelMessage(`${server.origin}/a and now ${server.origin}/c`), embeds: [previewOf('/a', 'Page A')] };
    await publish(MESSAGES_SUBJECTS.messageUpdated, message);
    await vi.waitFor(async () => expect(await resolvedFor(message.id)).toHaveLength(1), { timeout: 15_000 });
    expect((await resolvedFor(message.id))[0]).toEqual({
      target: { kind: 'channel', channelId: message.channelId, messageId: message.id },
      embeds: [expect.objectContaining({ url: `${server.origin}/c`, title: 'Page C' })],
    });
  });

  it('previews the links an edit of a direct message added', async () => {
    const message = {
      id: randomUUID(),
      conversationId: randomUUID(),
      senderId: randomUUID(),
      content: `edited: ${server.origin}/b`,
      attachments: {},
      replyToId: null,
      editedAt: new Date().toISOString(),
      createdAt: new Date().toISOString(),
      senderName: 'someone',
      senderAvatar: null,
      senderBadges: [],
      type: 'default',
      embeds: [],
    };
    await publish(SOCIAL_SUBJECTS.dmUpdated, { message, participantIds: [message.senderId] });
    await vi.waitFor(async () => expect(await resolvedFor(message.id)).toHaveLength(1), { timeout: 15_000 });
    expect((await resolvedFor(message.id))[0]).toMatchObject({
      target: { kind: 'dm', conversationId: message.conversationId, messageId: message.id },
      embeds: [{ url: `${server.origin}/b`, title: 'Page B' }],
    });
  });

  it('publishes nothing for the update its owner announces after storing the previews (no second round)', async () => {
    const stored = {
      ...channelMessage(`${server.origin}/a#top and ${server.origin}/plain.txt`),
      embeds: [previewOf('/a', 'Page A')],
    };
    const hitsOfA = server.hits('/a');
    await publish(MESSAGES_SUBJECTS.messageUpdated, stored);
    // A later edit of another message, resolved once the one before it was read.
    const marker = channelMessage(`${server.origin}/b`);
    await publish(MESSAGES_SUBJECTS.messageUpdated, marker);
    await vi.waitFor(async () => expect(await resolvedFor(marker.id)).toHaveLength(1), { timeout: 15_000 });
    expect(await resolvedFor(stored.id)).toEqual([]);
    expect(server.hits('/a')).toBe(hitsOfA);
  });
});
