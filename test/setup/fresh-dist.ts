/**
 * vitest globalSetup: the CLI suites spawn `bin/regbridge.js`, which runs the built JS in dist/
 * (what users run). Rebuild dist/ first when a source of the build is newer than it, so those
 * suites never test stale output; an up-to-date dist/ costs one directory walk.
 */
import { execFileSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const SOURCE_DIRS = ['src', 'bridge', 'broker', 'controller', 'cli'];
const SOURCE_FILES = [
  'tsconfig.json',
  'tsconfig.build.json',
  'package.json',
  'scripts/build.mjs',
  // The code cache of `serve` is taken through the bin, in its format.
  'scripts/code-cache.mjs',
  'bin/regbridge.js',
];
// Every build stamps this file last but for its code cache (scripts/code-cache.mjs), so its age is
// the build's.
const BUILT = join(ROOT, 'dist', 'bundle', 'serve.cjs');

function newestMtime(dir: string): number {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (entry.isFile()) newest = Math.max(newest, statSync(join(entry.parentPath, entry.name)).mtimeMs);
  }
  return newest;
}

function builtAt(): number {
  try {
    return statSync(BUILT).mtimeMs;
  } catch {
    return 0;
  }
}

export default function setup(): void {
  const sources = Math.max(
    ...SOURCE_DIRS.map((dir) => newestMtime(join(ROOT, dir))),
    ...SOURCE_FILES.map((file) => statSync(join(ROOT, file)).mtimeMs),
  );
  if (sources <= builtAt()) return;
  console.log('dist/ is older than the sources: npm run build');
  execFileSync('npm', ['run', 'build', '--silent'], { cwd: ROOT, stdio: 'inherit' });
}
