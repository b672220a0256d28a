/**
 * Peak resident memory of the media process during one large upload (issue 6: under 150 MiB for
 * 100 MiB). Starts the service as its own process against the local backing parts, streams a
 * generated file into it over HTTP, samples /proc/<pid>/status, and prints the figures.
 *
 *   node --import tsx services/media/scripts/upload-rss.ts [MiB=100]
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { connectBus, createLogger } from '@chat/kit';
import {
  buildBundles,
  bundlePath,
  createTestDatabase,
  deleteNamespaceStreams,
  freePort,
  NODE_FLAGS,
  parseMinioUrl,
  removeBucket,
  testNamespace,
} from '@chat/testkit';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import { Client } from 'minio';

const MIB = 1024 * 1024;
const sizeMib = Number(process.argv[2] ?? 100);
const root = new URL('../../../', import.meta.url).pathname;
const minioUrl = process.env.MINIO_URL ?? 'http://minioadmin:minioadmin@127.0.0.1:9000';
const natsUrl = process.env.NATS_URL ?? 'nats://127.0.0.1:4222';

const { publicKey, privateKey } = await generateKeyPair('EdDSA', { crv: 'Ed25519' });
const jwks = { keys: [{ ...(await exportJWK(publicKey)), kid: 'rss', alg: 'EdDSA', use: 'sig' }] };
const keyServer = createServer((_req, res) => res.setHeader('content-type', 'application/json').end(JSON.stringify(jwks)));
const keysPort = await listen(keyServer);
const database = await createTestDatabase(process.env.POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres', 'rss_media');
const namespace = testNamespace('rss');
const bucket = `rss-media-${randomBytes(4).toString('hex')}`;
const port = await freePort();

// MEDIA_NODE_FLAGS: extra V8/Node flags for the media process, to compare settings (the last of a flag given twice wins).
const flags = (process.env.MEDIA_NODE_FLAGS ?? '').split(' ').filter(Boolean);
await buildBundles(['media']);
// As it runs in production: the bundle, with the platform's Node flags for media.
const media = spawn(process.execPath, [...NODE_FLAGS.media, ...flags, bundlePath('media')], {
  cwd: root,
  stdio: ['ignore', process.env.MEDIA_STDOUT ? 'inherit' : 'ignore', 'inherit'],
  env: {
    PATH: process.env.PATH,
    NODE_ENV: 'production',
    LOG_LEVEL: 'warn',
    PORT: String(port),
    METRICS_PORT: '0',
    DATABASE_URL: database.url,
    NATS_URL: natsUrl,
    BUS_NAMESPACE: namespace,
    AUTH_JWKS_URL: `http://127.0.0.1:${keysPort}/jwks`,
    MINIO_URL: minioUrl,
    MEDIA_BUCKET: bucket,
    MEDIA_MAX_UPLOAD_BYTES: String(sizeMib * MIB),
  },
});

try {
  await waitReady(`http://127.0.0.1:${port}/health/ready`, media);
  const token = await new SignJWT({ sid: crypto.randomUUID() })
    .setProtectedHeader({ alg: 'EdDSA', kid: 'rss', typ: 'at+jwt' })
    .setSubject(crypto.randomUUID())
    .setIssuer('chat-auth')
    .setAudience('chat-api')
    .setIssuedAt()
    .setExpirationTime('15m')
    .sign(privateKey);
  const before = memory(media.pid as number);
  let sampledPeak = before.rss;
  const sampler = setInterval(() => {
    sampledPeak = Math.max(sampledPeak, memory(media.pid as number).rss);
  }, 20);
  const started = performance.now();
  const answer = await uploadGenerated(`http://127.0.0.1:${port}/v1/media`, token, sizeMib);
  const seconds = (performance.now() - started) / 1000;
  clearInterval(sampler);
  const after = memory(media.pid as number);
  console.log(
    JSON.stringify(
      {
        uploadMiB: sizeMib,
        status: answer.status,
        storedSize: answer.body.size,
        seconds: round(seconds),
        throughputMiBs: round(sizeMib / seconds),
        rssBeforeMiB: round(before.rss / MIB),
        rssPeakSampledMiB: round(sampledPeak / MIB),
        rssHighWaterMarkMiB: round(after.hwm / MIB),
      },
      null,
      2,
    ),
  );
} finally {
  media.kill('SIGTERM');
  await new Promise((r) => media.once('exit', r));
  keyServer.close();
  await cleanUp();
}

/** Streams a multipart body of `mib` MiB of random bytes (one 1 MiB buffer reused), honouring backpressure. */
function uploadGenerated(url: string, token: string, mib: number): Promise<{ status: number; body: { size?: number } }> {
  const boundary = `----rss${randomBytes(6).toString('hex')}`;
  const chunk = randomBytes(MIB);
  return new Promise((resolve, reject) => {
    const req = request(url, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': `multipart/form-data; boundary=${boundary}` },
    });
    req.on('error', reject);
    req.on('response', async (res) => {
      let text = '';
      for await (const part of res) text += part;
      resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) });
    });
    req.write(
      `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="big.bin"\r\nContent-Type: application/octet-stream\r\n\r\n`,
    );
    let sent = 0;
    const pump = () => {
      while (sent < mib) {
        sent++;
        if (!req.write(chunk)) return void req.once('drain', pump);
      }
      req.end(`\r\n--${boundary}--\r\n`);
    };
    pump();
  });
}

function memory(pid: number): { rss: number; hwm: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kib = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? 0) * 1024;
  return { rss: kib('VmRSS'), hwm: kib('VmHWM') };
}

async function waitReady(url: string, child: ChildProcess) {
  for (const deadline = Date.now() + 60_000; Date.now() < deadline; ) {
    if (child.exitCode !== null) throw new Error(`media exited with ${child.exitCode}`);
    if (
      await fetch(url).then(
        (r) => r.ok,
        () => false,
      )
    )
      return;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error('media was not ready in time');
}

function listen(server: ReturnType<typeof createServer>): Promise<number> {
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      resolve(port);
    }),
  );
}

async function cleanUp() {
  await removeBucket(new Client(parseMinioUrl(minioUrl)), bucket).catch(() => {});
  const bus = await connectBus({ url: natsUrl, namespace, name: 'rss-cleanup', log: createLogger({ service: 'rss', level: 'silent' }) });
  await deleteNamespaceStreams(bus, namespace);
  await bus.nc.drain();
  await database.drop();
}

function round(n: number): number {
  return Math.round(n * 10) / 10;
}
