import { createRequire } from 'node:module';

// The package's own name resolves to its package.json from the sources and from dist/ alike
// (package.json `exports` lists ./package.json).
const require = createRequire(import.meta.url);
export const VERSION: string = (require('regbridge/package.json') as { version: string }).version;
