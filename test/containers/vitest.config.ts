import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

// `npm run test:containers` (through test/containers/run.sh, which provides the engine).
export default defineConfig({
  root: fileURLToPath(new URL('../..', import.meta.url)),
  test: {
    include: ['test/containers/**/*.test.ts'],
    testTimeout: 120_000,
    // The image build: dependencies, compilers and the TypeScript build on a cold cache.
    hookTimeout: 900_000,
  },
});
