import { rawInsert } from '../references.ts';
import { defineScenario } from '../scenario.ts';

/** A write with its read-model lookup and outbox event: one transaction per message. */
export const dmPost = defineScenario({
  name: 'dm.post',
  summary: 'POST /v1/dm/messages to a 1:1 conversation, through the gateway and straight to social',
  direct: 'social',
  reference: rawInsert,
  setup: async (ctx) => {
    const [sender, recipient] = [await ctx.registerUser('dm_a'), await ctx.registerUser('dm_b')];
    // Social learns of new users from auth's events: give its read-model a moment to catch up.
    let conversation = await ctx.api('POST', '/v1/dm/conversations', { token: sender.token, body: { userIds: [recipient.id] } });
    for (let tries = 0; conversation.status === 404 && tries < 50; tries++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      conversation = await ctx.api('POST', '/v1/dm/conversations', { token: sender.token, body: { userIds: [recipient.id] } });
    }
    if (conversation.status !== 201 && conversation.status !== 200)
      return { skip: `POST /v1/dm/conversations answered ${conversation.status}` };
    return {
      expectStatus: 201,
      requests: [
        {
          method: 'POST',
          path: '/v1/dm/messages',
          headers: { authorization: `Bearer ${sender.token}` },
          body: { conversationId: conversation.body.id, content: 'bench message' },
        },
      ],
    };
  },
});
