import { countRoundTrips } from '@chat/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGuilds } from './harness.ts';

/**
 * Issue 18: the reads a client repeats most send only prepared statements (besides BEGIN and
 * COMMIT), which PostgreSQL plans once per connection instead of on every request.
 */
const g = await startGuilds();
afterAll(() => g.close());

let serverId: string;
let channelId: string;
let member: string;

beforeAll(async () => {
  const owner = await g.knownUser('owner');
  member = await g.knownUser('member');
  serverId = (await g.call(owner, 'POST', '/v1/servers', { name: 'Prepared', isPublic: true })).body.id;
  expect((await g.call(member, 'POST', `/v1/servers/${serverId}/join`)).status).toBe(200);
  const channels = (await g.call(owner, 'GET', `/v1/servers/${serverId}/channels`)).body as { id: string; channelType: string }[];
  channelId = channels.find((c) => c.channelType === 'text')!.id;
  for (const content of ['one', 'two', 'three'])
    expect((await g.call(member, 'POST', `/v1/channels/${channelId}/messages`, { content })).status).toBe(201);
});

/** What `path` sends to PostgreSQL the second time (the first may load what is kept between requests). */
async function statementsOf(path: string): Promise<string[]> {
  expect((await g.call(member, 'GET', path)).status).toBe(200);
  const { result, statements } = await countRoundTrips(() => g.call(member, 'GET', path));
  expect(result.status).toBe(200);
  return statements;
}

describe('the most repeated reads', () => {
  it('send only prepared statements: channels, permissions, members pages, messages pages', async () => {
    const newest = (await g.call(member, 'GET', `/v1/channels/${channelId}/messages?limit=2`)).body as { id: string }[];
    const paths = [
      `/v1/servers/${serverId}/channels`,
      `/v1/servers/${serverId}/members/@me/permissions`,
      `/v1/servers/${serverId}/members?limit=100`,
      `/v1/servers/${serverId}/members?limit=100&after=${member}`,
      `/v1/channels/${channelId}/messages?limit=50`,
      `/v1/channels/${channelId}/messages?limit=50&before=${newest[1]!.id}`,
    ];
    for (const path of paths) {
      const unprepared = (await statementsOf(path)).filter((s) => !/^p_[0-9a-f]{16}$/.test(s) && s !== 'BEGIN' && s !== 'COMMIT');
      expect({ path, unprepared }).toEqual({ path, unprepared: [] });
    }
  });
});
