import { type BenchContext, defineScenario, type Skip } from '../scenario.ts';

/** A member of a server with its default channels (the owner creates it, a second user joins). */
async function memberOfServer(ctx: BenchContext): Promise<{ token: string; serverId: string } | Skip> {
  const owner = await ctx.registerUser('owner');
  const created = await ctx.api('POST', '/v1/servers', { token: owner.token, body: { name: 'Bench guild', isPublic: true } });
  if (created.status !== 201) return { skip: `POST /v1/servers answered ${created.status}` };
  const member = await ctx.registerUser('member');
  const joined = await ctx.api('POST', `/v1/servers/${created.body.id}/join`, { token: member.token });
  if (joined.status !== 200) return { skip: `POST /v1/servers/{id}/join answered ${joined.status}` };
  return { token: member.token, serverId: created.body.id };
}

/** The channel list: membership, roles and every channel's overrides through the permission module. */
export const guildsChannels = defineScenario({
  name: 'guilds.channels',
  summary: 'GET /v1/servers/{id}/channels as a member (the channels they may view), through the gateway and straight to guilds',
  direct: 'guilds',
  setup: async (ctx) => {
    const member = await memberOfServer(ctx);
    if ('skip' in member) return member;
    return {
      requests: [{ method: 'GET', path: `/v1/servers/${member.serverId}/channels`, headers: { authorization: `Bearer ${member.token}` } }],
    };
  },
});

/** The server-level mask: one membership query and the pure permission algorithm. */
export const guildsPermissions = defineScenario({
  name: 'guilds.permissions',
  summary: 'GET /v1/servers/{id}/members/@me/permissions as a member, through the gateway and straight to guilds',
  direct: 'guilds',
  setup: async (ctx) => {
    const member = await memberOfServer(ctx);
    if ('skip' in member) return member;
    const path = `/v1/servers/${member.serverId}/members/@me/permissions`;
    return { requests: [{ method: 'GET', path, headers: { authorization: `Bearer ${member.token}` } }] };
  },
});
