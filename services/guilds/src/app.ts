import { createHttpApp, mediaGrantIssuer, registerHealth } from '@chat/kit';
import type { FastifyInstance } from 'fastify';
import type { GuildsDeps } from './deps.ts';
import { ChannelLists } from './domain/channel-list.ts';
import type { Domain } from './domain/context.ts';
import { AccessSnapshots } from './domain/post-access.ts';
import { categoryRoutes } from './routes/categories.ts';
import { channelRoutes } from './routes/channels.ts';
import { inviteRoutes, joinRequestRoutes } from './routes/invites.ts';
import { banRoutes, memberRoutes, roleRoutes } from './routes/members.ts';
import { messageRoutes, webhookRoutes } from './routes/messages.ts';
import { searchRoutes } from './routes/search.ts';
import { serverRoutes } from './routes/servers.ts';
import { voiceRoutes } from './routes/voice.ts';

/** The route modules of the service; a new area (messages, voice) is one more entry. */
const ROUTE_MODULES: ((app: FastifyInstance, d: Domain) => void)[] = [
  serverRoutes,
  categoryRoutes,
  channelRoutes,
  memberRoutes,
  roleRoutes,
  banRoutes,
  inviteRoutes,
  joinRequestRoutes,
  messageRoutes,
  webhookRoutes,
  voiceRoutes,
  searchRoutes,
];

/** The guilds service's HTTP app; tests build it and call inject() without a port. */
export async function buildApp(deps: GuildsDeps): Promise<FastifyInstance> {
  const app = createHttpApp({
    log: deps.log,
    tokens: deps.tokens,
    pool: deps.pool,
  });
  registerHealth(app, deps.checks);
  const domain: Domain = {
    pool: deps.pool,
    bus: deps.bus,
    voiceStateTtlSeconds: deps.config.VOICE_STATE_TTL_SECONDS,
    issueMediaGrant: mediaGrantIssuer(deps.config),
    accessSnapshots: new AccessSnapshots(),
    channelLists: new ChannelLists(),
  };
  for (const register of ROUTE_MODULES) register(app, domain);
  return app;
}
