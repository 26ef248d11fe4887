import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // The consumer and container suites run through their own scripts (npm run test:consumer,
    // npm run test:containers), not in `npm test`.
    exclude: ['test/package/**', 'test/containers/**'],
    // CLI suites spawn bin/regbridge.js, which runs dist/: rebuilt first when stale.
    globalSetup: ['test/setup/fresh-dist.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // Integration suites start real brokers and child processes; two cores share them.
    maxWorkers: 2,
    pool: 'forks',
  },
});
