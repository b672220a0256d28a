import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { CONFIG_SCHEMAS, envProblems, PROCESSES, requiredKeys } from './process-env.ts';

// No cluster here: the manifests are checked as files — every process has its Deployment, Service,
// probes and ConfigMap, and the environment a pod would get (ConfigMap plus the example Secret)
// satisfies that process's config schema exactly as docker-compose.yml must.

interface Manifest {
  kind: string;
  metadata: { name: string };
  data?: Record<string, string>;
  stringData?: Record<string, string>;
  // biome-ignore lint/suspicious/noExplicitAny: manifests are read field by field and asserted on
  spec?: any;
}

const DIR = new URL('../../deploy/k8s/', import.meta.url);
const read = (file: string) =>
  parseAllDocuments(readFileSync(new URL(file, DIR), 'utf8')).map((doc) => {
    expect(doc.errors, file).toEqual([]);
    return doc.toJS() as Manifest;
  });

const kustomization = read('kustomization.yaml')[0] as unknown as { resources: string[]; images: { name: string }[] };
const applied = kustomization.resources.flatMap(read);
const secret = read('secrets.example.yaml')[0]!;
const find = (kind: string, name: string) => applied.find((m) => m.kind === kind && m.metadata.name === name);

/** The environment a pod gets: its ConfigMap whole, then each value taken from the Secret. */
function podEnv(name: string): Record<string, string> {
  const container = find('Deployment', `chat-${name}`)!.spec.template.spec.containers[0];
  const env: Record<string, string> = {};
  for (const source of container.envFrom ?? []) Object.assign(env, find('ConfigMap', source.configMapRef.name)?.data);
  for (const variable of container.env ?? []) {
    const ref = variable.valueFrom?.secretKeyRef;
    expect(ref?.name, variable.name).toBe(secret.metadata.name);
    expect(Object.keys(secret.stringData ?? {}), variable.name).toContain(ref.key);
    env[variable.name] = secret.stringData![ref.key]!;
  }
  return env;
}

describe('deploy/k8s', () => {
  describe.each(PROCESSES)('%s', (name) => {
    it('has a Deployment of its own image and a Service on the port it listens on', () => {
      const container = find('Deployment', `chat-${name}`)?.spec.template.spec.containers[0];
      expect(container.image).toBe(`chat-${name}:latest`);
      expect(kustomization.images.map((i) => i.name)).toContain(`chat-${name}`);
      const port = Number(podEnv(name).PORT);
      expect(container.ports).toEqual([{ name: 'http', containerPort: port }]);
      expect(find('Service', name)?.spec.ports).toEqual([{ name: 'http', port, targetPort: 'http' }]);
      expect(find('Service', name)?.spec.selector).toEqual(find('Deployment', `chat-${name}`)?.spec.selector.matchLabels);
    });

    it('is probed on /health/ready and /health/live', () => {
      const container = find('Deployment', `chat-${name}`)?.spec.template.spec.containers[0];
      expect(container.readinessProbe.httpGet).toEqual({ path: '/health/ready', port: 'http' });
      expect(container.livenessProbe.httpGet).toEqual({ path: '/health/live', port: 'http' });
    });

    it('gets every variable its config schema requires, only variables it knows, all valid', () => {
      const env = podEnv(name);
      expect(Object.keys(env)).toEqual(expect.arrayContaining(requiredKeys(CONFIG_SCHEMAS[name])));
      expect(envProblems(CONFIG_SCHEMAS[name], env)).toEqual([]);
      expect(env.HOST).toBe('0.0.0.0');
    });

    it('points at other processes by their Service name and port', () => {
      for (const value of Object.values(podEnv(name)).filter((v) => /^https?:\/\//.test(v))) {
        const url = new URL(value);
        if (url.hostname in CONFIG_SCHEMAS) expect(url.port, value).toBe(podEnv(url.hostname).PORT);
      }
    });
  });

  it('trusts only the edge sidecar to name the client, and the edge overwrites X-Forwarded-For', () => {
    expect(podEnv('gateway').TRUSTED_PROXIES).toBe('127.0.0.1');
    const containers = find('Deployment', 'chat-gateway')!.spec.template.spec.containers;
    expect(containers.map((c: { name: string }) => c.name)).toEqual(['gateway', 'edge']);
    expect(find('Service', 'gateway-public')?.spec).toMatchObject({ externalTrafficPolicy: 'Local', ports: [{ targetPort: 'public' }] });
    const nginx = readFileSync(new URL('edge/nginx.conf', DIR), 'utf8');
    expect(nginx).toMatch(/proxy_set_header X-Forwarded-For \$remote_addr;/);
    expect(nginx).not.toContain('proxy_add_x_forwarded_for');
    expect(nginx).toContain('server 127.0.0.1:8080;');
  });

  it('keeps secrets out of the ConfigMaps', () => {
    const configured = applied.filter((m) => m.kind === 'ConfigMap').flatMap((m) => Object.keys(m.data ?? {}));
    expect(configured).not.toContain('DATABASE_URL');
    expect(configured).not.toContain('JWT_PRIVATE_KEYS');
    expect(applied.some((m) => m.kind === 'Secret')).toBe(false);
  });
});
