import { serversRoutes as r, toMask } from '@chat/contracts';
import { contextOf, IDEMPOTENT, route } from '@chat/kit';
import type { FastifyInstance } from 'fastify';
import { banUser, listBans, unbanUser } from '../domain/bans.ts';
import type { Domain } from '../domain/context.ts';
import { kickMember, leaveServer, listMembers, myServerPermissions, updateNickname } from '../domain/members.ts';
import { createRole, deleteRole, listRoles, setMemberRole, updateRole } from '../domain/roles.ts';
import { noContent } from './no-content.ts';

export function memberRoutes(app: FastifyInstance, d: Domain): void {
  route(app, r.listMembers, async (req) => listMembers(d, contextOf(req), req.params.serverId, req.query));
  route(app, r.updateMyMember, async (req) => updateNickname(d, contextOf(req), req.params.serverId, req.user.id, req.body.nickname));
  route(app, r.updateMember, async (req) => updateNickname(d, contextOf(req), req.params.serverId, req.params.userId, req.body.nickname));
  route(app, r.leaveServer, async (req) => noContent(leaveServer(d, contextOf(req), req.params.serverId)));
  route(app, r.kickMember, async (req) => noContent(kickMember(d, contextOf(req), req.params.serverId, req.params.userId)));
  route(app, r.myServerPermissions, async (req) => ({
    permissions: toMask(await myServerPermissions(d, contextOf(req), req.params.serverId)),
  }));
}

export function roleRoutes(app: FastifyInstance, d: Domain): void {
  route(app, r.listRoles, async (req) => listRoles(d, contextOf(req), req.params.serverId));
  route(app, r.createRole, async (req) => createRole(d, contextOf(req), req.params.serverId, req.body), IDEMPOTENT);
  route(app, r.updateRole, async (req) => updateRole(d, contextOf(req), req.params.serverId, req.params.roleId, req.body));
  route(app, r.deleteRole, async (req) => noContent(deleteRole(d, contextOf(req), req.params.serverId, req.params.roleId)));
  route(app, r.assignRole, async (req) => noContent(setMemberRole(d, contextOf(req), req.params, true)));
  route(app, r.unassignRole, async (req) => noContent(setMemberRole(d, contextOf(req), req.params, false)));
}

export function banRoutes(app: FastifyInstance, d: Domain): void {
  route(app, r.listBans, async (req) => listBans(d, contextOf(req), req.params.serverId, req.query));
  route(app, r.banMember, async (req) => banUser(d, contextOf(req), req.params.serverId, req.params.userId, req.body?.reason ?? null));
  route(app, r.unbanMember, async (req) => noContent(unbanUser(d, contextOf(req), req.params.serverId, req.params.userId)));
}
