import { MEDIA_SUBJECTS, STREAMS } from '@chat/contracts';
import { ensureStream } from '@chat/kit';
import { until } from '@chat/testkit';
import { v7 as uuidv7 } from 'uuid';
import { afterAll, describe, expect, it } from 'vitest';
import { consumeEmbeds } from '../src/bus/embeds.ts';
import { createHarness } from './harness.ts';

const h = await createHarness();
await ensureStream(h.runtime.bus, STREAMS.media);
const consumer = await consumeEmbeds(h.runtime);
afterAll(async () => {
  await consumer.stop();
  await h.close();
});

type User = Awaited<ReturnType<typeof h.addUser>>;

/** Publishes media's event to this namespace's MEDIA stream, as media would. */
async function resolved(data: unknown) {
  const envelope = { id: uuidv7(), subject: MEDIA_SUBJECTS.embedsResolved, occurredAt: new Date().toISOString(), data };
  await h.runtime.bus.js.publish(h.runtime.bus.subject(MEDIA_SUBJECTS.embedsResolved), JSON.stringify(envelope), { msgID: envelope.id });
  return envelope;
}

const previewOf = (url: string, title: string) => ({ url, title, description: null, siteName: null, imageUrl: null, type: 'website' });
const bank = previewOf('https://bank.test/login', 'Your bank');

async function conversation(alice: User, bob: User): Promise<string> {
  const res = await h.call(alice, 'POST', '/v1/dm/conversations', { userIds: [bob.id] });
  expect([200, 201]).toContain(res.status);
  return res.body.id;
}
const send = async (user: User, conversationId: string, content: string) =>
  (await h.call(user, 'POST', '/v1/dm/messages', { conversationId, content })).body as { id: string };
const edit = (user: User, messageId: string, content: string) => h.call(user, 'PATCH', `/v1/dm/messages/${messageId}`, { content });
const storedEmbeds = async (messageId: string) =>
  (await h.runtime.pool.query('SELECT embeds FROM direct_messages WHERE id = $1', [messageId])).rows[0].embeds;
const updatesOf = async (messageId: string) =>
  (await h.events('social.dm.updated')).map((e) => e.data.message as { id: string }).filter((m) => m.id === messageId);
const applied = async (eventId: string) =>
  (await h.runtime.pool.query("SELECT 1 FROM processed_events WHERE consumer = 'social-embeds' AND event_id = $1", [eventId])).rowCount ===
  1;

describe('embeds of a direct message after an edit', () => {
  it('drops the previews of the links an edit removes, in the answer, the row and the update event', async () => {
    const [alice, bob] = [await h.addUser(), await h.addUser()];
    const conversationId = await conversation(alice, bob);
    const posted = await send(alice, conversationId, 'pay at https://bank.test/login');
    await resolved({ target: { kind: 'dm', conversationId, messageId: posted.id }, embeds: [bank] });
    await until(async () => (await storedEmbeds(posted.id)).length === 1);

    const edited = await edit(alice, posted.id, 'pay at https://phish.test/login');
    expect(edited.status).toBe(200);
    expect(edited.body).toMatchObject({ content: 'pay at https://phish.test/login', embeds: [] });
    expect(await storedEmbeds(posted.id)).toEqual([]);
    expect((await updatesOf(posted.id)).at(-1)).toMatchObject({ content: 'pay at https://phish.test/login', embeds: [] });
  });

  it('keeps the previews of the links an edit keeps', async () => {
    const [alice, bob] = [await h.addUser(), await h.addUser()];
    const conversationId = await conversation(alice, bob);
    const posted = await send(alice, conversationId, 'teh bank: https://bank.test/login');
    await resolved({ target: { kind: 'dm', conversationId, messageId: posted.id }, embeds: [bank] });
    await until(async () => (await storedEmbeds(posted.id)).length === 1);

    const edited = await edit(alice, posted.id, 'the bank: https://bank.test/login#top');
    expect(edited.status).toBe(200);
    expect(edited.body.embeds).toEqual([bank]);
    expect(await storedEmbeds(posted.id)).toEqual([bank]);
  });

  it('does not store previews resolved for the text before an edit when they arrive after it', async () => {
    const [alice, bob] = [await h.addUser(), await h.addUser()];
    const conversationId = await conversation(alice, bob);
    const posted = await send(alice, conversationId, 'https://bank.test/login');
    expect((await edit(alice, posted.id, 'https://phish.test/login')).status).toBe(200);
    const updatesAfterEdit = await updatesOf(posted.id);

    const late = await resolved({ target: { kind: 'dm', conversationId, messageId: posted.id }, embeds: [bank] });
    await until(() => applied(late.id));
    expect(await storedEmbeds(posted.id)).toEqual([]);
    expect(await updatesOf(posted.id)).toEqual(updatesAfterEdit);
    const [read] = (await h.call(bob, 'GET', `/v1/dm/conversations/${conversationId}/messages`)).body;
    expect(read).toMatchObject({ id: posted.id, content: 'https://phish.test/login', embeds: [] });
  });
});
