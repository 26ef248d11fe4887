#!/usr/bin/env node
// The `regbridge` command: the built CLI, bundled in dist/bundle/ (`npm run build`; `npm ci` builds
// it through `prepare`). Run the TypeScript sources instead with `npm run dev -- <command>`.
const MISSING = 'regbridge: dist/ is missing; run `npm run build` first (npm ci runs it).';

try {
  await import('../dist/bundle/main.js');
} catch (error) {
  if (error?.code === 'ERR_MODULE_NOT_FOUND' && String(error.message).includes('dist/bundle/main.js')) {
    console.error(MISSING);
    process.exit(1);
  }
  throw error;
}
