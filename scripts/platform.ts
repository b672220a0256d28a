import { DEFAULT_PORTS, parseMinioUrl, SERVICES, type ServiceProcess, startPlatform } from '@chat/testkit';

// The launcher of `npm run platform`: the same process wiring as the end-to-end tests, with this
// machine's default ports and databases. Every variable can be overridden (see .env.example).
const env = process.env;
const postgres = env.POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432';
const ports = Object.fromEntries(
  Object.entries(DEFAULT_PORTS).map(([name, port]) => [name, Number(env[`${name.toUpperCase()}_PORT`] ?? port)]),
) as Record<ServiceProcess, number>;
const logDir = `${env.PLATFORM_DATA_DIR ?? '.data'}/logs`;
const started = Date.now();

const platform = await startPlatform({
  backing: {
    postgresUrl: `${postgres}/postgres`,
    redisUrl: env.REDIS_URL ?? 'redis://127.0.0.1:6379',
    natsUrl: env.NATS_URL ?? 'nats://127.0.0.1:4222',
    minio: parseMinioUrl(env.MINIO_URL ?? 'http://minioadmin:minioadmin@127.0.0.1:9000'),
    livekit: {
      url: env.LIVEKIT_URL ?? 'ws://127.0.0.1:7880',
      apiKey: env.LIVEKIT_API_KEY ?? 'devkey',
      apiSecret: env.LIVEKIT_API_SECRET ?? 'secret',
    },
  },
  ports,
  databases: Object.fromEntries(SERVICES.map((s) => [s, `${postgres}/${s}`])) as Record<(typeof SERVICES)[number], string>,
  namespace: env.BUS_NAMESPACE ?? '',
  logDir,
  baseEnv: env,
});

console.log(`\nChat platform ready in ${((Date.now() - started) / 1000).toFixed(1)} s\n`);
for (const name of ['gateway', ...SERVICES] as ServiceProcess[]) {
  console.log(`  ${name.padEnd(8)} ${platform.urls[name].padEnd(24)} log: ${platform.logFile(name)}`);
}
console.log(`\n  API: ${platform.urls.gateway}/v1   docs: ${platform.urls.gateway}/v1/docs   Ctrl-C stops everything\n`);

let stopping = false;
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, async () => {
    if (stopping) return;
    stopping = true;
    console.log('\nstopping...');
    // Ctrl-C reached the services as well; SIGTERM (a supervisor) reached this process alone.
    await (signal === 'SIGINT' ? platform.stopAfterInterrupt() : platform.stop());
    process.exit(0);
  });
}
