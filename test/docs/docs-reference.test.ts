/**
 * The repository's docs are its users' reference: nothing points at a page users do not have or
 * a file the repository does not hold, docs/api.md names every REST route and every error code
 * the device answers with, and docs/mqtt.md names every topic the device and the controller use.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, normalize } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { topics } from '../../bridge/contract/topics.ts';
import { errorRegistry, hasHttpStatus } from '../../src/errors.ts';
import { ROOT } from '../support/controller-cli.ts';
import { startTestApp, type TestApp } from '../support/http.ts';

const read = (file: string): string => readFileSync(new URL(`../../${file}`, import.meta.url), 'utf8');

describe('no reference to a document users do not have', () => {
  it('README, docs, code and tests cite docs/*.md, never the internal contract page or its sections', () => {
    // Built from pieces so this file does not match itself.
    const forbidden = [
      ['contract', 'section'].join(' '),
      ['shared', 'contract'].join('/'),
      `contract${'.md'}`,
    ];
    const files = execFileSync('git', ['ls-files'], { cwd: ROOT, encoding: 'utf8' })
      .split('\n')
      .filter((file) => /\.(md|ts|js|mjs|java|ya?ml|json)$/.test(file) || file === 'Dockerfile');
    const hits: string[] = [];
    for (const file of files) {
      let text: string;
      try {
        text = read(file);
      } catch {
        continue; // deleted in the work tree
      }
      for (const word of forbidden) {
        const index = text.toLowerCase().indexOf(word);
        if (index >= 0) hits.push(`${file}: ...${text.slice(Math.max(0, index - 30), index + 40)}...`);
      }
    }
    expect(hits).toEqual([]);
  });
});

/** Folders of the repository a citation starts with. */
const ROOTS = 'src|bridge|broker|controller|cli|bench|test|scripts|docs|bin|clients|docker|.ci';
/** A repository path cited in text: a root folder, then path characters; not part of a URL or longer path. */
const CITED = new RegExp(`(?<![\\w./@:-])(?:${ROOTS})/[\\w./*<>{}-]*[\\w/*>}]`, 'g');
/** A relative Markdown link target: [text](target), without a scheme or an anchor-only target. */
const LINK = /\]\((?!\w+:|#)([^)\s#]+)(?:#[^)]*)?\)/g;
/** Lines of code that are comments (`//`, `/* ... *\/` bodies, shell `#`). */
const COMMENT = /^\s*(\/\/|\/\*|\*|#)/;

/** The paths `text` cites that do not exist, as `file: path`. */
function missingCitations(file: string, text: string, exists: (path: string) => boolean): string[] {
  const markdown = file.endsWith('.md');
  const lines = markdown ? text.split('\n') : text.split('\n').filter((line) => COMMENT.test(line));
  const missing: string[] = [];
  for (const line of lines) {
    for (const [path] of line.matchAll(CITED)) {
      // Placeholders and globs (`docs/decisions/<slug>.md`, `test/http-*.test.ts`) name no file.
      if (/[*<{]/.test(path)) continue;
      if (!exists(path)) missing.push(`${file}: ${path}`);
    }
    if (!markdown) continue;
    for (const [, target] of line.matchAll(LINK)) {
      const path = normalize(join(dirname(file), target!));
      if (!exists(path)) missing.push(`${file}: ${target}`);
    }
  }
  return missing;
}

describe('every cited repository path exists', () => {
  const exists = (path: string): boolean => existsSync(join(ROOT, path));

  it('finds citations that do not exist, in docs and in code comments, and only those', () => {
    const there = (path: string): boolean => ['docs/api.md', 'src/app.ts', 'docs'].includes(path);
    expect(missingCitations('docs/x.md', 'see docs/api.md and [api](api.md), src/gone.ts.', there)).toEqual([
      'docs/x.md: src/gone.ts',
    ]);
    expect(missingCitations('docs/x.md', '[old](old.md#anchor) and https://x.org/src/y.ts', there)).toEqual([
      'docs/x.md: old.md',
    ]);
    const code = "// src/app.ts and docs/none.md\nconst p = 'src/written-at-run-time.ts';\n * docs/gone.md";
    expect(missingCitations('a.ts', code, there)).toEqual(['a.ts: docs/none.md', 'a.ts: docs/gone.md']);
    expect(
      missingCitations('docs/x.md', 'a new `docs/decisions/<slug>.md`, `test/http-*.test.ts`', there),
    ).toEqual([]);
  });

  it('README, docs and code comments cite only files the repository holds', () => {
    const files = execFileSync('git', ['ls-files'], { cwd: ROOT, encoding: 'utf8' })
      .split('\n')
      // The changelog names what was removed, on purpose.
      .filter((file) => file !== 'CHANGELOG.md')
      .filter((file) => /\.(md|ts|js|mjs|sh|java|ya?ml)$/.test(file) || /(^|\/)(Dockerfile|run)$/.test(file))
      .filter((file) => exists(file));
    const missing = files.flatMap((file) => missingCitations(file, read(file), exists));
    expect(missing).toEqual([]);
  });
});

describe('docs/api.md is the REST reference', () => {
  let t: TestApp;
  let paths: Record<string, Record<string, unknown>>;
  const api = read('docs/api.md');

  beforeAll(async () => {
    t = await startTestApp();
    paths = ((await t.app.inject({ url: '/openapi.json' })).json() as { paths: typeof paths }).paths;
  });
  afterAll(() => t.close());

  it('names every route the device serves, method and path', () => {
    const routes = Object.entries(paths).flatMap(([path, item]) =>
      Object.keys(item).map((method) => `${method.toUpperCase()} ${path}`),
    );
    expect(routes.length).toBeGreaterThanOrEqual(10);
    const missing = routes.filter((route) => !api.includes(route));
    expect(missing, 'routes missing from docs/api.md').toEqual([]);
  });

  it('names every error code a REST route can answer', () => {
    const codes = Object.keys(errorRegistry).filter((code) =>
      hasHttpStatus(code as keyof typeof errorRegistry),
    );
    const controller = read('docs/controller.md');
    // The controller service answers its own codes, documented in docs/controller.md.
    const missing = codes.filter(
      (code) => !api.includes(`\`${code}\``) && !controller.includes(`\`${code}\``),
    );
    expect(missing, 'error codes missing from docs/api.md').toEqual([]);
  });
});

describe('docs/mqtt.md is the MQTT reference', () => {
  it('names every topic and subscription filter the device and the controller use', () => {
    const mqtt = read('docs/mqtt.md');
    // Built with markers, then written the way the docs write them.
    const shown = (topic: string): string =>
      topic
        .replaceAll('NSX', '<ns>')
        .replaceAll('DEVX', '<deviceId>')
        .replaceAll('GRPX', '<group>')
        .replaceAll('REQX', '<requestId>')
        .replaceAll('424242', '<id>');
    const used = Object.entries(topics).map(([name, build]) => {
      const topic = (build as (...args: unknown[]) => string)(
        'NSX',
        name.startsWith('group') ? 'GRPX' : 'DEVX',
        name === 'deviceReply' ? 'REQX' : 424242,
      );
      return shown(topic);
    });
    expect(used).toContain('<ns>/devices/<deviceId>/tasks/<id>/status');
    const missing = used.filter((topic) => !mqtt.includes(`\`${topic}\``));
    expect(missing, 'topics missing from docs/mqtt.md').toEqual([]);
  });
});
