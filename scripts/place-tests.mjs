#!/usr/bin/env node
/**
 * Moves every suite left at the root of test/ (test/*.test.ts) into its folder by its name (README,
 * "Tests"; the folder is the suite's vitest project, vitest.config.ts), one level deeper: relative
 * imports and `new URL('../x', import.meta.url)` / `import.meta.dirname, '..'` paths gain a `../`,
 * and the repository's text files citing `test/<name>` cite `test/<folder>/<name>`.
 * Usage: node scripts/place-tests.mjs [--dry-run]. Exits 1 naming a suite no rule places.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const TEST = join(ROOT, 'test');

// First match wins: a `*-cli` suite is a CLI one whatever its prefix, a `*-docs` one a docs check.
const RULES = [
  [/^cli-|-cli\.test\.ts$|^(demo|compose|java-client|readme-examples|run-command|tls-services)\./, 'cli'],
  [/^docs-|-docs\.test\.ts$|^layers\./, 'docs'],
  [/^dashboard-/, 'dashboard'],
  [/^controller-/, 'controller'],
  [/^(broker|nats|hub)-|^(cluster|failover|store-config)\./, 'broker'],
  [/^(bridge|mqtt|reconnect|trust|serve)-|^topics\./, 'bridge'],
  [
    /^(auth|http|task|command|simulator|client|device|request|rest|openapi)-|^(simulator|config|tls)\./,
    'device',
  ],
  [/^bench-|^(engines|footprint|heap-growth)\./, 'tooling'],
];

function folderOf(name) {
  return RULES.find(([rule]) => rule.test(name))?.[1];
}

/** The suite's text as seen from one folder deeper. */
function deepen(text) {
  return (
    text
      // import ... from './x' | '../x', import('./x'), vi.mock('./x')
      .replace(
        /(?<!['"`])(\bfrom\s+|\bimport\s*\(\s*|\bimport\s+|\bmock\(\s*)(['"])(\.\.?\/)/g,
        (_, head, quote, rel) => `${head}${quote}${rel === './' ? '../' : '../../'}`,
      )
      // new URL('../x', import.meta.url) and new URL(`../${file}`, import.meta.url)
      .replace(
        /(new URL\(\s*)(['"`])(\.\.?\/)(?=[^'"`]*\2\s*,\s*import\.meta\.url)/g,
        (_, head, quote, rel) => `${head}${quote}${rel === './' ? '../' : '../../'}`,
      )
      // join(import.meta.dirname, '..', ...) / resolve(import.meta.dirname, '..')
      .replace(
        /(import\.meta\.dirname,\s*)(['"])\.\.\2/g,
        (_, head, quote) => `${head}${quote}..${quote}, ${quote}..${quote}`,
      )
  );
}

function tracked(file) {
  try {
    execFileSync('git', ['ls-files', '--error-unmatch', file], { cwd: ROOT, stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

function citingFiles() {
  const out = execFileSync('git', ['ls-files', '-z'], { cwd: ROOT, encoding: 'utf8' });
  return out
    .split('\0')
    .filter(
      (f) =>
        /\.(md|ts|mjs|js|json|ya?ml|sh|java)$|^\.ci\/run$|Dockerfile$/.test(f) && existsSync(join(ROOT, f)),
    );
}

const dryRun = process.argv.includes('--dry-run');
const moves = [];
const unplaced = [];
for (const name of readdirSync(TEST)
  .filter((f) => f.endsWith('.test.ts'))
  .sort()) {
  const folder = folderOf(name);
  if (folder) moves.push([name, folder]);
  else unplaced.push(name);
}
if (unplaced.length > 0) {
  console.error(`no rule in scripts/place-tests.mjs places: ${unplaced.join(', ')}; add one`);
  process.exit(1);
}
for (const [name, folder] of moves) {
  const from = join('test', name);
  const to = join('test', folder, name);
  console.log(`${from} -> ${to}`);
  if (dryRun) continue;
  mkdirSync(join(ROOT, 'test', folder), { recursive: true });
  if (tracked(from)) execFileSync('git', ['mv', from, to], { cwd: ROOT });
  else renameSync(join(ROOT, from), join(ROOT, to));
  writeFileSync(join(ROOT, to), deepen(readFileSync(join(ROOT, to), 'utf8')));
}
if (!dryRun && moves.length > 0) {
  const cited = new Map(moves.map(([name, folder]) => [name, `test/${folder}/${name}`]));
  const pattern = new RegExp(
    `(?<![\\w/.-])test/(${moves.map(([n]) => n.replace(/\./g, '\\.')).join('|')})`,
    'g',
  );
  for (const file of citingFiles()) {
    const text = readFileSync(join(ROOT, file), 'utf8');
    const next = text.replace(pattern, (_, name) => cited.get(name));
    if (next !== text) writeFileSync(join(ROOT, file), next);
  }
  console.log(`placed ${moves.length} suite(s); then: npx biome check --write test && npm run typecheck`);
}
