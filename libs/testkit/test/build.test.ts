import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { buildBundles, bundlePath, NODE_FLAGS } from '../src/build.ts';

const dist = mkdtempSync(`${tmpdir()}/bundles-`);
afterAll(() => rmSync(dist, { recursive: true, force: true }));

describe('the bundles', () => {
  it('inline the workspace and import every package from a file that exists', async () => {
    await buildBundles(['media', 'gateway'], dist);
    for (const name of ['media', 'gateway'] as const) {
      const bundle = readFileSync(bundlePath(name, dist), 'utf8');
      const imports = [...bundle.matchAll(/^import .* from "([^"]+)";$/gm)].map((m) => m[1] as string);
      expect(imports.length).toBeGreaterThan(5);
      expect(imports.filter((i) => i.startsWith('@chat/') || i.endsWith('.ts'))).toEqual([]);
      const missing = imports.filter((i) => i.startsWith('.') && !existsSync(resolve(dirname(bundlePath(name, dist)), i)));
      expect(missing).toEqual([]);
    }
  });

  it('point import.meta.url of each source at the source file, so that migrations are found', async () => {
    await buildBundles(['media'], dist);
    const bundle = readFileSync(bundlePath('media', dist), 'utf8');
    const sources = [...bundle.matchAll(/new URL\("([^"]+\.ts)", import\.meta\.url\)/g)].map((m) => m[1] as string);
    expect(sources.length).toBeGreaterThan(0);
    for (const source of sources) expect(existsSync(resolve(dirname(bundlePath('media', dist)), source)), source).toBe(true);
  });

  it('write each process its Node flags beside its bundle', async () => {
    await buildBundles(['media', 'music'], dist);
    expect(readFileSync(`${dirname(bundlePath('media', dist))}/node-flags`, 'utf8').trim()).toBe(NODE_FLAGS.media.join(' '));
    expect(NODE_FLAGS.media).toContain('--max-semi-space-size=1');
    expect(readFileSync(`${dirname(bundlePath('music', dist))}/node-flags`, 'utf8').trim()).toBe('');
  });
});
