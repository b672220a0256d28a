import { writeFile } from 'node:fs/promises';
import { ALL_ROUTES, apiMarkdown } from '@chat/contracts';

/** Writes docs/api.md from the route contracts (test/infra/api-docs.unit.test.ts checks it is current). */
await writeFile(new URL('../docs/api.md', import.meta.url), apiMarkdown(ALL_ROUTES));
