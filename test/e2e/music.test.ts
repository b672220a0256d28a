import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { api, newUser, type TestUser } from './helpers.ts';

// Input checks of the music routes through the gateway. Playing, skipping and the access rule with
// a user in a real voice channel are in music-voice.test.ts.
let user: TestUser;
beforeAll(async () => {
  user = await newUser('music');
});

const target = () => ({ channelId: randomUUID(), serverId: randomUUID() });

describe('music through the gateway', () => {
  it('answers 401 with an error body to a control or a read without a token', async () => {
    const play = await api('POST', '/v1/music/play', { body: { ...target(), url: 'https://example.com/a.mp3' } });
    const read = await api('GET', `/v1/music/${randomUUID()}`);
    for (const res of [play, read]) {
      expect(res.status).toBe(401);
      expect(res.body).toEqual({ error: expect.any(String) });
    }
  });

  it('answers 400 for a url that is not http or https', async () => {
    const res = await api('POST', '/v1/music/play', { user, body: { ...target(), url: 'file:///etc/passwd' } });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error: 'body.url: must be an http or https URL' });
  });

  it('answers 400 for a volume above 200 and for a channel id that is not a UUID', async () => {
    const volume = await api('POST', '/v1/music/volume', { user, body: { ...target(), volume: 201 } });
    const read = await api('GET', '/v1/music/not-a-uuid', { user });
    expect(volume.status).toBe(400);
    expect(volume.body).toEqual({ error: expect.stringMatching(/^body\.volume: /) });
    expect(read.status).toBe(400);
    expect(read.body).toEqual({ error: 'path.channelId: must be a UUID' });
  });
});
