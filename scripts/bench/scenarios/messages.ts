import { rawInsert } from '../references.ts';
import { defineScenario } from '../scenario.ts';

/**
 * The write path of chat: a member posts in a text channel (token check, permission snapshot,
 * channel write lock taken shared, one INSERT and its outbox row in one transaction). Sent through
 * the gateway and straight to guilds, so the table shows the edge's share of the cost.
 */
export const messagesPost = defineScenario({
  name: 'messages.post',
  summary: 'POST /v1/channels/{id}/messages by one member, through the gateway and straight to guilds',
  direct: 'guilds',
  reference: rawInsert,
  setup: async (ctx) => {
    const user = await ctx.registerUser('bench_msg');
    const server = await ctx.api('POST', '/v1/servers', { token: user.token, body: { name: 'Bench messages' } });
    if (server.status !== 201) return { skip: `guilds did not create a server (answered ${server.status})` };
    const channels = await ctx.api('GET', `/v1/servers/${server.body.id}/channels`, { token: user.token });
    const channel = (channels.body as { id: string; channelType: string }[]).find((c) => c.channelType === 'text');
    if (!channel) return { skip: 'the new server has no text channel' };
    const path = `/v1/channels/${channel.id}/messages`;
    const probe = await ctx.api('POST', path, { token: user.token, body: { content: 'probe' } });
    if (probe.status !== 201) return { skip: `guilds does not serve POST ${path} yet (answered ${probe.status})` };
    return {
      expectStatus: 201,
      requests: [
        {
          method: 'POST',
          path,
          headers: { authorization: `Bearer ${user.token}` },
          body: { content: 'a message of about the length people type in chat' },
        },
      ],
    };
  },
});
