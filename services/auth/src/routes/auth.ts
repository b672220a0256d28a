import { authRoutes } from '@chat/contracts';
import { contextOf, idempotencyKeyOf, REPLAYED_HEADER, route } from '@chat/kit';
import type { FastifyInstance } from 'fastify';
import type { AuthDomainDeps } from '../deps.ts';
import * as accounts from '../domain/accounts.ts';
import { forgotPassword, resetPassword } from '../domain/password-reset.ts';
import * as sessions from '../domain/sessions.ts';

/** Registration, login, tokens and password reset: /v1/auth/*. */
export function authHttpRoutes(app: FastifyInstance, deps: AuthDomainDeps): void {
  route(app, authRoutes.register, async (req, reply) => {
    const outcome = await accounts.register(deps, req.body, req.id, idempotencyKeyOf(req));
    if (outcome.replayed) reply.header(REPLAYED_HEADER, 'true');
    if (outcome.kind === 'account') return outcome.pair;
    // Email verification is on: the second success status of this contract.
    return reply.code(202).send({ pendingId: outcome.pendingId });
  });

  route(app, authRoutes.verifyEmail, async (req) => accounts.verifyEmail(deps, req.body.pendingId, req.body.code, req.id));

  route(app, authRoutes.resendCode, async (req) => {
    await accounts.resendCode(deps, req.body.pendingId);
    return {};
  });

  route(app, authRoutes.login, async (req) => accounts.login(deps, req.body));
  route(app, authRoutes.refresh, async (req) => sessions.refresh(deps, req.body.refreshToken));

  route(app, authRoutes.logout, async (req) => {
    await sessions.logout(deps, contextOf(req).userId, req.body.refreshToken);
    return undefined;
  });

  route(app, authRoutes.forgotPassword, async (req) => {
    // The mail goes out after the answer: its failure is logged under this request's id.
    await forgotPassword({ ...deps, log: contextOf(req).log }, req.body.email);
    return {};
  });

  route(app, authRoutes.resetPassword, async (req) => {
    await resetPassword(deps, req.body.email, req.body.code, req.body.password);
    return {};
  });

  route(app, authRoutes.jwks, async (_req, reply) => {
    // Short enough that a newly added key is seen soon; verifiers also refetch on an unknown kid.
    reply.header('cache-control', 'public, max-age=300, stale-while-revalidate=60');
    return deps.keys.jwks;
  });
}
