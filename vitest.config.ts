import { defineConfig } from 'vitest/config';

// What an expect.poll waits for is another process's work (a consumer, a relay); vitest's 1 s is
// too short for it on a loaded machine, and `until` (testkit) gives such work 10 s.
const expect = { poll: { timeout: 10_000 } };

export default defineConfig({
  test: {
    projects: [
      {
        test: {
          name: 'unit',
          include: ['libs/*/test/**/*.unit.test.ts', 'services/*/test/**/*.unit.test.ts', 'test/infra/**/*.unit.test.ts'],
        },
      },
      {
        test: {
          name: 'integration',
          include: ['libs/*/test/**/*.test.ts', 'services/*/test/**/*.test.ts', 'test/contract/**/*.test.ts', 'test/infra/**/*.test.ts'],
          exclude: ['**/*.unit.test.ts', '**/node_modules/**'],
          globalSetup: ['test/setup/backing.ts'],
          testTimeout: 30_000,
          hookTimeout: 90_000,
          expect,
        },
      },
      {
        test: {
          // A platform of its own under load and injected faults (npm run test:faults for the full run).
          name: 'faults',
          include: ['test/faults/**/*.test.ts'],
          // The three-node JetStream cluster builds nats-server on first use and takes minutes: full run only.
          exclude: process.env.FAULTS_FULL === '1' ? [] : ['test/faults/cluster.test.ts'],
          globalSetup: ['test/setup/backing.ts'],
          testTimeout: 240_000,
          hookTimeout: 180_000,
          expect,
        },
      },
      {
        test: {
          name: 'e2e',
          include: ['test/e2e/**/*.test.ts'],
          globalSetup: ['test/setup/backing.ts', 'test/setup/platform.ts'],
          testTimeout: 30_000,
          hookTimeout: 120_000,
          expect,
        },
      },
    ],
  },
});
