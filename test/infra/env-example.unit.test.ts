import { readFileSync } from 'node:fs';
import { loadConfig } from '@chat/kit';
import { DEFAULT_PORTS } from '@chat/testkit';
import { describe, expect, it } from 'vitest';
import type { z } from 'zod';
import { BenchSettings } from '../../scripts/bench/settings.ts';
import { CONFIG_SCHEMAS, PROCESSES, requiredKeys } from './process-env.ts';

// .env.example documents every variable with its default. This keeps it honest as schemas change:
// every variable a process, the launcher, the test harness or the bench reads is listed, nothing
// listed is unknown, and every value shown is the actual default.

const ROOT = new URL('../../', import.meta.url);
const source = (path: string) => readFileSync(new URL(path, ROOT), 'utf8');

/** Sections (`# ==== name ...`) of .env.example with their `NAME=value` lines, commented out or not. */
function sections(text: string): Map<string, Map<string, string>> {
  const found = new Map<string, Map<string, string>>();
  let current: Map<string, string> | undefined;
  for (const line of text.split('\n')) {
    const header = /^# ==== (\S+)/.exec(line);
    if (header) {
      current = new Map();
      found.set(header[1]!, current);
    }
    const variable = /^#? ?([A-Z][A-Z0-9_]*)=(.*)$/.exec(line);
    if (variable) {
      expect(current, `${variable[1]} is listed before any section`).toBeDefined();
      expect(current!.has(variable[1]!), `${variable[1]} is listed twice in a section`).toBe(false);
      current!.set(variable[1]!, variable[2]!);
    }
  }
  return found;
}

/** Variables a source file reads: `env.NAME`, `process.env.NAME` and shell `${NAME`. */
function readBy(...paths: string[]): string[] {
  const names = paths.flatMap((path) => [...source(path).matchAll(/(?:env\.|\$\{)([A-Z][A-Z0-9_]*)/g)].map((m) => m[1]!));
  return [...new Set(names)].filter((name) => !['PATH', 'HOME', 'DOCKER_HOST'].includes(name));
}

/** The documented values give the same configuration as the schema's own defaults. */
function expectDefaults(schema: z.ZodObject, documented: Map<string, string>) {
  const env = Object.fromEntries([...documented].filter(([key]) => key in schema.shape));
  const required = Object.fromEntries(requiredKeys(schema).map((key) => [key, env[key]]));
  expect(loadConfig(schema, env)).toEqual(loadConfig(schema, required));
}

const doc = sections(source('.env.example'));
const common = doc.get('every')!;

describe('.env.example', () => {
  it('has a section for the launcher, every process, the tests and the bench', () => {
    expect([...doc.keys()]).toEqual(['launcher:', 'every', ...PROCESSES, 'tests:', 'bench:']);
  });

  describe.each(PROCESSES)('%s', (name) => {
    const schema = CONFIG_SCHEMAS[name];
    const own = doc.get(name)!;

    it('lists every variable of its config schema, in its section or among those of every process', () => {
      const listed = new Set([...own.keys(), ...common.keys()]);
      expect(Object.keys(schema.shape).filter((key) => !listed.has(key))).toEqual([]);
    });

    it('lists in its section only variables of its schema', () => {
      expect([...own.keys()].filter((key) => !(key in schema.shape))).toEqual([]);
    });

    it("shows the schema's defaults", () => {
      expectDefaults(schema, new Map([...common, ...own]));
    });
  });

  it('lists among those of every process only variables some process has', () => {
    const unknown = [...common.keys()].filter((key) => !PROCESSES.some((name) => key in CONFIG_SCHEMAS[name].shape));
    expect(unknown).toEqual([]);
  });

  it("lists every variable the launcher reads, each process's port at its default", () => {
    const launcher = doc.get('launcher:')!;
    const ports = Object.entries(DEFAULT_PORTS).map(([name, port]) => [`${name.toUpperCase()}_PORT`, String(port)]);
    expect(
      Object.fromEntries([...launcher].filter(([key]) => key.endsWith('_PORT') && !['MINIO_PORT', 'LIVEKIT_PORT'].includes(key))),
    ).toEqual(Object.fromEntries(ports));
    const read = readBy('scripts/platform.ts', 'scripts/platform.sh', 'scripts/backing.sh', 'scripts/install.sh');
    expect(read.filter((key) => !launcher.has(key))).toEqual([]);
    expect([...launcher.keys()].filter((key) => !read.includes(key) && !ports.some(([port]) => port === key))).toEqual([]);
  });

  it('lists every variable the test harness reads', () => {
    const read = readBy(
      'libs/testkit/src/backing.ts',
      'libs/testkit/src/runtime.ts',
      'test/setup/backing.ts',
      'test/setup/platform.ts',
      'scripts/test.sh',
    );
    expect(read.filter((key) => !doc.get('tests:')!.has(key))).toEqual([]);
  });

  it("lists the bench's variables with their defaults", () => {
    expect([...doc.get('bench:')!.keys()].sort()).toEqual(Object.keys(BenchSettings.shape).sort());
    expectDefaults(BenchSettings, doc.get('bench:')!);
  });
});
