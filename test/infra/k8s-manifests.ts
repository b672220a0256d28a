import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { Ajv, type ValidateFunction } from 'ajv';
import { parseAllDocuments } from 'yaml';

// Renders the kustomize overlays and validates every object offline: built-in kinds with the JSON
// schemas that the kubernetes-models package ships, operator resources with the schemas in
// deploy/k8s/schemas (made from the operators' CRDs by scripts/k8s/crd-schemas.ts).

/** One rendered object, read field by field by the tests. */
export interface Manifest {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
  data?: Record<string, string>;
  stringData?: Record<string, string>;
  // biome-ignore lint/suspicious/noExplicitAny: manifests are read field by field and asserted on
  spec?: any;
}

export const K8S_DIR = new URL('../../deploy/k8s/', import.meta.url).pathname;
export const OVERLAYS = readdirSync(join(K8S_DIR, 'overlays'));
const SCHEMAS_DIR = join(K8S_DIR, 'schemas');

/**
 * Operator resources that no schema checks, and why. Their apiVersion, kind and name are still
 * checked; a kind that is neither built in, nor has a schema, nor is listed here fails.
 */
export const WITHOUT_SCHEMA: Record<string, string> = {
  'minio.min.io/v2 Tenant':
    "the MinIO operator's Go module is not served by the module proxy this project can reach, and no npm package ships its CRD",
};

/** kustomize on PATH, or where `go install` put it (scripts/install.sh). */
export function kustomizeBinary(): string {
  const gopath = (() => {
    try {
      return execFileSync('go', ['env', 'GOPATH'], { encoding: 'utf8' }).trim();
    } catch {
      return '';
    }
  })();
  const dirs = [...(process.env.PATH ?? '').split(delimiter), gopath && join(gopath, 'bin')].filter(Boolean);
  const found = dirs.map((dir) => join(dir, 'kustomize')).find((file) => existsSync(file));
  if (!found) throw new Error('kustomize is not installed: run bash scripts/install.sh');
  return found;
}

export function parseManifests(text: string, origin: string): Manifest[] {
  return parseAllDocuments(text)
    .map((doc) => {
      if (doc.errors.length > 0) throw new Error(`${origin}: ${doc.errors[0]?.message}`);
      return doc.toJS() as Manifest | null;
    })
    .filter((m): m is Manifest => m !== null);
}

/** Every object an overlay renders to (`kustomize build deploy/k8s/overlays/<name>`). */
export function renderOverlay(name: string): Manifest[] {
  const dir = join(K8S_DIR, 'overlays', name);
  return renderDir(dir);
}

export function renderDir(dir: string): Manifest[] {
  const text = execFileSync(kustomizeBinary(), ['build', dir], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  return parseManifests(text, dir);
}

const ajv = new Ajv({ strict: false, allErrors: true, validateFormats: false });
const crdValidators = new Map<string, ValidateFunction | undefined>();

function crdValidator(apiVersion: string, kind: string): ValidateFunction | undefined {
  const [group, version] = apiVersion.split('/');
  const file = join(SCHEMAS_DIR, `${group}_${kind.toLowerCase()}_${version}.json`);
  if (!crdValidators.has(file)) {
    crdValidators.set(file, existsSync(file) ? ajv.compile(JSON.parse(readFileSync(file, 'utf8'))) : undefined);
  }
  return crdValidators.get(file);
}

/** The kubernetes-models class of a built-in kind, or undefined for any other apiVersion. */
async function builtInModel(apiVersion: string, kind: string): Promise<(new (data: unknown) => { validate(): void }) | undefined> {
  // kubernetes-models lays its modules out by apiVersion: `kubernetes-models/apps/v1`, `kubernetes-models/v1`.
  if (!/^([a-z0-9.-]+\/)?v\d+((alpha|beta)\d+)?$/.test(apiVersion)) return undefined;
  try {
    const models = await import(`kubernetes-models/${apiVersion}`);
    return models[kind];
  } catch {
    return undefined;
  }
}

/** What is wrong with one rendered object; empty when the API server would accept its shape. */
export async function manifestProblems(manifest: Manifest): Promise<string[]> {
  const where = `${manifest?.kind ?? '?'} ${manifest?.metadata?.name ?? '?'}`;
  if (typeof manifest?.apiVersion !== 'string' || typeof manifest.kind !== 'string') return [`${where}: apiVersion and kind are required`];
  if (typeof manifest.metadata?.name !== 'string' || manifest.metadata.name === '') return [`${where}: metadata.name is required`];
  const Model = await builtInModel(manifest.apiVersion, manifest.kind);
  if (Model) {
    try {
      new Model(manifest).validate();
      return [];
    } catch (err) {
      return [`${where}: ${(err as Error).message}`];
    }
  }
  const validate = crdValidator(manifest.apiVersion, manifest.kind);
  if (validate) {
    if (validate(manifest)) return [];
    return (validate.errors ?? []).map(
      (e) =>
        `${where}: ${e.instancePath || '/'} ${e.message}${e.params && 'additionalProperty' in e.params ? ` (${e.params.additionalProperty})` : ''}`,
    );
  }
  if (`${manifest.apiVersion} ${manifest.kind}` in WITHOUT_SCHEMA) return [];
  return [`${where}: no schema for ${manifest.apiVersion} ${manifest.kind}`];
}

/** The problems of every object, in order. */
export async function validateManifests(manifests: Manifest[]): Promise<string[]> {
  return (await Promise.all(manifests.map(manifestProblems))).flat();
}
