import { defineScenario } from '../scenario.ts';

/** The whole edge on an authenticated read: token check (cached), one Redis script, the proxy hop. */
export const usersMe = defineScenario({
  name: 'users.me',
  summary: 'GET /v1/users/@me with a bearer token, through the gateway and straight to auth',
  direct: 'auth',
  setup: async (ctx) => {
    const user = await ctx.registerUser('me');
    return { requests: [{ method: 'GET', path: '/v1/users/@me', headers: { authorization: `Bearer ${user.token}` } }] };
  },
});
