/**
 * What a new user's first hour leaves in the clone (the README's and docs/client.md's example
 * files, `out/`, a default controller's history) is ignored by git, so `git status` stays clean;
 * the examples themselves write only under a folder made by `mktemp -d`.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../support/controller-cli.ts';

describe('files the examples leave behind', () => {
  it.each([
    'script.txt',
    'x-report.txt',
    'sale.txt',
    'out/report.txt',
    'regbridge-controller.db',
    'regbridge-controller.db-wal',
  ])('%s is ignored', (path) => {
    const ignored = execFileSync('git', ['check-ignore', '--no-index', '-v', path], {
      cwd: ROOT,
      encoding: 'utf8',
    });
    expect(ignored).toContain('.gitignore');
  });
});

describe("the README's and docs/client.md's examples write only to a temporary folder", () => {
  it.each(['README.md', 'docs/client.md'])('%s', (doc) => {
    const text = readFileSync(join(ROOT, doc), 'utf8');
    const code = [...text.matchAll(/^```\w*\n([\s\S]*?)^```$/gm)].map((match) => match[1]!).join('\n');
    // A shell redirection (`> file`, `>> file`) or javac's `-d folder`: where a command writes.
    const targets = [...code.matchAll(/(?:^|\s)(?:>>?|javac -d)\s*("?[^\s;|&]+)/gm)].map(
      (match) => match[1]!,
    );
    const folders = new Set([...code.matchAll(/\b(\w+)=\$\(mktemp -d\)/g)].map((match) => match[1]!));
    expect(targets.length).toBeGreaterThan(0);
    const elsewhere = targets.filter((target) => {
      const folder = /^"?\$(\w+)\b/.exec(target)?.[1];
      return !(folder && folders.has(folder)) && target !== '/dev/null';
    });
    expect(elsewhere).toEqual([]);
  });
});
