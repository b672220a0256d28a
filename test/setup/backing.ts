import { type Backing, resolveBacking } from '@chat/testkit';
import type { TestProject } from 'vitest/node';

declare module 'vitest' {
  export interface ProvidedContext {
    backing: Backing;
  }
}

/** Finds (or starts) PostgreSQL, Redis, NATS and MinIO once per run and hands them to every test file. */
export default async function setup(project: TestProject) {
  const resolved = await resolveBacking();
  project.provide('backing', resolved.backing);
  return () => resolved.stop();
}
