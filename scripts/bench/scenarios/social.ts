import { rawInsert } from '../references.ts';
import type { ApiAnswer, BenchContext, BenchUser, ScenarioLoad, Skip } from '../scenario.ts';
import { defineScenario } from '../scenario.ts';
import { SPREAD } from './messages.ts';

/** Opens a conversation; social learns of new users from auth's events, so it retries while they are unknown. */
async function openConversation(ctx: BenchContext, sender: BenchUser, userIds: string[]): Promise<ApiAnswer> {
  let conversation = await ctx.api('POST', '/v1/dm/conversations', { token: sender.token, body: { userIds } });
  for (let tries = 0; conversation.status === 404 && tries < 50; tries++) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    conversation = await ctx.api('POST', '/v1/dm/conversations', { token: sender.token, body: { userIds } });
  }
  return conversation;
}

/**
 * The sender's posts: into their 1:1 conversation with one other user (`count` 1), or spread over
 * `count` group conversations with the same two others (each send to the next one in turn).
 */
async function dmLoad(ctx: BenchContext, count: number): Promise<ScenarioLoad | Skip> {
  const sender = await ctx.registerUser('dm_a');
  const others = count === 1 ? [await ctx.registerUser('dm_b')] : [await ctx.registerUser('dm_b'), await ctx.registerUser('dm_c')];
  const conversationIds: string[] = [];
  while (conversationIds.length < count) {
    const conversation = await openConversation(
      ctx,
      sender,
      others.map((o) => o.id),
    );
    if (conversation.status !== 201 && conversation.status !== 200)
      return { skip: `POST /v1/dm/conversations answered ${conversation.status}` };
    conversationIds.push(conversation.body.id);
  }
  const bodies = conversationIds.map((conversationId) => ({ conversationId, content: 'bench message' }));
  return {
    expectStatus: 201,
    requests: [
      {
        method: 'POST',
        path: '/v1/dm/messages',
        headers: { authorization: `Bearer ${sender.token}` },
        body: bodies[0],
        ...(count > 1 ? { spread: bodies.map((body) => ({ path: '/v1/dm/messages', body })) } : {}),
      },
    ],
  };
}

/** A write with its access checks and outbox event: one statement per message, into one conversation. */
export const dmPost = defineScenario({
  name: 'dm.post',
  summary: 'POST /v1/dm/messages to a 1:1 conversation, through the gateway and straight to social',
  direct: 'social',
  reference: rawInsert,
  setup: (ctx) => dmLoad(ctx, 1),
});

/** The same posts spread over 64 group conversations of three. */
export const dmPostSpread = defineScenario({
  name: 'dm.post.spread',
  summary: `POST /v1/dm/messages over ${SPREAD} group conversations, through the gateway and straight to social`,
  direct: 'social',
  reference: rawInsert,
  setup: (ctx) => dmLoad(ctx, SPREAD),
});
