import { z } from 'zod';
import { defineRoute } from '../route.ts';

/**
 * Each process `ready`, `degraded` (serving without a part it can do without, such as the bus or
 * Redis) or `unavailable`. No error text: reasons go to the logs and the operators' probes only.
 */
export const HealthReport = z
  .strictObject({
    status: z.enum(['ok', 'degraded']),
    services: z.record(z.string(), z.strictObject({ status: z.enum(['ready', 'degraded', 'unavailable']) })),
  })
  .meta({ id: 'HealthReport' });

export const GatewayInfo = z.object({ url: z.string() }).meta({ id: 'GatewayInfo' });

export const gatewayRoutes = {
  health: defineRoute({
    method: 'GET',
    path: '/v1/health',
    service: 'gateway',
    summary:
      'Readiness of the gateway and every service: 200 while all can serve (`ok`, or `degraded` without the bus or Redis), 503 with the same shape when one is unavailable',
    auth: false,
    status: 200,
    response: HealthReport,
  }),
  openapi: defineRoute({
    method: 'GET',
    path: '/v1/openapi.json',
    service: 'gateway',
    summary: 'This OpenAPI 3.1 document',
    auth: false,
    status: 200,
    response: z.record(z.string(), z.unknown()),
  }),
  asyncapi: defineRoute({
    method: 'GET',
    path: '/v1/asyncapi.json',
    service: 'gateway',
    summary: 'The AsyncAPI 3.0 document of the real-time socket: every frame and every dispatch with its payload schema',
    auth: false,
    status: 200,
    response: z.record(z.string(), z.unknown()),
  }),
  docs: defineRoute({
    method: 'GET',
    path: '/v1/docs',
    service: 'gateway',
    summary: 'A readable reference page of this API',
    auth: false,
    status: 200,
    response: null,
  }),
  gateway: defineRoute({
    method: 'GET',
    path: '/v1/gateway',
    service: 'gateway',
    summary: 'Where to open the real-time event socket (a WebSocket; see /v1/docs, section realtime)',
    auth: false,
    status: 200,
    response: GatewayInfo,
  }),
  socket: defineRoute({
    method: 'GET',
    path: '/v1/gateway/ws',
    service: 'gateway',
    summary:
      'The real-time event socket: a WebSocket upgrade (101). Frames {op, d, s, t}: HELLO, IDENTIFY {token}, READY, dispatches, HEARTBEAT/ACK, RESUME {token, sessionId, seq}, RECONNECT, INVALID_SESSION; close codes 4001-4009',
    auth: false,
    status: 101,
    response: null,
    errors: { 400: 'Not a WebSocket upgrade', 429: 'Too many requests (General tier)' },
  }),
};
