/**
 * The docs' links and examples a new user copies: every `file.md#anchor` (and `#anchor`) link in
 * README.md and docs/*.md names a heading that exists (GitHub's slugs), and every import in a
 * code example names a package entry (`regbridge`, `regbridge/controller`, ...) or, marked
 * `// inside this repository`, a file that exists; the names imported are exported there.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '..', '..');
const FILES = [
  'README.md',
  ...readdirSync(join(ROOT, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
];
const read = (file: string): string => readFileSync(join(ROOT, file), 'utf8');

/** GitHub's heading anchors: inline code and links reduced to their text, then slugged; repeats get -1, -2. */
function anchors(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  let fenced = false;
  for (const line of markdown.split('\n')) {
    if (line.startsWith('```')) fenced = !fenced;
    const heading = fenced ? undefined : /^#{1,6}\s+(.*)$/.exec(line)?.[1];
    if (heading === undefined) continue;
    const text = heading
      .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
      .replace(/[`*_]/g, (c) => (c === '_' ? '_' : ''));
    const base = text
      .trim()
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-');
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  return out;
}

describe('docs links', () => {
  it('every anchor link names a heading that exists', () => {
    const broken: string[] = [];
    for (const file of FILES) {
      const text = read(file).replace(/```[\s\S]*?```/g, '');
      for (const [, target] of text.matchAll(/\]\(([^)\s]*#[^)\s]+)\)/g)) {
        if (/^[a-z]+:/.test(target!)) continue; // other sites
        const [path, anchor] = target!.split('#') as [string, string];
        const targetFile = path === '' ? file : join(dirname(file), path);
        if (!existsSync(join(ROOT, targetFile))) {
          broken.push(`${file}: ${target} (no file)`);
          continue;
        }
        if (!anchors(read(targetFile)).has(anchor)) broken.push(`${file}: ${target}`);
      }
    }
    expect(broken).toEqual([]);
  });
});

const pkg = JSON.parse(read('package.json')) as {
  name: string;
  exports: Record<string, { default?: string } | string>;
};

/** The source file of a package entry: ./dist/controller/index.js -> controller/index.ts. */
function entrySource(spec: string): string | undefined {
  const sub = spec === pkg.name ? '.' : `.${spec.slice(pkg.name.length)}`;
  const target = pkg.exports[sub];
  const dist = typeof target === 'string' ? target : target?.default;
  return dist?.replace(/^\.\/dist\//, '').replace(/\.js$/, '.ts');
}

describe('docs examples', () => {
  it('import package entries, or files of this repository that say so; the names exist', async () => {
    const problems: string[] = [];
    for (const file of FILES) {
      for (const [, block] of read(file).matchAll(/```(?:ts|js|typescript|javascript)\n([\s\S]*?)```/g)) {
        for (const line of block!.split('\n')) {
          const match = /^import\s+\{([^}]*)\}\s+from\s+'([^']+)';(.*)$/.exec(line.trim());
          if (!match) continue;
          const [, names, spec, rest] = match as unknown as [string, string, string, string];
          let source: string | undefined;
          if (spec === pkg.name || spec.startsWith(`${pkg.name}/`)) {
            source = entrySource(spec);
            if (!source) problems.push(`${file}: ${spec} is not a package entry`);
          } else if (spec.startsWith('.')) {
            if (!rest.includes('inside this repository'))
              problems.push(`${file}: ${spec}: use the package entry (or mark "// inside this repository")`);
            source = spec.replace(/^\.\//, '');
          } else continue;
          if (!source) continue;
          if (!existsSync(join(ROOT, source))) {
            problems.push(`${file}: ${spec}: no ${source}`);
            continue;
          }
          const module = (await import(join(ROOT, source))) as Record<string, unknown>;
          for (const name of names
            .split(',')
            .map((n) => n.trim())
            .filter((n) => n && !n.startsWith('type '))) {
            if (!(name in module)) problems.push(`${file}: ${spec} does not export ${name}`);
          }
        }
      }
    }
    expect(problems).toEqual([]);
  });
});
