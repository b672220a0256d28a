import { z } from 'zod';
import type { RouteContract } from './route.ts';

/**
 * docs/api.md, written from the route contracts (`npm run docs:api`): every route with who serves
 * it, its rate tier, whether it needs a token, its inputs and its answers. A test keeps the file
 * equal to what this function writes, so the reference in the repository never drifts from the code.
 */
export function apiMarkdown(routes: readonly RouteContract[]): string {
  const byService = new Map<string, RouteContract[]>();
  for (const route of routes) byService.set(route.service, [...(byService.get(route.service) ?? []), route]);
  const lines = [
    '# API reference',
    '',
    'Written from the route contracts in `libs/contracts/src/routes/` by `npm run docs:api`; do not edit by hand.',
    'The running gateway serves the same operations with their full schemas at `/v1/docs` and `/v1/openapi.json`.',
    '',
    'Every error answers `{"error": "<message>"}`. Paths are under the gateway (default `http://127.0.0.1:8080`).',
    'Tiers: `auth` 5 requests per 60 s per client IP, `general` 300 per 60 s, `webhook` 30 per 60 s per webhook.',
    '',
  ];
  for (const [service, serviceRoutes] of byService) {
    lines.push(`## ${service}`, '', '| method | path | what | token | tier | answer | inputs |', '|---|---|---|---|---|---|---|');
    for (const r of serviceRoutes) lines.push(routeRow(r));
    lines.push('');
  }
  return lines.join('\n');
}

function routeRow(r: RouteContract): string {
  const answers = [`${r.status} ${schemaName(r.response)}`];
  for (const [status, alt] of Object.entries(r.alternatives ?? {})) answers.push(`${status} ${schemaName(alt.response)}`);
  for (const status of Object.keys(r.errors ?? {})) answers.push(status);
  const inputs = [
    fields('path', r.params),
    fields('query', r.query),
    r.multipart ? 'body: multipart/form-data' : fields('body', r.body),
  ].filter(Boolean);
  const cells = [r.method, `\`${r.path}\``, r.summary, r.auth ? 'yes' : 'public', r.tier, answers.join(', '), inputs.join('; ')];
  return `| ${cells.map((c) => c.replaceAll('|', '\\|')).join(' | ')} |`;
}

function schemaName(schema: z.ZodType | null): string {
  if (!schema) return '(no body)';
  const id = z.globalRegistry.get(schema)?.id;
  if (id) return id;
  if (schema instanceof z.ZodArray) return `[${schemaName(schema.element as z.ZodType)}]`;
  return 'object';
}

function fields(where: string, schema: z.ZodType | undefined): string {
  if (!schema) return '';
  const shape = schema instanceof z.ZodObject ? Object.keys(schema.shape) : [];
  return shape.length ? `${where}: ${shape.join(', ')}` : `${where}: see /v1/docs`;
}
