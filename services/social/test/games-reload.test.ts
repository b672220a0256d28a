import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadCatalogue } from '../src/domain/game-catalogue.ts';
import { createHarness } from './harness.ts';

const h = await createHarness();
const dir = await mkdtemp(join(tmpdir(), 'games-reload-'));
afterAll(async () => {
  await h.close();
  await rm(dir, { recursive: true, force: true });
});
beforeAll(async () => {
  await loadCatalogue(h.runtime.pool);
});

const rows = async (sql: string, params: unknown[] = []) => (await h.runtime.pool.query(sql, params)).rows;

/** Runs the operator command exactly as `npm run games:reload -w @chat/social -- <file>` does. */
async function reload(file: string): Promise<{ code: number; output: string }> {
  try {
    const { stdout, stderr } = await promisify(execFile)(process.execPath, ['--import', 'tsx', 'src/commands/reload-games.ts', file], {
      cwd: new URL('..', import.meta.url).pathname,
      env: { ...process.env, DATABASE_URL: h.runtime.env.DATABASE_URL, LOG_LEVEL: 'info' },
      timeout: 60_000,
    });
    return { code: 0, output: stdout + stderr };
  } catch (err) {
    const failed = err as { code: number; stdout: string; stderr: string };
    return { code: failed.code, output: failed.stdout + failed.stderr };
  }
}

describe('the reload command', () => {
  it('replaces the catalogue from a file, keeping the ids of games that stay and the names of activities on games that go', async () => {
    const [minecraft] = await rows("SELECT id FROM games WHERE name = 'Minecraft'");
    const [hades] = await rows("SELECT id FROM games WHERE name = 'Hades'");
    const player = await h.addUser();
    expect((await h.call(player, 'PUT', '/v1/users/@me/activity', { gameId: hades.id })).status).toBe(200);

    const file = join(dir, 'small.json');
    await writeFile(
      file,
      JSON.stringify([
        { name: 'Minecraft', aliases: ['MC', 'Blocks'], releaseYear: 2011 },
        { name: 'Quintessence Quest', aliases: ['QQ'], executables: ['qq.exe'], releaseYear: 2030 },
      ]),
    );
    const outcome = await reload(file);
    expect(outcome.code).toBe(0);
    expect(outcome.output).toContain('game catalogue reloaded');

    expect(await rows('SELECT name, aliases FROM games ORDER BY name')).toEqual([
      { name: 'Minecraft', aliases: ['MC', 'Blocks'] },
      { name: 'Quintessence Quest', aliases: ['QQ'] },
    ]);
    expect((await rows("SELECT id FROM games WHERE name = 'Minecraft'"))[0].id).toBe(minecraft.id);
    expect(await rows('SELECT game_id, name FROM activities WHERE user_id = $1', [player.id])).toEqual([{ game_id: null, name: 'Hades' }]);
    const found = await h.call(player, 'GET', '/v1/games?q=blocks');
    expect(found.body.map((g: { name: string }) => g.name)).toEqual(['Minecraft']);
    expect((await h.call(player, 'GET', '/v1/games?q=quintesence')).body[0]).toMatchObject({
      name: 'Quintessence Quest',
      executables: ['qq.exe'],
    });
  });

  it('refuses a broken file with exit code 1 and leaves the catalogue as it was', async () => {
    const before = await rows('SELECT id, name FROM games ORDER BY name');
    const file = join(dir, 'broken.json');
    await writeFile(file, JSON.stringify([{ name: 'Dup' }, { name: 'dup!' }]));
    const outcome = await reload(file);
    expect(outcome.code).toBe(1);
    expect(outcome.output).toContain('appears twice');
    await writeFile(file, '[{"name": ');
    expect((await reload(file)).code).toBe(1);
    expect(await rows('SELECT id, name FROM games ORDER BY name')).toEqual(before);
  });
});
