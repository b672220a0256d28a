import { v7 as uuidv7 } from 'uuid';
import { afterAll, describe, expect, it } from 'vitest';
import { startMusicTest } from './harness.ts';

/** A track's title (or its url, shown when it has none) follows the rule of every shown name. */

const t = await startMusicTest();
afterAll(() => t.close());

const alice = uuidv7();

async function queue(payload: Record<string, unknown>) {
  const res = await t.app.inject({ method: 'POST', url: '/v1/music/queue', headers: await t.auth(alice), payload });
  return { status: res.statusCode, body: res.json() };
}

const storedTracks = async (channelId: string) =>
  (await t.runtime.pool.query('SELECT url, title FROM tracks WHERE channel_id = $1', [channelId])).rows;

describe('track titles and urls', () => {
  it('refuses a title with a bidi override, a line break, a control character or nothing visible, and stores nothing', async () => {
    const channel = t.guilds.voiceChannelWith([alice]);
    const target = { channelId: channel.id, serverId: channel.serverId, url: 'https://example.com/a.mp3' };
    for (const title of ['\u202Eevil', 'two\nlines', 'bell\u0007', 'esc\u001b[2J', '\u200B', '\u3164', '\uFE0F\uFE0F']) {
      expect(await queue({ ...target, title }), JSON.stringify(title)).toEqual({
        status: 400,
        body: { error: expect.stringMatching(/^body\.title: /) },
      });
    }
    expect(await storedTracks(channel.id)).toEqual([]);
  });

  it('refuses a url with a bidi override, a line break or a tab, and stores nothing', async () => {
    const channel = t.guilds.voiceChannelWith([alice]);
    const target = { channelId: channel.id, serverId: channel.serverId };
    for (const url of ['https://example.com/\u202Egpj.mp3', 'https://example.com/a\n.mp3', 'https://exa\tmple.com/a.mp3']) {
      expect(await queue({ ...target, url }), JSON.stringify(url)).toEqual({
        status: 400,
        body: { error: expect.stringMatching(/^body\.url: /) },
      });
    }
    expect(await storedTracks(channel.id)).toEqual([]);
  });

  it('keeps a title in NFC, trimmed', async () => {
    const channel = t.guilds.voiceChannelWith([alice]);
    const queued = await queue({
      channelId: channel.id,
      serverId: channel.serverId,
      url: 'https://example.com/a.mp3',
      title: '  Cafe\u0301  ',
    });
    expect(queued.status).toBe(201);
    expect(await storedTracks(channel.id)).toEqual([{ url: 'https://example.com/a.mp3', title: 'Caf\u00e9' }]);
  });
});
