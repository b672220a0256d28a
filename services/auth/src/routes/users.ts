import { authRoutes } from '@chat/contracts';
import { contextOf, route } from '@chat/kit';
import type { FastifyInstance } from 'fastify';
import { toSelfUser, toUser } from '../db/users.ts';
import type { AuthDomainDeps } from '../deps.ts';
import { badgeCatalogue, badgePolicy, badgesOfUser } from '../domain/badges.ts';
import { getUser, updateMe } from '../domain/profile.ts';

/** Profiles and badges: /v1/users/*, /v1/badges/*. */
export function userHttpRoutes(app: FastifyInstance, deps: AuthDomainDeps): void {
  const policy = badgePolicy(deps.config);
  route(app, authRoutes.me, async (req) => toSelfUser(await getUser(deps, req.user.id), policy));
  route(app, authRoutes.updateMe, async (req) => toSelfUser(await updateMe(deps, contextOf(req), req.body), policy));
  // The same write as PATCH /users/@me, limited to the presence fields.
  route(app, authRoutes.updatePresence, async (req) => toSelfUser(await updateMe(deps, contextOf(req), req.body), policy));
  route(app, authRoutes.user, async (req) => toUser(await getUser(deps, req.params.id), policy));
  route(app, authRoutes.badges, async () => badgeCatalogue());
  route(app, authRoutes.userBadges, (req) => badgesOfUser(deps, req.params.id));
  route(app, authRoutes.founderStatus, async (req) => ({ isFounder: (await getUser(deps, req.user.id)).is_founder }));
}
