import { z } from 'zod';
import { ErrorBody } from './common.ts';
import { ClientFrame, PresenceUpdateData, ReadyData, ServerFrame, TypingStartData } from './realtime.ts';
import type { RouteContract } from './route.ts';

const STATUS_TEXT: Record<number, string> = {
  200: 'OK',
  201: 'Created',
  202: 'Accepted',
  204: 'No content',
  400: 'Invalid input',
  401: 'Missing or invalid access token',
  403: 'Missing permission',
  404: 'Not found or not visible to the caller',
  409: 'Conflict',
  413: 'Too large',
  415: 'Wrong media type',
  429: 'Rate limited (Retry-After)',
  503: 'A backing part or service is down',
};

type JsonSchema = Record<string, unknown>;

/** The OpenAPI 3.1 document of every route, generated from the same zod schemas that validate. */
export function buildOpenApi(routes: RouteContract[], info: { title: string; version: string }): JsonSchema {
  const components: Record<string, JsonSchema> = {};
  toSchema(ErrorBody, 'output', components);
  // The real-time socket is one GET (its upgrade); its frames are documented as named schemas.
  for (const frame of [ClientFrame, ServerFrame, ReadyData, PresenceUpdateData, TypingStartData]) toSchema(frame, 'output', components);
  const paths: Record<string, Record<string, JsonSchema>> = {};
  for (const route of routes) {
    const path = route.path.replace(/:([A-Za-z]+)/g, '{$1}');
    paths[path] ??= {};
    (paths[path] as Record<string, JsonSchema>)[route.method.toLowerCase()] = operation(route, components);
  }
  return {
    openapi: '3.1.0',
    info,
    servers: [{ url: '/' }],
    components: {
      schemas: components,
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' } },
    },
    paths,
  };
}

function operation(route: RouteContract, components: Record<string, JsonSchema>): JsonSchema {
  const op: JsonSchema = {
    operationId: `${route.method.toLowerCase()}${route.path.replace(/[^A-Za-z0-9]+(.)?/g, (_, c: string | undefined) => (c ? c.toUpperCase() : ''))}`,
    summary: route.summary,
    tags: [route.service],
    security: route.auth ? [{ bearer: [] }] : [],
    'x-rate-tier': route.tier,
    parameters: [...parameters(route.params, 'path'), ...parameters(route.query, 'query')],
    responses: responses(route, components),
  };
  if (route.body)
    op.requestBody = { required: true, content: { 'application/json': { schema: toSchema(route.body, 'input', components) } } };
  if (route.multipart) {
    op.requestBody = {
      required: true,
      content: {
        'multipart/form-data': {
          schema: { type: 'object', properties: { file: { type: 'string', format: 'binary' } }, required: ['file'] },
        },
      },
    };
  }
  return op;
}

function responses(route: RouteContract, components: Record<string, JsonSchema>): JsonSchema {
  const out: JsonSchema = {
    [route.status]: route.response
      ? {
          description: STATUS_TEXT[route.status] ?? 'Success',
          content: { 'application/json': { schema: toSchema(route.response, 'output', components) } },
        }
      : { description: STATUS_TEXT[route.status] ?? 'Success' },
  };
  for (const [status, alt] of Object.entries(route.alternatives ?? {})) {
    out[status] = alt.response
      ? { description: alt.description, content: { 'application/json': { schema: toSchema(alt.response, 'output', components) } } }
      : { description: alt.description };
  }
  const errorStatuses = { 400: '', ...(route.auth ? { 401: '' } : {}), 429: '', ...(route.errors ?? {}) };
  for (const [status, text] of Object.entries(errorStatuses)) {
    out[status] = {
      description: text || STATUS_TEXT[Number(status)] || 'Error',
      content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
    };
  }
  return out;
}

function parameters(schema: z.ZodType | undefined, where: 'path' | 'query'): JsonSchema[] {
  if (!schema) return [];
  const json = toSchema(schema, 'input');
  const props = (json.properties ?? {}) as Record<string, JsonSchema>;
  const required = new Set((json.required ?? []) as string[]);
  return Object.entries(props).map(([name, s]) => ({ name, in: where, required: where === 'path' || required.has(name), schema: s }));
}

/** Named schemas (`.meta({id})`) become components; the rest is inlined. */
export function toSchema(schema: z.ZodType, io: 'input' | 'output', components?: Record<string, JsonSchema>): JsonSchema {
  const generated = z.toJSONSchema(schema, { io, unrepresentable: 'any', target: 'draft-2020-12' });
  const json = JSON.parse(JSON.stringify(generated).replaceAll('"#/$defs/', '"#/components/schemas/')) as JsonSchema;
  const defs = (json.$defs ?? {}) as Record<string, JsonSchema>;
  delete json.$defs;
  delete json.$schema;
  if (components) Object.assign(components, defs);
  else if (Object.keys(defs).length) return { ...json, $defs: defs };
  return json;
}
