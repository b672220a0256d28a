import { defineScenario } from '../scenario.ts';

/** Typical queries: typos, aliases, a word of a long title, a prefix. */
const QUERIES = ['minecarft', 'gta v', 'zelda', 'call of duty', 'pokemon scarlet', 'witcher', 'stardew vally', 'counter'];

/** pg_trgm search over 1,519 games' names and aliases (GIN index), ranked in SQL. */
export const gamesSearch = defineScenario({
  name: 'games.search',
  summary: 'GET /v1/games?q=&limit=10 over the shipped catalogue, eight queries in turn, through the gateway and straight to social',
  direct: 'social',
  setup: async (ctx) => {
    const user = await ctx.registerUser('gamer');
    const probe = await ctx.api('GET', '/v1/games?q=minecarft&limit=1', { token: user.token });
    if (probe.status === 404) return { skip: 'GET /v1/games answered 404' };
    if (probe.status !== 200 || probe.body[0]?.name !== 'Minecraft') throw new Error(`GET /v1/games answered ${probe.status}`);
    return {
      requests: QUERIES.map((q) => ({
        method: 'GET' as const,
        path: `/v1/games?q=${encodeURIComponent(q)}&limit=10`,
        headers: { authorization: `Bearer ${user.token}` },
      })),
    };
  },
});
