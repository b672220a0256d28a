import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { env, loadConfig } from '@chat/kit';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { z } from 'zod';
import { AuthConfig } from '../../services/auth/src/config.ts';
import { CONFIG_SCHEMAS, envProblems, PROCESSES, requiredKeys, stringValues } from './process-env.ts';

// There is no Docker engine on these machines, so `docker compose config` cannot run here: this
// test checks what a file can say on its own — its shape, and each process's environment against
// the zod schema the process validates at boot.

interface ComposeService {
  image?: string;
  build?: { context: string; args?: Record<string, string> };
  environment?: Record<string, unknown>;
  depends_on?: Record<string, { condition?: string }>;
  healthcheck?: { test: string[] };
  ports?: string[];
}

interface ComposeFile {
  services: Record<string, ComposeService>;
  configs: Record<string, { content: string }>;
}

const compose = parse(readFileSync(new URL('../../docker-compose.yml', import.meta.url), 'utf8'), { merge: true }) as ComposeFile;
const BACKING = ['postgres', 'redis', 'nats', 'minio', 'mailpit', 'livekit', 'edge'];

/** Variables that name the system as clients reach it from outside, not a part inside the network. */
const PUBLIC_URLS = ['MEDIA_PUBLIC_URL'];
/** Where clients reach the media server (LiveKit) from outside, on its own published port. */
const MEDIA_SERVER_URLS = ['LIVEKIT_URL'];

const service = (name: string): ComposeService => compose.services[name]!;
const envOf = (name: string) => stringValues(service(name).environment);

/** The URLs a process uses to reach other parts of the system, by variable name. */
function internalUrls(env: Record<string, string>): [string, URL][] {
  return Object.entries(env)
    .filter(([key, value]) => !PUBLIC_URLS.includes(key) && !MEDIA_SERVER_URLS.includes(key) && URL.canParse(value))
    .map(([key, value]) => [key, new URL(value)] as [string, URL])
    .filter(([, url]) => url.hostname !== '');
}

describe('docker-compose.yml', () => {
  it('names the backing parts and every process', () => {
    expect(Object.keys(compose.services).sort()).toEqual([...BACKING, ...PROCESSES].sort());
  });

  describe.each(PROCESSES)('%s', (name) => {
    it('is built from the one Dockerfile with SERVICE naming it', () => {
      expect(service(name).build).toEqual({ context: '.', args: { SERVICE: name, NODE_IMAGE: expect.stringMatching(/^node:24\./) } });
    });

    it('gives every variable its config schema requires, only variables it knows, all valid', () => {
      const env = envOf(name);
      expect(Object.keys(env)).toEqual(expect.arrayContaining(requiredKeys(CONFIG_SCHEMAS[name])));
      expect(envProblems(CONFIG_SCHEMAS[name], env)).toEqual([]);
    });

    it('listens beyond its own loopback and runs in production mode', () => {
      const config = loadConfig(CONFIG_SCHEMAS[name], envOf(name));
      expect(config.HOST).toBe('0.0.0.0');
      expect(config.NODE_ENV).toBe('production');
    });

    it('points only at compose services, and at a process on the port that process listens on', () => {
      for (const [key, url] of internalUrls(envOf(name))) {
        expect(Object.keys(compose.services), key).toContain(url.hostname);
        if (url.hostname in CONFIG_SCHEMAS) expect(url.port, key).toBe(envOf(url.hostname).PORT);
      }
    });

    it('waits for every service it points at to be healthy, and has a health check of its own', () => {
      const dependsOn = service(name).depends_on ?? {};
      const named = [...new Set(internalUrls(envOf(name)).map(([, url]) => url.hostname))].filter((host) => host !== name);
      expect(Object.keys(dependsOn).sort()).toEqual(named.sort());
      for (const [target, { condition }] of Object.entries(dependsOn)) {
        expect(condition, `${name} -> ${target}`).toBe('service_healthy');
        expect(service(target).healthcheck?.test, target).toBeDefined();
      }
      const probe = name === 'gateway' ? ':8080/v1/health' : "'+process.env.PORT+'/health/ready";
      expect(service(name).healthcheck?.test.join(' ')).toContain(probe);
    });
  });

  it('gives each service that owns data a database of its own, created by the init script', () => {
    const created = [...compose.configs['postgres-databases']!.content.matchAll(/CREATE DATABASE (\w+);/g)].map((m) => m[1]);
    const owners = PROCESSES.filter((name) => envOf(name).DATABASE_URL !== undefined);
    expect(owners.sort()).toEqual(['auth', 'guilds', 'media', 'music', 'social']);
    expect(created.sort()).toEqual(owners);
    for (const name of owners) expect(new URL(envOf(name).DATABASE_URL!).pathname).toBe(`/${name}`);
  });

  it('turns email verification on, mailing through the mail catcher', () => {
    const config = loadConfig(AuthConfig, envOf('auth'));
    expect(config.EMAIL_VERIFICATION).toBe(true);
    expect(new URL(config.SMTP_URL).hostname).toBe('mailpit');
  });

  it('publishes only the gateway among the processes, where the public URLs say clients find it', () => {
    expect(PROCESSES.filter((name) => service(name).ports)).toEqual(['gateway']);
    const published = service('gateway').ports![0]!.split(':')[0];
    for (const name of PROCESSES) {
      for (const key of PUBLIC_URLS.filter((k) => k in envOf(name))) expect(new URL(envOf(name)[key]!).port, key).toBe(published);
    }
    expect(envOf('media').MEDIA_PUBLIC_URL).toBeDefined();
  });

  it('hands out media grants for the LiveKit it runs: its published port and its own key pair', () => {
    const livekit = service('livekit') as ComposeService & { command: string[] };
    const published = (livekit.ports ?? []).map((p) => p.split(':')[0]);
    const keys = /keys: \{(\S+): (\S+)\}/.exec(livekit.command.join(' '));
    const granting = PROCESSES.filter((name) => envOf(name).LIVEKIT_URL !== undefined);
    expect(granting.length).toBeGreaterThan(0);
    for (const name of granting) {
      const env = envOf(name);
      expect(published, name).toContain(new URL(env.LIVEKIT_URL!).port);
      expect([env.LIVEKIT_API_KEY, env.LIVEKIT_API_SECRET], name).toEqual([keys?.[1], keys?.[2]]);
    }
  });
});

describe('the edge in front of the gateway', () => {
  it('is the one proxy the gateway trusts, in its network namespace, with the file that overwrites X-Forwarded-For', () => {
    expect(envOf('gateway').TRUSTED_PROXIES).toBe('127.0.0.1');
    const edge = compose.services.edge as ComposeService & { network_mode?: string; volumes?: string[] };
    expect(edge.network_mode).toBe('service:gateway');
    expect(edge.volumes).toEqual(['./deploy/k8s/base/edge/nginx.conf:/etc/nginx/nginx.conf:ro']);
    expect(service('gateway').ports).toEqual(['8080:8000']);
  });
});

describe('Dockerfile', () => {
  const dockerfile = readFileSync(new URL('../../Dockerfile', import.meta.url), 'utf8');

  it("copies every workspace's manifest before installing, so npm ci sees the whole workspace", () => {
    const root = new URL('../../', import.meta.url);
    const workspaces = readdirSync(new URL('libs/', root))
      .map((d) => `libs/${d}`)
      .concat(readdirSync(new URL('services/', root)).map((d) => `services/${d}`))
      .filter((dir) => existsSync(new URL(`${dir}/package.json`, root)));
    expect(workspaces.length).toBeGreaterThanOrEqual(9);
    for (const dir of workspaces) expect(dockerfile, dir).toContain(`COPY ${dir}/package.json ${dir}/`);
  });

  it("runs the bundle of the process its SERVICE build argument names, with that process's Node flags, as PID 1", () => {
    expect(dockerfile).toMatch(/^RUN node --import tsx scripts\/build\.ts$/m);
    expect(dockerfile).toMatch(/^CMD exec node \$\(cat "dist\/\$\{SERVICE\}\/node-flags"\) "dist\/\$\{SERVICE\}\/main\.mjs"$/m);
  });
});

describe('the environment check itself', () => {
  const schema = z.object({
    PORT: env.port(3000),
    REDIS_URL: z.string().regex(/^redis:\/\//, 'must be a redis:// URL'),
    SECRET: z.string().min(8),
  });
  const valid = { PORT: '3001', REDIS_URL: 'redis://redis:6379', SECRET: 'long enough' };

  it('accepts an environment the schema accepts, optional keys included or not', () => {
    expect(requiredKeys(schema)).toEqual(['REDIS_URL', 'SECRET']);
    expect(envProblems(schema, valid)).toEqual([]);
    expect(envProblems(schema, { REDIS_URL: valid.REDIS_URL, SECRET: valid.SECRET })).toEqual([]);
  });

  it('reports a misspelt variable', () => {
    expect(envProblems(schema, { ...valid, REDIS_ULR: 'redis://redis:6379' })).toEqual(['REDIS_ULR: not a variable of this process']);
  });

  it('reports a value the schema rejects', () => {
    expect(envProblems(schema, { ...valid, REDIS_URL: 'http://redis:6379' })).toEqual(['REDIS_URL: must be a redis:// URL']);
  });

  it('reports a required variable that is missing, once', () => {
    const { SECRET: _, ...withoutSecret } = valid;
    expect(envProblems(schema, withoutSecret)).toEqual(['SECRET: required but not given']);
  });
});
