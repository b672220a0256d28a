import { AUTH_SUBJECTS, STREAMS, type UserEventData } from '@chat/contracts';
import { ensureStream, many } from '@chat/kit';
import { createTestRuntime, startAuthLookupStandIn } from '@chat/testkit';
import { v7 as uuidv7 } from 'uuid';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { consumeUserEvents } from '../src/bus/users.ts';

// Guilds on a fresh database whose AUTH stream has already dropped its oldest events: what a
// restored or newly added service sees once the streams keep EVENT_RETENTION_DAYS.
const runtime = await createTestRuntime({
  service: 'guilds',
  migrationsDir: new URL('../migrations', import.meta.url).pathname,
  stream: STREAMS.guilds,
  backing: inject('backing'),
});
const auth = await startAuthLookupStandIn(runtime);
await ensureStream(runtime.bus, STREAMS.auth);
afterAll(async () => {
  await auth.close();
  await runtime.close();
});

async function publishUser(subject: string, user: UserEventData, occurredAt: string) {
  const envelope = { id: uuidv7(), subject, occurredAt, data: user };
  await runtime.bus.js.publish(runtime.bus.subject(subject), JSON.stringify(envelope), { msgID: envelope.id });
}
const names = async () =>
  Object.fromEntries(
    (await many<{ id: string; display_name: string }>(runtime.pool, 'SELECT id, display_name FROM users')).map((u) => [
      u.id,
      u.display_name,
    ]),
  );
const user = (ref: { id: string; username: string }, displayName: string): UserEventData => ({
  ...ref,
  displayName,
  avatarUrl: null,
  badges: [],
});

describe('the users read-model, started after AUTH dropped its oldest events', () => {
  it('is backfilled from auth, keeps it over the older events the stream still holds, and follows the events after', async () => {
    const [ada, bob] = [await auth.register('Ada'), await auth.register('Bob')];
    const aMinuteAgo = new Date(Date.now() - 60_000).toISOString();
    await publishUser(AUTH_SUBJECTS.userRegistered, user(bob, 'Bob'), aMinuteAgo);
    await publishUser(AUTH_SUBJECTS.userUpdated, user(ada, 'Ada, before'), aMinuteAgo);
    // Bob's event is gone; Ada's older one is kept.
    await runtime.bus.jsm.streams.purge(runtime.bus.name(STREAMS.auth.name), { keep: 1 });

    const consumer = await consumeUserEvents(runtime);
    try {
      await expect.poll(names).toEqual({ [ada.id]: 'Ada', [bob.id]: 'Bob' });
      const info = () => runtime.bus.jsm.consumers.info(runtime.bus.name(STREAMS.auth.name), runtime.bus.name('guilds-users'));
      await expect.poll(async () => (await info()).num_pending).toBe(0);
      await expect.poll(async () => (await info()).num_ack_pending).toBe(0);
      expect(await names()).toEqual({ [ada.id]: 'Ada', [bob.id]: 'Bob' });

      await publishUser(AUTH_SUBJECTS.userUpdated, user(ada, 'Ada Lovelace'), new Date().toISOString());
      await expect.poll(names).toEqual({ [ada.id]: 'Ada Lovelace', [bob.id]: 'Bob' });
    } finally {
      await consumer.stop();
    }
  });
});
