import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { STREAMS } from '@chat/contracts';
import { DEFAULT_EVENT_RETENTION_MS, metricsPort } from '@chat/kit';
import { afterAll, describe, expect, it } from 'vitest';
import {
  K8S_DIR,
  type Manifest,
  manifestProblems,
  OVERLAYS,
  parseManifests,
  renderDir,
  renderOverlay,
  validateManifests,
} from './k8s-manifests.ts';
import { CONFIG_SCHEMAS, envProblems, PROCESSES, requiredKeys } from './process-env.ts';

// No cluster here: each overlay is rendered with kustomize and every object is validated offline
// (k8s-manifests.ts); then the rendered objects are checked for what the platform needs — each
// process's environment against its config schema, probes, migrations, network isolation, scaling.

const rendered = Object.fromEntries(OVERLAYS.map((overlay) => [overlay, renderOverlay(overlay)]));
const exampleSecret = parseManifests(readFileSync(join(K8S_DIR, 'base', 'secrets.example.yaml'), 'utf8'), 'secrets.example.yaml')[0]!;

/**
 * The example Secret holds an empty key set, a placeholder auth refuses at start (a signing key in
 * the repository would be everyone's); a pod here gets a key set made as the README makes one.
 */
const JWT_KEYS_PLACEHOLDER = '{"keys":[]}';
const GENERATED_KEY_SET = JSON.stringify({
  keys: [{ ...generateKeyPairSync('ed25519').privateKey.export({ format: 'jwk' }), kid: 'generated', alg: 'EdDSA', use: 'sig' }],
});

const finder = (objects: Manifest[]) => (kind: string, name: string) => objects.find((m) => m.kind === kind && m.metadata.name === name);

/** The value a pod would get from a Secret: the example chat-secrets, or the one a CloudNativePG Cluster makes. */
function secretValue(objects: Manifest[], ref: { name: string; key: string }): string | undefined {
  if (ref.name === exampleSecret.metadata.name && ref.key === 'jwt-private-keys') return GENERATED_KEY_SET;
  if (ref.name === exampleSecret.metadata.name) return exampleSecret.stringData?.[ref.key];
  const cluster = ref.key === 'uri' && ref.name.endsWith('-app') && finder(objects)('Cluster', ref.name.slice(0, -'-app'.length));
  if (!cluster) return undefined;
  const { database, owner } = cluster.spec.bootstrap.initdb;
  return `postgresql://${owner}:generated@${cluster.metadata.name}-rw.${cluster.metadata.namespace}:5432/${database}`;
}

// biome-ignore lint/suspicious/noExplicitAny: a container as rendered, read field by field
function containerEnv(objects: Manifest[], container: any): Record<string, string> {
  const env: Record<string, string> = {};
  for (const source of container.envFrom ?? []) Object.assign(env, finder(objects)('ConfigMap', source.configMapRef.name)?.data);
  for (const variable of container.env ?? []) {
    const value = secretValue(objects, variable.valueFrom.secretKeyRef);
    expect(value, `${variable.name} from ${JSON.stringify(variable.valueFrom.secretKeyRef)}`).toBeDefined();
    env[variable.name] = value!;
  }
  return env;
}

describe.each(OVERLAYS)('deploy/k8s/overlays/%s', (overlay) => {
  const objects = rendered[overlay]!;
  const find = finder(objects);
  const deployment = (name: string) => find('Deployment', `chat-${name}`)!;
  const container = (name: string) => deployment(name).spec.template.spec.containers[0];

  it('renders only objects that validate against their schemas', async () => {
    expect(objects.length).toBeGreaterThan(40);
    expect(await validateManifests(objects)).toEqual([]);
  });

  it('puts every object in the chat namespace', () => {
    expect(objects.filter((m) => m.kind !== 'Namespace' && m.metadata.namespace !== 'chat').map((m) => m.metadata.name)).toEqual([]);
  });

  describe.each(PROCESSES)('%s', (name) => {
    it('has a Deployment of its own image and a Service on the port it listens on', () => {
      expect(container(name).image).toBe(`chat-${name}:latest`);
      const port = Number(containerEnv(objects, container(name)).PORT);
      expect(container(name).ports).toEqual([
        { name: 'http', containerPort: port },
        { name: 'metrics', containerPort: metricsPort({ PORT: port }) },
      ]);
      expect(deployment(name).spec.template.metadata.annotations['prometheus.io/port']).toBe(String(metricsPort({ PORT: port })));
      expect(find('Service', name)?.spec.ports).toContainEqual({ name: 'http', port, targetPort: 'http' });
      expect(find('Service', name)?.spec.selector).toEqual(deployment(name).spec.selector.matchLabels);
    });

    it('is probed on /health/ready and /health/live and drains within its grace period', () => {
      expect(container(name).readinessProbe.httpGet).toEqual({ path: '/health/ready', port: 'http' });
      expect(container(name).livenessProbe.httpGet).toEqual({ path: '/health/live', port: 'http' });
      const env = containerEnv(objects, container(name));
      const preStopSeconds = Number(container(name).lifecycle.preStop.exec.command[1]);
      const graceMs = Number(env.SHUTDOWN_GRACE_MS ?? CONFIG_SCHEMAS[name].shape.SHUTDOWN_GRACE_MS.parse(undefined));
      expect(preStopSeconds * 1000 + graceMs).toBeLessThan(deployment(name).spec.template.spec.terminationGracePeriodSeconds * 1000);
    });

    it('gets every variable its config schema requires, only variables it knows, all valid', () => {
      const env = containerEnv(objects, container(name));
      expect(Object.keys(env)).toEqual(expect.arrayContaining(requiredKeys(CONFIG_SCHEMAS[name])));
      expect(envProblems(CONFIG_SCHEMAS[name], env)).toEqual([]);
      expect(env.HOST).toBe('0.0.0.0');
    });

    it('points at other processes by their Service name and port', () => {
      for (const value of Object.values(containerEnv(objects, container(name))).filter((v) => /^https?:\/\//.test(v))) {
        const url = new URL(value);
        if (url.hostname in CONFIG_SCHEMAS)
          expect(url.port, value).toBe(containerEnv(objects, container(url.hostname as typeof name)).PORT);
      }
    });
  });

  it('trusts only the edge sidecar to name the client, and the edge overwrites X-Forwarded-For', () => {
    expect(containerEnv(objects, container('gateway')).TRUSTED_PROXIES).toBe('127.0.0.1');
    const containers = deployment('gateway').spec.template.spec.containers;
    expect(containers.map((c: { name: string }) => c.name)).toEqual(['gateway', 'edge']);
    expect(find('Service', 'gateway-public')?.spec).toMatchObject({ externalTrafficPolicy: 'Local', ports: [{ targetPort: 'public' }] });
    const nginx = readFileSync(join(K8S_DIR, 'base', 'edge', 'nginx.conf'), 'utf8');
    expect(nginx).toMatch(/proxy_set_header X-Forwarded-For \$remote_addr;/);
    expect(nginx).not.toContain('proxy_add_x_forwarded_for');
    expect(nginx).toContain('server 127.0.0.1:8080;');
    expect(find('ConfigMap', deployment('gateway').spec.template.spec.volumes[0].configMap.name)?.data?.['nginx.conf']).toBe(nginx);
  });

  it.each(PROCESSES.filter((p) => p !== 'gateway'))('migrates %s in an init container with the same image and environment', (name) => {
    const [init] = deployment(name).spec.template.spec.initContainers;
    expect(init.image).toBe(container(name).image);
    expect(init.command).toEqual(['node', `dist/${name}/main.mjs`, '--migrate-only']);
    expect(containerEnv(objects, init)).toEqual(containerEnv(objects, container(name)));
  });

  it('gives each service database a CloudNativePG Cluster whose Secret the service reads', () => {
    for (const name of PROCESSES.filter((p) => p !== 'gateway')) {
      const ref = container(name).env.find((v: { name: string }) => v.name === 'DATABASE_URL').valueFrom.secretKeyRef;
      expect(ref).toEqual({ name: `${name}-db-app`, key: 'uri' });
      expect(find('Cluster', `${name}-db`)?.spec.bootstrap.initdb).toEqual({ database: name, owner: name });
    }
  });

  it('declares the JetStream streams of the contracts, three replicas each, with the kit duplicate window and retention', () => {
    const streams = objects.filter((m) => m.kind === 'Stream').map((m) => m.spec);
    expect(streams.map((s) => ({ name: s.name, subjects: s.subjects })).sort((a, b) => a.name.localeCompare(b.name))).toEqual(
      Object.values(STREAMS)
        .map((s) => ({ name: s.name, subjects: [...s.subjects] }))
        .sort((a, b) => a.name.localeCompare(b.name)),
    );
    const maxAge = `${DEFAULT_EVENT_RETENTION_MS / 3_600_000}h`;
    for (const stream of streams) expect(stream).toMatchObject({ replicas: 3, duplicateWindow: '10m', maxAge, storage: 'file' });
    expect(find('StatefulSet', 'nats')?.spec.replicas).toBe(3);
  });

  it('runs Redis with a replica of the primary, a MinIO tenant with the media bucket, and LiveKit', () => {
    expect(find('StatefulSet', 'redis-replica')?.spec.template.spec.containers[0].args.slice(0, 3)).toEqual([
      '--replicaof',
      'redis',
      '6379',
    ]);
    expect(find('Tenant', 'media-store')?.spec.buckets).toContainEqual({ name: 'media' });
    expect(find('Deployment', 'livekit')?.spec.template.spec.containers[0].ports).toContainEqual({ name: 'signal', containerPort: 7880 });
  });

  it('admits traffic from outside only to the gateway edge, to the services only from the gateway, to metrics only from monitoring', () => {
    const policies = objects.filter((m) => m.kind === 'NetworkPolicy');
    const selects = (policy: Manifest, labels: Record<string, string>) => {
      const { matchLabels = {}, matchExpressions = [] } = policy.spec.podSelector;
      return (
        Object.entries(matchLabels).every(([k, v]) => labels[k] === v) &&
        matchExpressions.every(
          (e: { key: string; operator: string; values: string[] }) => e.operator === 'In' && e.values.includes(labels[e.key]!),
        )
      );
    };
    for (const name of PROCESSES) {
      const labels = deployment(name).spec.template.metadata.labels;
      const applying = policies.filter((p) => selects(p, labels));
      expect(applying.length, name).toBeGreaterThan(0);
      const rules = applying.flatMap((p) => p.spec.ingress ?? []);
      const metrics = rules.filter((rule) => rule.ports.some((p: { port: string }) => p.port === 'metrics'));
      expect(metrics, name).toEqual([
        {
          from: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'monitoring' } } }],
          ports: [{ port: 'metrics', protocol: 'TCP' }],
        },
      ]);
      const http = rules.filter((rule) => !metrics.includes(rule));
      if (name === 'gateway') {
        expect(http).toEqual([
          { ports: [{ port: 'public', protocol: 'TCP' }] },
          { from: [{ podSelector: {} }], ports: [{ port: 'http', protocol: 'TCP' }] },
        ]);
      } else {
        expect(http.length, name).toBeGreaterThan(0);
        for (const rule of http) {
          expect(rule.from, name).toEqual([{ podSelector: { matchLabels: { 'app.kubernetes.io/name': 'chat-gateway' } } }]);
          expect(rule.ports).toEqual([{ port: 'http', protocol: 'TCP' }]);
        }
      }
    }
  });

  it('gives guilds, social and LiveKit the same key pair for media grants', () => {
    type EnvVar = { name: string; value?: string; valueFrom?: { secretKeyRef: unknown } };
    const livekit: EnvVar[] = find('Deployment', 'livekit')!.spec.template.spec.containers[0].env;
    const ref = (env: EnvVar[], name: string) => env.find((v) => v.name === name)?.valueFrom?.secretKeyRef;
    for (const name of ['guilds', 'social'] as const) {
      for (const variable of ['LIVEKIT_API_KEY', 'LIVEKIT_API_SECRET']) {
        expect(ref(container(name).env, variable), `${name} ${variable}`).toEqual(ref(livekit, variable));
        expect(ref(container(name).env, variable)).toBeDefined();
      }
    }
    expect(livekit.find((v) => v.name === 'LIVEKIT_KEYS')?.value).toBe('$(LIVEKIT_API_KEY): $(LIVEKIT_API_SECRET)');
  });

  it('keeps secrets out of the ConfigMaps and creates no Secret', () => {
    const configured = objects.filter((m) => m.kind === 'ConfigMap').flatMap((m) => Object.keys(m.data ?? {}));
    expect(configured).not.toContain('DATABASE_URL');
    expect(configured).not.toContain('JWT_PRIVATE_KEYS');
    expect(configured).not.toContain('MINIO_URL');
    expect(objects.some((m) => m.kind === 'Secret')).toBe(false);
  });

  it("the example Secret's signing keys are a placeholder auth refuses at start, naming the variable", () => {
    expect(exampleSecret.stringData?.['jwt-private-keys']).toBe(JWT_KEYS_PLACEHOLDER);
    const env = { ...containerEnv(objects, container('auth')), JWT_PRIVATE_KEYS: JWT_KEYS_PLACEHOLDER };
    expect(envProblems(CONFIG_SCHEMAS.auth, env)).toEqual([expect.stringMatching(/^JWT_PRIVATE_KEYS: /)]);
  });
});

describe('the dev overlay', () => {
  const find = finder(rendered.dev!);
  it('runs one replica of each process and one instance of each database', () => {
    for (const name of PROCESSES) expect(find('Deployment', `chat-${name}`)?.spec.replicas).toBe(1);
    expect(rendered.dev!.filter((m) => m.kind === 'Cluster').map((m) => m.spec.instances)).toEqual([1, 1, 1, 1, 1]);
    expect(rendered.dev!.some((m) => m.kind === 'HorizontalPodAutoscaler')).toBe(false);
  });
});

describe('the prod overlay', () => {
  const objects = rendered.prod!;
  const find = finder(objects);

  it('scales the gateway, guilds and social on CPU from two replicas', () => {
    const hpas = objects.filter((m) => m.kind === 'HorizontalPodAutoscaler');
    expect(hpas.map((h) => h.spec.scaleTargetRef.name).sort()).toEqual(['chat-gateway', 'chat-guilds', 'chat-social']);
    for (const hpa of hpas) {
      expect(find('Deployment', hpa.spec.scaleTargetRef.name)).toBeDefined();
      expect(hpa.spec.minReplicas).toBe(2);
      expect(hpa.spec.metrics).toEqual([
        { type: 'Resource', resource: { name: 'cpu', target: { type: 'Utilization', averageUtilization: 70 } } },
      ]);
    }
  });

  it.each(PROCESSES)('runs %s twice, spread over nodes, with a disruption budget, requests and a memory limit', (name) => {
    const deployment = find('Deployment', `chat-${name}`)!;
    expect(deployment.spec.replicas).toBe(2);
    const spread = deployment.spec.template.spec.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution;
    expect(spread[0].podAffinityTerm).toEqual({
      topologyKey: 'kubernetes.io/hostname',
      labelSelector: { matchLabels: { 'app.kubernetes.io/name': `chat-${name}` } },
    });
    const { resources } = deployment.spec.template.spec.containers[0];
    expect(Object.keys(resources.requests).sort()).toEqual(['cpu', 'memory']);
    expect(resources.limits.memory).toMatch(/^\d+Mi$/);
    const budget = objects.find(
      (m) => m.kind === 'PodDisruptionBudget' && m.spec.selector.matchLabels['app.kubernetes.io/name'] === `chat-${name}`,
    );
    expect(budget?.spec.maxUnavailable).toBe(1);
  });

  it('runs three instances of each database, archived to the MinIO tenant and backed up every night', () => {
    const clusters = objects.filter((m) => m.kind === 'Cluster');
    expect(clusters.map((c) => c.spec.instances)).toEqual([3, 3, 3, 3, 3]);
    for (const cluster of clusters) {
      expect(cluster.spec.backup.barmanObjectStore.destinationPath).toBe('s3://db-backups/');
      expect(find('ScheduledBackup', `${cluster.metadata.name}-daily`)?.spec.cluster).toEqual({ name: cluster.metadata.name });
    }
    expect(find('Tenant', 'media-store')?.spec.buckets).toContainEqual({ name: 'db-backups' });
  });

  it("maps the message stores' shared memory in huge pages that hold it, and fails rather than falls back", () => {
    const mebibytes = (size: string) => Number(size.match(/^(\d+)(Mi|GB)$/)![1]) * (size.endsWith('GB') ? 1024 : 1);
    for (const name of ['guilds-db', 'social-db']) {
      const { postgresql, resources } = find('Cluster', name)!.spec;
      expect(postgresql.parameters.huge_pages).toBe('on');
      expect(resources.limits['hugepages-2Mi']).toBe(resources.requests['hugepages-2Mi']);
      // Shared memory is shared_buffers and about 10% more (connection slots, WAL buffers, locks).
      expect(mebibytes(resources.limits['hugepages-2Mi'])).toBeGreaterThanOrEqual(mebibytes(postgresql.parameters.shared_buffers) * 1.15);
    }
    expect(find('Cluster', 'auth-db')!.spec.postgresql.parameters.huge_pages).toBeUndefined();
  });
});

describe('the offline validation', () => {
  const deployment = (): Manifest =>
    structuredClone(rendered.prod!.find((m) => m.kind === 'Deployment' && m.metadata.name === 'chat-guilds')!);
  const cluster = (): Manifest => structuredClone(rendered.prod!.find((m) => m.kind === 'Cluster')!);

  it('refuses a Deployment without a containerPort or with replicas as a string', async () => {
    const broken = deployment();
    broken.spec.replicas = '2';
    delete broken.spec.template.spec.containers[0].ports[0].containerPort;
    const problems = await manifestProblems(broken);
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatch(/^Deployment chat-guilds: .*replicas must be integer/);
    expect(problems[0]).toMatch(/must have required property containerPort/);
  });

  it('refuses a CloudNativePG Cluster with a misspelt field or a wrong type', async () => {
    const misspelt = cluster();
    misspelt.spec.instance = 3;
    expect(await manifestProblems(misspelt)).toEqual(['Cluster auth-db: /spec must NOT have additional properties (instance)']);
    const wrongType = cluster();
    wrongType.spec.instances = 'three';
    expect(await manifestProblems(wrongType)).toEqual(['Cluster auth-db: /spec/instances must be integer']);
  });

  it('refuses a NACK Stream with an unknown storage and a kind it has no schema for', async () => {
    const stream = structuredClone(rendered.prod!.find((m) => m.kind === 'Stream')!);
    stream.spec.storage = 'tape';
    expect(await manifestProblems(stream)).toEqual(['Stream auth: /spec/storage must be equal to one of the allowed values']);
    expect(await manifestProblems({ apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name: 'w' } })).toEqual([
      'Widget w: no schema for example.com/v1 Widget',
    ]);
  });

  describe('on a kustomization of its own', () => {
    const dir = mkdtempSync(join(tmpdir(), 'k8s-broken-'));
    afterAll(() => rmSync(dir, { recursive: true, force: true }));

    it('fails a rendered overlay with a broken object and passes the same overlay repaired', async () => {
      const broken = deployment();
      broken.spec.template.spec.containers[0].ports = [{ name: 'http' }];
      writeFileSync(join(dir, 'kustomization.yaml'), 'resources:\n  - deployment.json\n');
      writeFileSync(join(dir, 'deployment.json'), JSON.stringify(broken));
      expect(await validateManifests(renderDir(dir))).toEqual([
        expect.stringMatching(/^Deployment chat-guilds: .*must have required property containerPort/),
      ]);
      writeFileSync(join(dir, 'deployment.json'), JSON.stringify(deployment()));
      expect(await validateManifests(renderDir(dir))).toEqual([]);
    });
  });
});
