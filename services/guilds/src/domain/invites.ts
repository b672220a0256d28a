import { randomInt } from 'node:crypto';
import type { Server } from '@chat/contracts';
import { type Invite, type InvitePreview, MANAGE_SERVER, Permission } from '@chat/contracts';
import { forbidden, type KeyPage, notFound, withRetryingTx } from '@chat/kit';
import { isBanned } from '../db/bans.ts';
import { consumeInvite, deleteInvite, findInvite, findUsableInvite, insertInvite, listInvites as listInviteRows } from '../db/invites.ts';
import { findServer, lockServer, toServer } from '../db/servers.ts';
import { loadServerAccess, memberAccess, requirePermission } from './access.ts';
import { type Ctx, type Domain, emit } from './context.ts';
import { addMember } from './membership.ts';
import { holdEntrance } from './system-messages.ts';

const CODE_ALPHABET = 'ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789';
const CODE_LENGTH = 10;

/** 10 characters from a 57-letter alphabet by a CSPRNG: about 58 bits, not guessable. */
export function newInviteCode(): string {
  return Array.from({ length: CODE_LENGTH }, () => CODE_ALPHABET[randomInt(CODE_ALPHABET.length)]).join('');
}

/** Unknown, expired and used-up codes are the same 404, so a code's history is not revealed. */
const unknownInvite = () => notFound('Invite');

export function createInvite(d: Domain, ctx: Ctx, serverId: string, opts: { maxUses: number; maxAgeSeconds: number }): Promise<Invite> {
  return withRetryingTx(d.pool, async (tx) => {
    const access = await memberAccess(tx, serverId, ctx.userId);
    requirePermission(access.permissions, Permission.CREATE_INSTANT_INVITE, 'CREATE_INSTANT_INVITE');
    const invite = await insertInvite(tx, { code: newInviteCode(), serverId, inviterId: ctx.userId, ...opts });
    await emit(tx, ctx, 'guilds.invite.created', invite);
    return invite;
  });
}

export async function listInvites(d: Domain, ctx: Ctx, serverId: string, page: KeyPage): Promise<Invite[]> {
  const access = await memberAccess(d.pool, serverId, ctx.userId);
  requirePermission(access.permissions, MANAGE_SERVER, 'MANAGE_SERVER');
  return listInviteRows(d.pool, serverId, page);
}

/** Its creator may revoke an invite; anyone else needs MANAGE_SERVER. Non-members see a 404. */
export async function revokeInvite(d: Domain, ctx: Ctx, code: string): Promise<void> {
  await withRetryingTx(d.pool, async (tx) => {
    const invite = await findInvite(tx, code);
    const access = invite && (await loadServerAccess(tx, invite.serverId, ctx.userId));
    if (!invite || !access?.isMember) throw unknownInvite();
    if (invite.inviterId !== ctx.userId) requirePermission(access.permissions, MANAGE_SERVER, 'MANAGE_SERVER');
    await deleteInvite(tx, code);
    await emit(tx, ctx, 'guilds.invite.deleted', { code, serverId: invite.serverId });
  });
}

export async function previewInvite(d: Domain, code: string): Promise<InvitePreview> {
  const invite = await findUsableInvite(d.pool, code);
  const server = invite && (await findServer(d.pool, invite.serverId));
  if (!invite || !server) throw unknownInvite();
  return {
    code,
    server: {
      id: server.id,
      name: server.name,
      iconUrl: server.icon_url,
      description: server.description,
      memberCount: server.member_count,
    },
    expiresAt: invite.expiresAt,
  };
}

/**
 * Joins through an invite, private servers and those requiring approval included (an invite is
 * someone's consent). The use is taken in the same transaction, so a failed join takes none.
 */
export function acceptInvite(d: Domain, ctx: Ctx, code: string): Promise<Server> {
  return withRetryingTx(d.pool, async (tx) => {
    // The server's locks first, in the order its deletion takes them (it then deletes the invites).
    const found = await findInvite(tx, code);
    if (!found) throw unknownInvite();
    await holdEntrance(tx, found.serverId);
    // Taken like every join, so a concurrent ban of this user cannot be overtaken.
    const server = await lockServer(tx, found.serverId);
    const invite = server ? await consumeInvite(tx, code) : undefined;
    if (!server || !invite) throw unknownInvite();
    if (await isBanned(tx, invite.serverId, ctx.userId)) throw forbidden('You are banned from this server');
    await addMember(tx, ctx, invite.serverId, ctx.userId);
    return toServer(server);
  });
}
