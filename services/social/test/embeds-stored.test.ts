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

/** Publishes media's event to this namespace's MEDIA stream, as media would; answers once social applied it. */
async function resolved(conversationId: string, messageId: string, embeds: unknown[]) {
  const data = { target: { kind: 'dm', conversationId, messageId }, embeds };
  const envelope = { id: uuidv7(), subject: MEDIA_SUBJECTS.embedsResolved, occurredAt: new Date().toISOString(), data };
  await h.runtime.bus.js.publish(h.runtime.bus.subject(MEDIA_SUBJECTS.embedsResolved), JSON.stringify(envelope), { msgID: envelope.id });
  await until(
    async () =>
      (await h.runtime.pool.query("SELECT 1 FROM processed_events WHERE consumer = 'social-embeds' AND event_id = $1", [envelope.id]))
        .rowCount === 1,
  );
}

const previewOf = (url: string, title: string) => ({ url, title, description: null, siteName: null, imageUrl: null, type: 'website' });
const pageA = previewOf('https://a.test/', 'A');
const pageB = previewOf('https://b.test/', 'B');

const send = async (user: User, conversationId: string, content: string) =>
  (await h.call(user, 'POST', '/v1/dm/messages', { conversationId, content })).body as { id: string };
const storedEmbeds = async (messageId: string) =>
  (await h.runtime.pool.query('SELECT embeds FROM direct_messages WHERE id = $1', [messageId])).rows[0].embeds;
const updatesOf = async (messageId: string) =>
  (await h.events('social.dm.updated'))
    .map((e) => e.data as { message: { id: string; embeds: unknown[] }; participantIds: string[] })
    .filter((d) => d.message.id === messageId);

describe('storing the previews media resolved for a direct message', () => {
  it('announces them to the participants still in a group whose sender left meanwhile', async () => {
    const [alice, bob, carol] = [await h.addUser(), await h.addUser(), await h.addUser()];
    const group = await h.call(alice, 'POST', '/v1/dm/conversations', { userIds: [bob.id, carol.id] });
    expect(group.status).toBe(201);
    const conversationId = group.body.id as string;
    const posted = await send(alice, conversationId, 'bye all https://a.test/');
    expect((await h.call(alice, 'DELETE', `/v1/dm/conversations/${conversationId}/members/@me`)).status).toBe(204);

    await resolved(conversationId, posted.id, [pageA]);
    expect(await storedEmbeds(posted.id)).toEqual([pageA]);
    const updates = await updatesOf(posted.id);
    expect(updates).toHaveLength(1);
    expect(updates[0]?.participantIds).toEqual([bob.id, carol.id].sort());
  });

  it('adds up previews resolved for the post and for an edit, in either order, and announces nothing that changes nothing', async () => {
    const [alice, bob] = [await h.addUser(), await h.addUser()];
    const conversationId = (await h.call(alice, 'POST', '/v1/dm/conversations', { userIds: [bob.id] })).body.id as string;
    const posted = await send(alice, conversationId, 'see https://a.test/');
    expect(
      (await h.call(alice, 'PATCH', `/v1/dm/messages/${posted.id}`, { content: 'see https://a.test/ and https://b.test/' })).status,
    ).toBe(200);
    // The edit's previews (the link it added) arrive before the post's.
    await resolved(conversationId, posted.id, [pageB]);
    await resolved(conversationId, posted.id, [pageA]);
    expect(await storedEmbeds(posted.id)).toEqual([pageA, pageB]);
    const announced = (await updatesOf(posted.id)).length;

    // The same previews again (a second round after the owner's own update event) store and announce nothing.
    await resolved(conversationId, posted.id, [pageA, pageB]);
    await resolved(conversationId, posted.id, [pageB]);
    expect(await storedEmbeds(posted.id)).toEqual([pageA, pageB]);
    expect(await updatesOf(posted.id)).toHaveLength(announced);
  });
});
