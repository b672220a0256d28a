import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';

// Writes deploy/k8s/schemas/*.json: a JSON schema for each operator resource the overlays use,
// made from the CustomResourceDefinition that the operator's own released Go module ships, so that
// the rendered overlays can be validated offline (test/infra/k8s.unit.test.ts). Run it again after
// raising a version below: `bash scripts/with-node.sh node --import tsx scripts/k8s/crd-schemas.ts`
// (needs Go and the Go module proxy; the tests only read the files it writes).

interface Source {
  module: string;
  version: string;
  /** CRD files inside the module, and the kinds to take from each. */
  crds: { file: string; kinds: string[] }[];
}

export const SOURCES: Source[] = [
  {
    module: 'github.com/cloudnative-pg/cloudnative-pg',
    version: 'v1.28.0',
    crds: [
      { file: 'config/crd/bases/postgresql.cnpg.io_clusters.yaml', kinds: ['Cluster'] },
      { file: 'config/crd/bases/postgresql.cnpg.io_scheduledbackups.yaml', kinds: ['ScheduledBackup'] },
    ],
  },
  {
    module: 'github.com/nats-io/nack',
    version: 'v0.16.2',
    crds: [{ file: 'deploy/crds.yml', kinds: ['Stream'] }],
  },
];

const OUT = new URL('../../deploy/k8s/schemas/', import.meta.url).pathname;

type Schema = Record<string, unknown> & { properties?: Record<string, Schema>; items?: Schema };

const ROOT_PROPERTIES: Record<string, Schema> = {
  apiVersion: { type: 'string' },
  kind: { type: 'string' },
  metadata: { type: 'object' },
};

/**
 * The CRD's structural schema as JSON schema, as strict as the API server is: an object with listed
 * properties accepts no others (the server would drop them silently, which hides a typo), unless
 * the CRD says to keep unknown fields. Descriptions and CEL rules (which only the server can run)
 * are left out; int-or-string becomes either.
 */
export function toJsonSchema(node: Schema): Schema {
  const out: Schema = {};
  for (const [key, value] of Object.entries(node)) {
    if (key === 'description' || key.startsWith('x-kubernetes-') || key === 'nullable') continue;
    if (key === 'properties') {
      out.properties = Object.fromEntries(Object.entries(value as Record<string, Schema>).map(([k, v]) => [k, toJsonSchema(v)]));
    } else if (key === 'items' || key === 'additionalProperties' || key === 'not') {
      out[key] = (typeof value === 'object' && value !== null ? toJsonSchema(value as Schema) : value) as Schema;
    } else if (key === 'allOf' || key === 'anyOf' || key === 'oneOf') {
      out[key] = (value as Schema[]).map(toJsonSchema);
    } else {
      out[key] = value;
    }
  }
  if (node['x-kubernetes-int-or-string']) {
    delete out.type;
    out.anyOf = [{ type: 'integer' }, { type: 'string' }, ...((out.anyOf as Schema[]) ?? [])];
  }
  if (node.nullable && typeof out.type === 'string') out.type = [out.type, 'null'];
  if (out.properties && !('additionalProperties' in out) && !node['x-kubernetes-preserve-unknown-fields']) {
    out.additionalProperties = false;
  }
  return out;
}

function moduleDir(module: string, version: string): string {
  const info = JSON.parse(execFileSync('go', ['mod', 'download', '-json', `${module}@${version}`], { encoding: 'utf8' }));
  if (info.Error) throw new Error(`${module}@${version}: ${info.Error}`);
  return info.Dir;
}

/** The file name of a kind's schema: `<group>_<kind>_<version>.json`. */
export function schemaFile(apiVersion: string, kind: string): string {
  const [group, version] = apiVersion.split('/');
  return `${group}_${kind.toLowerCase()}_${version}.json`;
}

async function main() {
  for (const source of SOURCES) {
    const dir = moduleDir(source.module, source.version);
    for (const crd of source.crds) {
      for (const doc of parseAllDocuments(readFileSync(join(dir, crd.file), 'utf8'))) {
        const definition = doc.toJS();
        if (definition?.kind !== 'CustomResourceDefinition' || !crd.kinds.includes(definition.spec.names.kind)) continue;
        for (const version of definition.spec.versions.filter((v: { served: boolean }) => v.served)) {
          const apiVersion = `${definition.spec.group}/${version.name}`;
          const body = toJsonSchema(version.schema.openAPIV3Schema);
          const schema = {
            $comment: `${definition.spec.names.kind} ${apiVersion} from ${crd.file} in the Go module ${source.module}@${source.version}; made by scripts/k8s/crd-schemas.ts`,
            ...body,
            // The API server checks these itself on every object, whatever the CRD lists.
            properties: { ...ROOT_PROPERTIES, ...body.properties },
            required: [...new Set(['apiVersion', 'kind', 'metadata', ...((body.required as string[]) ?? [])])],
          };
          writeFileSync(join(OUT, schemaFile(apiVersion, definition.spec.names.kind)), `${JSON.stringify(schema)}\n`);
          console.log(`wrote ${schemaFile(apiVersion, definition.spec.names.kind)}`);
        }
      }
    }
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await main();
