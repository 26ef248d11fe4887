import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

// `npm run test:consumer`: the packed tarball, installed into a temporary project.
export default defineConfig({
  root: fileURLToPath(new URL('../..', import.meta.url)),
  test: {
    include: ['test/package/**/*.test.ts'],
    testTimeout: 60_000,
    // npm pack (with its build) and an npm install from the registry.
    hookTimeout: 600_000,
  },
});
