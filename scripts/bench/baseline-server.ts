import Fastify from 'fastify';

// The baseline: a bare Fastify JSON hello-world, no logger, no hooks. It runs as its own process
// on the same machine in the same run, so every scenario's figures have a reference measured
// under the same conditions (the load generator shares the cores with it, as with the platform).
const port = Number(process.argv[2]);
const app = Fastify({ logger: false });
app.get('/', async () => ({ hello: 'world' }));
await app.listen({ host: '127.0.0.1', port });
for (const signal of ['SIGTERM', 'SIGINT'] as const) process.once(signal, () => app.close().then(() => process.exit(0)));
