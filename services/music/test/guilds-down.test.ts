import { STREAMS, VOICE_RPC } from '@chat/contracts';
import { loadConfig } from '@chat/kit';
import { createTestIssuer, createTestRuntime } from '@chat/testkit';
import { v7 as uuidv7 } from 'uuid';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { buildApp } from '../src/app.ts';
import { MusicConfig } from '../src/config.ts';

// No stand-in guilds here: this file is about what music answers when guilds is absent, slow or
// broken. The misbehaving responders below are raw NATS subscriptions in this file's namespace.
const runtime = await createTestRuntime({
  service: 'music',
  migrationsDir: new URL('../migrations', import.meta.url).pathname,
  stream: STREAMS.music,
  backing: inject('backing'),
});
const issuer = await createTestIssuer();
const config = loadConfig(MusicConfig, runtime.env);
const tokens = issuer.verifier();
const app = await buildApp({ ...runtime, config, tokens });
afterAll(async () => {
  await app.close();
  await runtime.close();
});

async function play() {
  return app.inject({
    method: 'POST',
    url: '/v1/music/play',
    headers: { authorization: `Bearer ${await issuer.sign(uuidv7())}` },
    payload: { channelId: uuidv7(), serverId: uuidv7(), url: 'https://example.com/a.mp3' },
  });
}

async function nothingStored() {
  const { rows } = await runtime.pool.query('SELECT (SELECT count(*) FROM players) AS players, (SELECT count(*) FROM outbox) AS events');
  return rows[0].players === 0 && rows[0].events === 0;
}

describe('when guilds cannot say who may control', () => {
  it('answers 503 when no guilds instance listens', async () => {
    const res = await play();
    expect(res.statusCode).toBe(503);
    expect(res.json()).toEqual({ error: 'Service unavailable' });
    expect(await nothingStored()).toBe(true);
  });

  it('answers 502 without details when guilds answers something that is not a voice access reply', async () => {
    const sub = runtime.bus.nc.subscribe(runtime.bus.subject(VOICE_RPC.access), {
      callback: (_err, msg) => {
        msg.respond(JSON.stringify({ channel: { id: 'not-a-uuid' } }));
      },
    });
    try {
      const res = await play();
      expect(res.statusCode).toBe(502);
      expect(res.json()).toEqual({ error: 'Bad gateway' });
      expect(await nothingStored()).toBe(true);
    } finally {
      sub.unsubscribe();
    }
  });

  it('answers 504 when guilds does not answer in time', async () => {
    const sub = runtime.bus.nc.subscribe(runtime.bus.subject(VOICE_RPC.access), { callback: () => {} });
    try {
      const res = await play();
      expect(res.statusCode).toBe(504);
      expect(res.json()).toEqual({ error: 'Gateway timeout' });
      expect(await nothingStored()).toBe(true);
    } finally {
      sub.unsubscribe();
    }
  });
});
