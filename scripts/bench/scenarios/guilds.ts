import { edgePkSelect } from '../references.ts';
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
  reference: edgePkSelect,
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
  reference: edgePkSelect,
  setup: async (ctx) => {
    const member = await memberOfServer(ctx);
    if ('skip' in member) return member;
    const path = `/v1/servers/${member.serverId}/members/@me/permissions`;
    return { requests: [{ method: 'GET', path, headers: { authorization: `Bearer ${member.token}` } }] };
  },
});

/** Members in the members-page server: ten pages of 100, so the page read is one of many. */
const MEMBER_COUNT = 1_000;
/** Registrations run this many at a time (each costs auth an argon2id hash). */
const SETUP_CONCURRENCY = 8;

/** Runs `task` for 0..count-1, `SETUP_CONCURRENCY` at a time. */
async function inBatches(count: number, task: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < count) await task(next++);
  };
  await Promise.all(Array.from({ length: SETUP_CONCURRENCY }, worker));
}

/** A page of 100 members (by user id) of a server with 1,000: the member check and one index range. */
export const guildsMembers = defineScenario({
  name: 'guilds.members',
  summary: `GET /v1/servers/{id}/members?limit=100 of a server with ${MEMBER_COUNT} members, through the gateway and straight to guilds`,
  direct: 'guilds',
  reference: edgePkSelect,
  setup: async (ctx) => {
    const member = await memberOfServer(ctx);
    if ('skip' in member) return member;
    await inBatches(MEMBER_COUNT - 2, async () => {
      const user = await ctx.registerUser('crowd');
      const joined = await ctx.api('POST', `/v1/servers/${member.serverId}/join`, { token: user.token });
      if (joined.status !== 200) throw new Error(`POST /v1/servers/{id}/join answered ${joined.status}`);
    });
    const path = `/v1/servers/${member.serverId}/members?limit=100`;
    return { requests: [{ method: 'GET', path, headers: { authorization: `Bearer ${member.token}` } }] };
  },
});

/** Messages a channel holds before its newest page is read: the page is the first 50 of many. */
const MESSAGE_COUNT = 200;

/** The newest page of 50 messages of a text channel: READ_MESSAGE_HISTORY in the channel, one index range. */
export const guildsMessages = defineScenario({
  name: 'guilds.messages',
  summary: `GET /v1/channels/{id}/messages?limit=50 of a channel with ${MESSAGE_COUNT} messages, as a member, through the gateway and straight to guilds`,
  direct: 'guilds',
  reference: edgePkSelect,
  setup: async (ctx) => {
    const member = await memberOfServer(ctx);
    if ('skip' in member) return member;
    const channels = await ctx.api('GET', `/v1/servers/${member.serverId}/channels`, { token: member.token });
    const channel = (channels.body as { id: string; channelType: string }[]).find((c) => c.channelType === 'text');
    if (!channel) return { skip: 'the new server has no text channel' };
    const path = `/v1/channels/${channel.id}/messages`;
    await inBatches(MESSAGE_COUNT, async (i) => {
      const posted = await ctx.api('POST', path, { token: member.token, body: { content: `message ${i} of the paged channel` } });
      if (posted.status !== 201) throw new Error(`POST ${path} answered ${posted.status}`);
    });
    return { requests: [{ method: 'GET', path: `${path}?limit=50`, headers: { authorization: `Bearer ${member.token}` } }] };
  },
});
