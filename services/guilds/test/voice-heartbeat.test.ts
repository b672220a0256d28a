import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGuilds } from './harness.ts';

/** The heartbeat's `speaking`: true counts as activity for the AFK timeout; false only keeps the state alive. */

const g = await startGuilds();
afterAll(() => g.close());

let member: string;

beforeAll(async () => {
  const owner = await g.knownUser('owner');
  const serverId = (await g.call(owner, 'POST', '/v1/servers', { name: 'Beats', isPublic: true })).body.id;
  const voice = await g.newChannel(owner, serverId, 'room', 'voice');
  member = await g.newMemberOf(serverId);
  expect((await g.call(member, 'POST', '/v1/voice/join', { channelId: voice.id })).status).toBe(200);
});

/** A state about to expire, last active an hour ago: what a heartbeat moves shows. */
async function ageState(): Promise<void> {
  await g.db.query(
    "UPDATE voice_states SET expires_at = now() + interval '5 seconds', last_active_at = now() - interval '1 hour' WHERE user_id = $1",
    [member],
  );
}

const stateTimes = async () =>
  (
    await g.db.query(
      `SELECT (extract(epoch FROM expires_at) * 1000)::float8 AS expires, (extract(epoch FROM last_active_at) * 1000)::float8 AS active
       FROM voice_states WHERE user_id = $1`,
      [member],
    )
  ).rows[0] as { expires: number; active: number };
const anHourAgo = () => Date.now() - 3_600_000;

describe('POST /v1/voice/heartbeat', () => {
  it('with speaking false refreshes the heartbeat and leaves the last activity as it was', async () => {
    await ageState();
    const before = await stateTimes();
    const beat = await g.call(member, 'POST', '/v1/voice/heartbeat', { speaking: false });
    expect(beat.status).toBe(200);
    expect(Date.parse(beat.body.expiresAt)).toBeGreaterThan(Date.now() + 30_000);
    const after = await stateTimes();
    expect(after.expires).toBeGreaterThan(Date.now() + 30_000);
    expect(after.active).toBe(before.active);
  });

  it('with speaking true refreshes the heartbeat and counts as activity', async () => {
    await ageState();
    const beat = await g.call(member, 'POST', '/v1/voice/heartbeat', { speaking: true });
    expect(beat.status).toBe(200);
    const after = await stateTimes();
    expect(after.expires).toBeGreaterThan(Date.now() + 30_000);
    expect(after.active).toBeGreaterThan(anHourAgo() + 60_000);
  });

  it('answers 400 for a speaking that is not a boolean, and changes nothing', async () => {
    await ageState();
    const before = await stateTimes();
    const beat = await g.call(member, 'POST', '/v1/voice/heartbeat', { speaking: 'yes' });
    expect(beat.status).toBe(400);
    expect(beat.body).toEqual({ error: expect.any(String) });
    expect(await stateTimes()).toEqual(before);
  });
});
