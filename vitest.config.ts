import { defineConfig } from 'vitest/config';

/**
 * Three tiers (README, "Tests"), run together by `npm test` and one at a time with
 * `npx vitest run --project <name>` (npm run test:unit | test:integration | test:cli):
 * - unit: in one process, no broker: the engine, the REST app through app.inject() or its own
 *   loopback port, config, clients against a device, and the checks of docs and layers;
 * - cli: the commands as a user runs them, `node bin/regbridge.js ...` (and the Java client, the
 *   compose file) as child processes; .ci/run runs this tier on Node 20 only;
 * - integration: everything else, with real brokers (the store broker, mosquitto, nats-server,
 *   redis-server) on free ports, and real programs (the command executor's, openssl, Chromium).
 *   A new suite lands here unless listed in another tier.
 */
const UNIT = [
  'test/auth-*.test.ts',
  'test/bench-goals.test.ts',
  'test/client-device.test.ts',
  'test/client-stub.test.ts',
  'test/config.test.ts',
  'test/controller-unit.test.ts',
  'test/controller-webhooks.test.ts',
  'test/docs-docker.test.ts',
  'test/docs-links.test.ts',
  'test/docs-reference.test.ts',
  'test/engines.test.ts',
  'test/errors-docs.test.ts',
  'test/http-*.test.ts',
  'test/layers.test.ts',
  'test/openapi-generators.test.ts',
  'test/rest-fuzz.test.ts',
  'test/simulator*.test.ts',
  'test/task-*.test.ts',
  'test/topics.test.ts',
];

const CLI = [
  'test/broker-cli.test.ts',
  'test/cli-*.test.ts',
  'test/compose.test.ts',
  'test/controller-service-cli.test.ts',
  'test/demo.test.ts',
  'test/java-client.test.ts',
  'test/readme-examples.test.ts',
  'test/run-command.test.ts',
  'test/serve-cli.test.ts',
  'test/tls-services.test.ts',
];

// The consumer and container suites run through their own scripts (npm run test:consumer,
// npm run test:containers), not in `npm test`.
const ELSEWHERE = ['test/package/**', 'test/containers/**'];

// Suites that spawn bin/regbridge.js run dist/: rebuilt first when stale.
const FRESH_DIST = ['test/setup/fresh-dist.ts'];

export default defineConfig({
  test: {
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // Integration suites start real brokers and child processes; two cores share them.
    maxWorkers: 2,
    pool: 'forks',
    projects: [
      { extends: true, test: { name: 'unit', include: UNIT } },
      {
        extends: true,
        test: {
          name: 'integration',
          include: ['test/**/*.test.ts'],
          // REGBRIDGE_TEST_EXCLUDE: comma-separated files a CI leg leaves out (a project's own
          // exclude list overrides vitest's --exclude flag).
          exclude: [
            ...UNIT,
            ...CLI,
            ...ELSEWHERE,
            ...(process.env.REGBRIDGE_TEST_EXCLUDE ?? '').split(',').filter(Boolean),
          ],
          globalSetup: FRESH_DIST,
        },
      },
      { extends: true, test: { name: 'cli', include: CLI, globalSetup: FRESH_DIST } },
    ],
  },
});
