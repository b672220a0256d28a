/**
 * How long the fan-out of one @everyone takes in a server of FANOUT_MEMBERS members (10,000 by
 * default): from the post through the gateway until social holds the last member's mention.
 * Starts the whole platform (own databases and bus namespace), inserts the members straight into
 * guilds' database, posts once, and polls social's database. Not part of `npm test`:
 *   npm run measure:fanout
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { createPool } from '@chat/kit';
import { resolveBacking, startIsolatedPlatform } from '@chat/testkit';

const MEMBERS = Number(process.env.FANOUT_MEMBERS ?? 10_000);
const POLL_MS = 10;

async function call(gateway: string, method: string, path: string, token?: string, body?: unknown) {
  const res = await fetch(`${gateway}${path}`, {
    method,
    headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  // biome-ignore lint/suspicious/noExplicitAny: a measuring script reads what it needs of each answer
  const json = (await res.json().catch(() => undefined)) as any;
  if (res.status >= 300) throw new Error(`${method} ${path} answered ${res.status}: ${JSON.stringify(json)}`);
  return json;
}

const resolved = await resolveBacking();
const run = await startIsolatedPlatform({
  backing: resolved.backing,
  label: 'fanout',
  baseEnv: { PATH: process.env.PATH, HOME: process.env.HOME, NODE_ENV: 'production', LOG_LEVEL: 'warn' },
  extraEnv: { auth: { EMAIL_VERIFICATION: 'false' } },
});
const guildsDb = createPool(run.databases.guilds, 2);
const socialDb = createPool(run.databases.social, 2);
try {
  const gateway = run.platform.urls.gateway;
  const name = `fanout_${randomBytes(4).toString('hex')}`;
  const owner = await call(gateway, 'POST', '/v1/auth/register', undefined, {
    username: name,
    email: `${name}@example.test`,
    password: 'fanout-pass-1',
  });
  const server = await call(gateway, 'POST', '/v1/servers', owner.token, { name: 'Fan-out' });
  const channel = await call(gateway, 'POST', `/v1/servers/${server.id}/channels`, owner.token, {
    name: 'announcements',
    channelType: 'text',
  });
  const members = Array.from({ length: MEMBERS }, () => randomUUID());
  await guildsDb.query('INSERT INTO members (server_id, user_id) SELECT $1, u FROM unnest($2::uuid[]) AS u', [server.id, members]);

  // A first post warms the path (token keys, pools, consumers) so that the figure is the fan-out's.
  await call(gateway, 'POST', `/v1/channels/${channel.id}/messages`, owner.token, { content: 'warm-up' });

  const started = performance.now();
  const message = await call(gateway, 'POST', `/v1/channels/${channel.id}/messages`, owner.token, { content: '@everyone fan-out' });
  const answered = performance.now() - started;
  let counted = 0;
  while (counted < MEMBERS) {
    if (performance.now() - started > 120_000) throw new Error(`only ${counted} of ${MEMBERS} mentions after 120 s`);
    await new Promise((r) => setTimeout(r, POLL_MS));
    const { rows } = await socialDb.query<{ n: number }>('SELECT count(*)::int AS n FROM channel_mentions WHERE message_id = $1', [
      message.id,
    ]);
    counted = rows[0]?.n ?? 0;
  }
  const total = performance.now() - started;
  // Guilds' share: from the message's own event to the last mention batch relayed to the bus.
  const batches = await guildsDb.query<{ n: number; ms: number }>(
    `SELECT count(*)::int AS n, (extract(epoch FROM max(b.sent_at) - min(m.created_at)) * 1000)::int AS ms
     FROM outbox b, outbox m WHERE b.subject = 'guilds.message.mentioned' AND m.subject = 'guilds.message.created' AND m.payload->'data'->>'id' = $1`,
    [message.id],
  );
  const feed = await socialDb.query<{ n: number }>('SELECT count(*)::int AS n FROM notifications WHERE message_id = $1', [message.id]);
  process.stdout.write(
    `${JSON.stringify({ members: MEMBERS, postAnsweredMs: Math.round(answered), lastMentionMs: Math.round(total), mentionBatches: batches.rows[0]?.n, batchesRelayedMs: batches.rows[0]?.ms, feedEntries: feed.rows[0]?.n })}\n`,
  );
} finally {
  await guildsDb.end();
  await socialDb.end();
  await run.stop();
  await resolved.stop();
}
