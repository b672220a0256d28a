import { STREAMS } from '@chat/contracts';
import { applyOnce, type EventEnvelope } from '@chat/kit';
import { afterAll, describe, expect, it } from 'vitest';
import { USERS_CONSUMER, type UserEventHandler, userEventHandler } from '../src/bus/users.ts';
import { createHarness, eventually } from './harness.ts';

/** Counts how often the real handler ran for each event id. */
const runs = new Map<string, number>();
const counting =
  (inner: UserEventHandler): UserEventHandler =>
  async (event, tx) => {
    runs.set(event.id, (runs.get(event.id) ?? 0) + 1);
    await inner(event, tx);
  };

const h = await createHarness({ handleUserEvent: (log) => counting(userEventHandler(log)) });
afterAll(() => h.close());

const userRow = async (id: string) =>
  (await h.runtime.pool.query('SELECT username, display_name, avatar_url, badges FROM users WHERE id = $1', [id])).rows[0];

describe('the users read-model', () => {
  it('shows a changed displayName and avatar on the next message once the event arrives', async () => {
    const alice = await h.addUser({ displayName: 'Old Name' });
    const bob = await h.addUser();
    const conversationId = (await h.call(alice, 'POST', '/v1/dm/conversations', { userIds: [bob.id] })).body.id;
    const before = await h.call(alice, 'POST', '/v1/dm/messages', { conversationId, content: 'before' });
    expect(before.body).toMatchObject({ senderName: 'Old Name', senderAvatar: null, senderBadges: [] });

    const { token: _, ...profile } = alice;
    const updated = { ...profile, displayName: 'New Name', avatarUrl: 'https://cdn.example/new.png', badges: ['founder'] };
    const event = await h.publishUserEvent('auth.user.updated', updated);
    await h.waitForUser(alice.id, event.occurredAt);

    const after = await h.call(alice, 'POST', '/v1/dm/messages', { conversationId, content: 'after' });
    expect(after.body).toMatchObject({ senderName: 'New Name', senderAvatar: 'https://cdn.example/new.png', senderBadges: ['founder'] });
    const requests = await h.call(bob, 'GET', `/v1/dm/conversations/${conversationId}`);
    expect(requests.body.participants).toContainEqual({
      id: alice.id,
      username: alice.username,
      displayName: 'New Name',
      avatarUrl: 'https://cdn.example/new.png',
      status: 'offline',
    });
  });

  it('learns of a user who registers after social started, who can then be found by username', async () => {
    const alice = await h.addUser();
    const late = { id: crypto.randomUUID(), username: 'late_comer', displayName: 'Late', avatarUrl: null, badges: [] };
    expect((await h.call(alice, 'POST', '/v1/friends/requests', { username: 'late_comer' })).status).toBe(404);

    const event = await h.publishUserEvent('auth.user.registered', late);
    await h.waitForUser(late.id, event.occurredAt);
    const res = await h.call(alice, 'POST', '/v1/friends/requests', { username: 'Late_Comer' });
    expect(res).toEqual({ status: 201, body: { status: 'pending', user: { ...late, badges: undefined, status: 'offline' } } });
  });

  it('never lets an older event overwrite a newer one', async () => {
    const alice = await h.addUser({ displayName: 'First' });
    const { token: _, ...profile } = alice;
    const newer = await h.publishUserEvent('auth.user.updated', { ...profile, displayName: 'Newest' });
    await h.waitForUser(alice.id, newer.occurredAt);

    const stale: EventEnvelope = {
      id: crypto.randomUUID(),
      subject: 'auth.user.updated',
      occurredAt: new Date(Date.parse(newer.occurredAt) - 60_000).toISOString(),
      data: { ...profile, displayName: 'Stale' },
    };
    await applyOnce(h.runtime.pool, USERS_CONSUMER.durable, stale, userEventHandler(h.runtime.log));
    expect((await userRow(alice.id)).display_name).toBe('Newest');
  });

  it('sends an event whose payload breaks the contract to the dead letters and keeps consuming', async () => {
    const bad = await h.publishUserEvent('auth.user.updated', { id: 'not-a-uuid' } as never);
    const good = await h.addUser({ displayName: 'After the bad one' });
    expect((await userRow(good.id)).display_name).toBe('After the bad one');
    const processed = await h.runtime.pool.query('SELECT 1 FROM processed_events WHERE event_id = $1', [bad.id]);
    expect(processed.rowCount).toBe(0);
    const bus = h.runtime.bus;
    const dead = await bus.jsm.streams.getMessage(bus.name(STREAMS.deadLetters.name), {
      last_by_subj: bus.subject(`deadletter.${USERS_CONSUMER.durable}.auth.user.updated`),
    });
    expect(dead?.json<EventEnvelope>().id).toBe(bad.id);
  });

  it('does not apply an event twice when the consumer dies after its commit but before its ack', async () => {
    const alice = await h.addUser({ displayName: 'Before crash' });
    await h.stopConsumer();
    const { token: _, ...profile } = alice;
    const event = await h.publishUserEvent('auth.user.updated', { ...profile, displayName: 'After crash' });

    // The dying consumer: it pulls the event and commits it, then never acks. The nak stands in for
    // the crash so that JetStream redelivers now rather than after ack_wait (30 s); either way the
    // message comes back unacknowledged.
    const bus = h.runtime.bus;
    const durable = await bus.js.consumers.get(bus.name(STREAMS.auth.name), bus.name(USERS_CONSUMER.durable));
    const msg = await durable.next({ expires: 5_000 });
    expect(msg?.json<EventEnvelope>().id).toBe(event.id);
    const envelope: EventEnvelope = { ...msg!.json<EventEnvelope>(), subject: bus.logical(msg!.subject) };
    expect(await applyOnce(h.runtime.pool, USERS_CONSUMER.durable, envelope, counting(userEventHandler(h.runtime.log)))).toBe(true);
    const consumerInfo = () => bus.jsm.consumers.info(bus.name(STREAMS.auth.name), bus.name(USERS_CONSUMER.durable));
    const deliveriesAtCrash = (await consumerInfo()).delivered.consumer_seq;
    msg!.nak();

    // The restarted consumer gets the redelivery, skips it, and acks it.
    await h.startConsumer(counting(userEventHandler(h.runtime.log)));
    await eventually(async () => {
      const info = await consumerInfo();
      return info.delivered.consumer_seq > deliveriesAtCrash && info.ack_floor.stream_seq >= msg!.info.streamSequence;
    });
    expect((await consumerInfo()).num_ack_pending).toBe(0);
    expect(runs.get(event.id)).toBe(1);
    expect((await userRow(alice.id)).display_name).toBe('After crash');
    const processed = await h.runtime.pool.query('SELECT 1 FROM processed_events WHERE event_id = $1', [event.id]);
    expect(processed.rowCount).toBe(1);
  });
});
