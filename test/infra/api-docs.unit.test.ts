import { readFile } from 'node:fs/promises';
import { ALL_ROUTES, apiMarkdown, buildOpenApi } from '@chat/contracts';
import { describe, expect, it } from 'vitest';
import { docsPage } from '../../services/gateway/src/routes/docs-page.ts';

/** The API reference shipped in the repository and the one the gateway serves both name every route of the contracts. */
const openApiPath = (path: string) => path.replace(/:(\w+)/g, '{$1}');

describe('the API reference', () => {
  it('docs/api.md is what `npm run docs:api` writes from the contracts today', async () => {
    const shipped = await readFile(new URL('../../docs/api.md', import.meta.url), 'utf8');
    expect(shipped).toBe(apiMarkdown(ALL_ROUTES));
  });

  it('names every route of the contracts, in docs/api.md and on the page the gateway serves', async () => {
    const shipped = await readFile(new URL('../../docs/api.md', import.meta.url), 'utf8');
    const page = docsPage(buildOpenApi(ALL_ROUTES, { title: 'Chat platform API', version: '1.0.0' }));
    expect(ALL_ROUTES.length).toBeGreaterThan(100);
    for (const route of ALL_ROUTES) {
      expect(shipped, `${route.method} ${route.path} in docs/api.md`).toContain(`| ${route.method} | \`${route.path}\` |`);
      expect(page, `${route.method} ${route.path} on /v1/docs`).toContain(openApiPath(route.path));
    }
  });
});
