import { z } from 'zod';
import { defineRoute } from '../route.ts';

export const HealthReport = z
  .object({
    status: z.enum(['ok', 'degraded']),
    services: z.record(
      z.string(),
      z.object({ status: z.enum(['ready', 'unavailable']), checks: z.record(z.string(), z.string()).optional() }),
    ),
  })
  .meta({ id: 'HealthReport' });

export const gatewayRoutes = {
  health: defineRoute({
    method: 'GET',
    path: '/v1/health',
    service: 'gateway',
    summary: "Readiness of the gateway and every service (503 with the same shape when one isn't ready)",
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
