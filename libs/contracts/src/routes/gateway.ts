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
  docs: defineRoute({
    method: 'GET',
    path: '/v1/docs',
    service: 'gateway',
    summary: 'A readable reference page of this API',
    auth: false,
    status: 200,
    response: null,
  }),
};
