import { readdirSync } from 'node:fs';
import { defineConfig } from 'vitest/config';

/**
 * One vitest project per folder of test/ (README, "Tests"), run together by `npm test` and one at
 * a time with `npx vitest run --project <folder>`. A suite's folder is its layer: device (src/, the
 * REST app and the engine), bridge, broker, controller, dashboard (Chromium), cli (the commands,
 * the compose file and the Java client as child processes; .ci/run runs it on Node 20 only), docs
 * (docs, errors and layer checks) and tooling (build, bench, engines). scripts/place-tests.mjs
 * moves a suite written at the root of test/ into its folder by its name.
 */
const FOLDERS = ['device', 'bridge', 'broker', 'controller', 'dashboard', 'cli', 'docs', 'tooling'];

// A suite at the root would run in no project: say so instead of passing without it.
const unplaced = readdirSync(new URL('./test/', import.meta.url)).filter((name) => name.endsWith('.test.ts'));
if (unplaced.length > 0) {
  throw new Error(`test/${unplaced[0]} is in no folder: node scripts/place-tests.mjs moves it`);
}

// REGBRIDGE_TEST_EXCLUDE: comma-separated files a CI leg leaves out (a project's own exclude list
// overrides vitest's --exclude flag).
const EXCLUDE = (process.env.REGBRIDGE_TEST_EXCLUDE ?? '').split(',').filter(Boolean);

export default defineConfig({
  test: {
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // Suites start real brokers and child processes; two cores share them.
    maxWorkers: 2,
    pool: 'forks',
    projects: FOLDERS.map((name) => ({
      extends: true,
      test: {
        name,
        include: [`test/${name}/**/*.test.ts`],
        exclude: EXCLUDE,
        // Suites that spawn bin/regbridge.js run dist/: rebuilt first when stale.
        globalSetup: ['test/setup/fresh-dist.ts'],
      },
    })),
  },
});
