import { postStatement, rawInsert } from '../references.ts';
import type { BenchContext, BenchRequest, ScenarioLoad, Skip } from '../scenario.ts';
import { defineScenario } from '../scenario.ts';

/** How many channels (and conversations, in social.ts) the spread scenarios post into. */
export const SPREAD = 64;

const CONTENT = 'a message of about the length people type in chat';

/**
 * A member's server with `count` text channels they post into (the new server's own first): the
 * posts of the load, or a reason to skip.
 */
async function postingLoad(ctx: BenchContext, count: number): Promise<ScenarioLoad | Skip> {
  const user = await ctx.registerUser('bench_msg');
  const server = await ctx.api('POST', '/v1/servers', { token: user.token, body: { name: 'Bench messages' } });
  if (server.status !== 201) return { skip: `guilds did not create a server (answered ${server.status})` };
  const listed = await ctx.api('GET', `/v1/servers/${server.body.id}/channels`, { token: user.token });
  const channelIds = (listed.body as { id: string; channelType: string }[]).filter((c) => c.channelType === 'text').map((c) => c.id);
  if (channelIds.length === 0) return { skip: 'the new server has no text channel' };
  while (channelIds.length < count) {
    const created = await ctx.api('POST', `/v1/servers/${server.body.id}/channels`, {
      token: user.token,
      body: { name: `bench-${channelIds.length}`, channelType: 'text' },
    });
    if (created.status !== 201) return { skip: `guilds did not create a channel (answered ${created.status})` };
    channelIds.push(created.body.id);
  }
  const paths = channelIds.slice(0, count).map((id) => `/v1/channels/${id}/messages`);
  const probe = await ctx.api('POST', paths[0] as string, { token: user.token, body: { content: 'probe' } });
  if (probe.status !== 201) return { skip: `guilds does not serve POST ${paths[0]} yet (answered ${probe.status})` };
  const request: BenchRequest = {
    method: 'POST',
    path: paths[0] as string,
    headers: { authorization: `Bearer ${user.token}` },
    body: { content: CONTENT },
  };
  return {
    expectStatus: 201,
    requests: [count > 1 ? { ...request, spread: paths.map((path) => ({ path, body: { content: CONTENT } })) } : request],
  };
}

/**
 * The write path of chat: a member posts in a text channel (token check, the member's access
 * snapshot, then one statement: the access version, slowmode, the channel's write lock taken
 * shared, the id, the INSERT and its outbox row). Sent through the gateway and straight to guilds,
 * so the table shows the edge's share of the cost. All connections post into one busy channel.
 * Compared with that statement alone (the spread posts with a raw INSERT): how much of a post's
 * cost is the database's own part.
 */
export const messagesPost = defineScenario({
  name: 'messages.post',
  summary: 'POST /v1/channels/{id}/messages by one member into one channel, through the gateway and straight to guilds',
  direct: 'guilds',
  reference: postStatement,
  setup: (ctx) => postingLoad(ctx, 1),
});

/** The same posts spread over 64 channels of the server, each send to the next channel in turn. */
export const messagesPostSpread = defineScenario({
  name: 'messages.post.spread',
  summary: `POST /v1/channels/{id}/messages by one member over ${SPREAD} channels, through the gateway and straight to guilds`,
  direct: 'guilds',
  reference: rawInsert,
  setup: (ctx) => postingLoad(ctx, SPREAD),
});
