import { MEDIA_SUBJECTS, STREAMS } from '@chat/contracts';
import { ensureStream } from '@chat/kit';
import { until } from '@chat/testkit';
import { v7 as uuidv7 } from 'uuid';
import { afterAll, describe, expect, it } from 'vitest';
import { newId, startGuilds } from './harness.ts';

const g = await startGuilds();
afterAll(() => g.close());

const preview = { url: 'https://example.test/a', title: 'A page', description: null, siteName: 'Example', imageUrl: null, type: 'article' };

/** Publishes media's event to this namespace's MEDIA stream, as media would. */
async function resolved(data: unknown) {
  await ensureStream(g.runtime.bus, STREAMS.media);
  const envelope = { id: uuidv7(), subject: MEDIA_SUBJECTS.embedsResolved, occurredAt: new Date().toISOString(), data };
  await g.runtime.bus.js.publish(g.runtime.bus.subject(MEDIA_SUBJECTS.embedsResolved), JSON.stringify(envelope), { msgID: envelope.id });
  return envelope;
}

describe('embeds of channel messages', () => {
  it('stores the previews media resolved on the message, once, and announces the message as updated', async () => {
    const owner = await g.knownUser('embeds');
    const server = (await g.call(owner, 'POST', '/v1/servers', { name: 'Embeds' })).body;
    const channel = (await g.call(owner, 'GET', `/v1/servers/${server.id}/channels`)).body.find(
      (c: { channelType: string }) => c.channelType === 'text',
    );
    const posted = await g.call(owner, 'POST', `/v1/channels/${channel.id}/messages`, { content: 'see https://example.test/a' });
    expect(posted.status).toBe(201);
    expect(posted.body.embeds).toEqual([]);

    const event = await resolved({ target: { kind: 'channel', channelId: channel.id, messageId: posted.body.id }, embeds: [preview] });
    // Delivered again (as after a redelivery): the consumer applies an event id once.
    await g.runtime.bus.js.publish(g.runtime.bus.subject(MEDIA_SUBJECTS.embedsResolved), JSON.stringify(event), {
      msgID: `${event.id}-again`,
    });
    const read = async () => (await g.call(owner, 'GET', `/v1/channels/${channel.id}/messages`)).body[0];
    await until(async () => (await read()).embeds.length === 1);
    expect((await read()).embeds).toEqual([preview]);
    const updates = (await g.outbox('guilds.message.updated')).filter((e) => (e.data as { id: string }).id === posted.body.id);
    expect(updates).toHaveLength(1);
    expect(updates[0]?.data).toMatchObject({ id: posted.body.id, embeds: [preview] });
  });

  it('ignores a direct message target and a message that is gone', async () => {
    const marker = newId();
    await resolved({ target: { kind: 'dm', conversationId: newId(), messageId: marker }, embeds: [preview] });
    await resolved({ target: { kind: 'channel', channelId: newId(), messageId: marker }, embeds: [preview] });
    const applied = async () =>
      (await g.runtime.pool.query("SELECT count(*)::int AS n FROM processed_events WHERE consumer = 'guilds-embeds'")).rows[0].n;
    await until(async () => (await applied()) >= 3);
    expect(await g.outbox('guilds.message.updated')).toHaveLength(1);
  });
});

describe('embeds after an edit', () => {
  const previewOf = (url: string, title: string) => ({ url, title, description: null, siteName: null, imageUrl: null, type: 'website' });
  const bank = previewOf('https://bank.test/login', 'Your bank');

  async function textChannel(owner: string) {
    const server = (await g.call(owner, 'POST', '/v1/servers', { name: 'Edits' })).body;
    const channels = (await g.call(owner, 'GET', `/v1/servers/${server.id}/channels`)).body as { id: string; channelType: string }[];
    return channels.find((c) => c.channelType === 'text')!.id;
  }
  const storedEmbeds = async (messageId: string) =>
    (await g.db.query('SELECT embeds FROM messages WHERE id = $1', [messageId])).rows[0].embeds;
  const updatesOf = async (messageId: string) =>
    (await g.outbox('guilds.message.updated')).filter((e) => (e.data as { id: string }).id === messageId).map((e) => e.data);
  const applied = async (eventId: string) =>
    (await g.db.query("SELECT 1 FROM processed_events WHERE consumer = 'guilds-embeds' AND event_id = $1", [eventId])).rowCount === 1;

  it('drops the previews of the links an edit removes, in the answer, the row and the update event', async () => {
    const owner = await g.knownUser('edits');
    const channelId = await textChannel(owner);
    const posted = (await g.call(owner, 'POST', `/v1/channels/${channelId}/messages`, { content: 'pay at https://bank.test/login' })).body;
    await resolved({ target: { kind: 'channel', channelId, messageId: posted.id }, embeds: [bank] });
    await until(async () => (await storedEmbeds(posted.id)).length === 1);

    const edited = await g.call(owner, 'PATCH', `/v1/channels/${channelId}/messages/${posted.id}`, {
      content: 'pay at https://phish.test/login',
    });
    expect(edited.status).toBe(200);
    expect(edited.body).toMatchObject({ content: 'pay at https://phish.test/login', embeds: [] });
    expect(await storedEmbeds(posted.id)).toEqual([]);
    const updates = await updatesOf(posted.id);
    expect(updates.at(-1)).toMatchObject({ content: 'pay at https://phish.test/login', embeds: [] });
  });

  it('keeps the previews of the links an edit keeps', async () => {
    const owner = await g.knownUser('typo');
    const channelId = await textChannel(owner);
    const posted = (await g.call(owner, 'POST', `/v1/channels/${channelId}/messages`, { content: 'teh bank: https://bank.test/login' }))
      .body;
    await resolved({ target: { kind: 'channel', channelId, messageId: posted.id }, embeds: [bank] });
    await until(async () => (await storedEmbeds(posted.id)).length === 1);

    const edited = await g.call(owner, 'PATCH', `/v1/channels/${channelId}/messages/${posted.id}`, {
      content: 'the bank: https://bank.test/login#top',
    });
    expect(edited.status).toBe(200);
    expect(edited.body.embeds).toEqual([bank]);
    expect(await storedEmbeds(posted.id)).toEqual([bank]);
  });

  it('does not store previews resolved for the text before an edit when they arrive after it', async () => {
    const owner = await g.knownUser('late');
    const channelId = await textChannel(owner);
    const posted = (await g.call(owner, 'POST', `/v1/channels/${channelId}/messages`, { content: 'https://bank.test/login' })).body;
    const edited = await g.call(owner, 'PATCH', `/v1/channels/${channelId}/messages/${posted.id}`, { content: 'https://phish.test/login' });
    expect(edited.status).toBe(200);
    const updatesAfterEdit = await updatesOf(posted.id);

    const late = await resolved({ target: { kind: 'channel', channelId, messageId: posted.id }, embeds: [bank] });
    await until(() => applied(late.id));
    expect(await storedEmbeds(posted.id)).toEqual([]);
    expect(await updatesOf(posted.id)).toEqual(updatesAfterEdit);
    const read = (await g.call(owner, 'GET', `/v1/channels/${channelId}/messages`)).body[0];
    expect(read).toMatchObject({ id: posted.id, content: 'https://phish.test/login', embeds: [] });
  });
});
