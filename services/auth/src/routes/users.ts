import { authRoutes } from '@chat/contracts';
import { contextOf, route } from '@chat/kit';
import type { FastifyInstance } from 'fastify';
import type { AuthDeps, AuthDomainDeps } from '../deps.ts';
import { badgeCatalogue, badgesOfUser } from '../domain/badges.ts';
import { founderStatus, getMe, getPublicUser, updateMyProfile } from '../domain/profile.ts';

/** Profiles and badges: /v1/users/*, /v1/badges/*. */
export function userHttpRoutes(app: FastifyInstance, deps: AuthDomainDeps & Pick<AuthDeps, 'bus'>): void {
  route(app, authRoutes.me, async (req) => getMe(deps, req.user.id));
  route(app, authRoutes.updateMe, async (req) => updateMyProfile(deps, contextOf(req), req.body));
  route(app, authRoutes.user, async (req) => getPublicUser(deps, contextOf(req), req.params.id));
  // The same write as PATCH /users/@me, limited to the presence fields.
  route(app, authRoutes.updatePresence, async (req) => updateMyProfile(deps, contextOf(req), req.body));
  route(app, authRoutes.badges, async () => badgeCatalogue());
  route(app, authRoutes.userBadges, (req) => badgesOfUser(deps, req.params.id));
  route(app, authRoutes.founderStatus, async (req) => founderStatus(deps, req.user.id));
}
