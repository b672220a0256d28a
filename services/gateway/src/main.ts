import { configOrExit, connectBus, createLogger, natsCheck, serve } from '@chat/kit';
import { buildApp } from './app.ts';
import { GatewayConfig } from './config.ts';

const config = configOrExit(GatewayConfig, 'gateway');
const log = createLogger({ service: 'gateway', level: config.LOG_LEVEL });
const bus = await connectBus({ url: config.NATS_URL, namespace: config.BUS_NAMESPACE, name: 'gateway', log });
const app = await buildApp({ config, log, checks: { nats: () => natsCheck(bus) } });
await serve({ app, host: config.HOST, port: config.PORT, graceMs: config.SHUTDOWN_GRACE_MS, log, onClose: () => bus.nc.drain() });
