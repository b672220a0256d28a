import { beforeAll, describe, expect, it, vi } from 'vitest';
import { silentWav } from '../../services/media/test/audio.ts';
import { api, gateway, newUser, type TestUser } from './helpers.ts';

/** The player clock and queue through the gateway, with a real upload read by media for its length. */
let owner: TestUser;
let target: { channelId: string; serverId: string };

beforeAll(async () => {
  owner = await newUser('player');
  const server = (await api('POST', '/v1/servers', { user: owner, body: { name: 'Player clock' } })).body;
  const channels = (await api('GET', `/v1/servers/${server.id}/channels`, { user: owner })).body as { id: string; channelType: string }[];
  const voice = channels.find((c) => c.channelType === 'voice') as { id: string };
  expect((await api('POST', '/v1/voice/join', { user: owner, body: { channelId: voice.id } })).status).toBe(200);
  target = { channelId: voice.id, serverId: server.id };
});

async function uploadWav(seconds: number): Promise<string> {
  const form = new FormData();
  form.append('file', new Blob([silentWav(seconds)]), 'tone.wav');
  const res = await fetch(`${gateway}/v1/media`, {
    method: 'POST',
    headers: { authorization: `Bearer ${owner.token}`, 'x-forwarded-for': owner.ip },
    body: form,
  });
  expect(res.status).toBe(201);
  return ((await res.json()) as { url: string }).url;
}

describe('a music player that plays on its own', () => {
  it('takes the length of an uploaded audio file from media, and moves on when the track ends', async () => {
    const url = await uploadWav(1);
    const queued = await api('POST', '/v1/music/queue', { user: owner, body: { ...target, url, title: 'One second' } });
    expect(queued.status).toBe(201);
    expect(queued.body).toMatchObject({ current: null, queue: [{ url, durationMs: 1000 }] });

    const played = await api('POST', '/v1/music/play', { user: owner, body: { ...target, url: 'https://example.com/next.mp3' } });
    expect(played.body.current).toMatchObject({ url, durationMs: 1000 });
    expect(played.body.queue).toMatchObject([{ url: 'https://example.com/next.mp3', durationMs: null }]);

    // The clock runs in the music process: the one-second track ends without anyone skipping it.
    await vi.waitFor(
      async () => {
        const state = await api('GET', `/v1/music/${target.channelId}`, { user: owner });
        expect(state.body.current?.url).toBe('https://example.com/next.mp3');
      },
      { timeout: 10_000, interval: 100 },
    );
  });
});
