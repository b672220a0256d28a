import { defineConfig } from 'vitest/config';

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
        },
      },
      {
        test: {
          name: 'e2e',
          include: ['test/e2e/**/*.test.ts'],
          globalSetup: ['test/setup/backing.ts', 'test/setup/platform.ts'],
          testTimeout: 30_000,
          hookTimeout: 120_000,
        },
      },
    ],
  },
});
