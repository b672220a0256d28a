import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { dirname, join, relative } from 'node:path';
import { type BuildOptions, build, type Plugin } from 'esbuild';
import type { ServiceProcess } from './processes.ts';

const ROOT = new URL('../../../', import.meta.url).pathname;
export const DIST_DIR = join(ROOT, 'dist');

/**
 * Node flags a process needs to meet its targets, written beside its bundle as `node-flags` (the
 * Dockerfile's command reads them from there). Media streams uploads: V8 grows the young generation
 * to 16 MiB semi-spaces under an upload's allocation rate; capped at 1 MiB, the resident memory
 * during a 100 MiB upload stays under 150 MiB at the same throughput.
 */
export const NODE_FLAGS: Record<ServiceProcess, string[]> = {
  gateway: [],
  auth: [],
  guilds: [],
  social: [],
  media: ['--max-semi-space-size=1'],
  music: [],
};

/** Where a process's bundle is written and run from. */
export function bundlePath(name: ServiceProcess, dist = DIST_DIR): string {
  return join(dist, name, 'main.mjs');
}

/**
 * Bundles each process (its sources and the workspace libraries) into one JavaScript file, so
 * that it runs on plain Node: no TypeScript loader, whose hooks thread costs a process about
 * 45 MiB for as long as it lives. Packages from node_modules stay external, imported from the
 * exact file each workspace resolves them to (workspaces may pin different majors). The output is
 * relocatable with the tree it was built in. Concurrent builds are safe: each file is replaced
 * atomically.
 */
export async function buildBundles(names = Object.keys(NODE_FLAGS) as ServiceProcess[], dist = DIST_DIR): Promise<void> {
  await Promise.all(names.map((name) => buildBundle(name, dist)));
}

async function buildBundle(name: ServiceProcess, dist: string): Promise<void> {
  const outfile = bundlePath(name, dist);
  const options: BuildOptions = {
    entryPoints: [join(ROOT, 'services', name, 'src', 'main.ts')],
    outfile,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node24',
    sourcemap: 'linked',
    write: false,
    logLevel: 'silent',
    plugins: [sourceRelativeMetaUrl(dirname(outfile)), packagesStayExternal(dirname(outfile))],
  };
  const { outputFiles = [] } = await build(options);
  await mkdir(dirname(outfile), { recursive: true });
  const files = [...outputFiles.map((f) => ({ path: f.path, contents: f.contents })), flagsFile(name, dirname(outfile))];
  for (const file of files) {
    const temporary = `${file.path}.${process.pid}.${Math.random().toString(36).slice(2)}`;
    await writeFile(temporary, file.contents);
    await rename(temporary, file.path);
  }
}

function flagsFile(name: ServiceProcess, outdir: string) {
  return { path: join(outdir, 'node-flags'), contents: `${NODE_FLAGS[name].join(' ')}\n` };
}

/**
 * Sources find files beside them (migrations) through `import.meta.url`: inside the bundle it must
 * still name the source file, not the bundle.
 */
function sourceRelativeMetaUrl(outdir: string): Plugin {
  return {
    name: 'source-relative-import-meta-url',
    setup(b) {
      b.onLoad({ filter: /\.ts$/ }, async (args) => {
        const source = await readFile(args.path, 'utf8');
        const fromBundle = JSON.stringify(relative(outdir, args.path));
        return { loader: 'ts', contents: source.replaceAll('import.meta.url', `new URL(${fromBundle}, import.meta.url).href`) };
      });
    },
  };
}

/** Bare imports of packages (not the workspace's @chat/ libraries) stay imports, of the file the importer resolves. */
function packagesStayExternal(outdir: string): Plugin {
  return {
    name: 'packages-stay-external',
    setup(b) {
      b.onResolve({ filter: /^[^./]/ }, async (args) => {
        if (args.path.startsWith('@chat/') || args.pluginData === 'resolving') return undefined;
        const resolved = await b.resolve(args.path, {
          resolveDir: args.resolveDir,
          kind: args.kind,
          importer: args.importer,
          pluginData: 'resolving',
        });
        if (resolved.errors.length > 0) return { errors: resolved.errors };
        // Node's built-ins come back external as they are.
        if (resolved.external) return { path: args.path, external: true };
        return { path: `./${relative(outdir, resolved.path)}`, external: true };
      });
    },
  };
}
