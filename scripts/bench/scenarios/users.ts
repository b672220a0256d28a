import { argon2Verify, edgePkSelect } from '../references.ts';
import { defineScenario } from '../scenario.ts';

/** The whole edge on an authenticated read: token check (cached), one Redis script, the proxy hop. */
export const usersMe = defineScenario({
  name: 'users.me',
  summary: 'GET /v1/users/@me with a bearer token, through the gateway and straight to auth',
  direct: 'auth',
  reference: edgePkSelect,
  setup: async (ctx) => {
    const user = await ctx.registerUser('me');
    return { requests: [{ method: 'GET', path: '/v1/users/@me', headers: { authorization: `Bearer ${user.token}` } }] };
  },
});

/**
 * Logins are CPU-bound by design (argon2id, m=19 MiB, t=2, p=1): a few at a time saturate both
 * cores, more only queue. The reference is auth's own password check alone, so the row shows what
 * the HTTP, the lookup and the session around it cost. Each request comes from its own client IP,
 * so the Auth tier (5 per 60 s per IP) is not what is measured.
 */
export const authLogin = defineScenario({
  name: 'auth.login',
  summary: 'POST /v1/auth/login with the right password, through the gateway and straight to auth',
  direct: 'auth',
  connections: 4,
  reference: argon2Verify,
  setup: async (ctx) => {
    const user = await ctx.registerUser('login');
    return { requests: [{ method: 'POST', path: '/v1/auth/login', body: { login: user.username, password: user.password } }] };
  },
});
