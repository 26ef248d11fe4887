/**
 * What a new user's first hour leaves in the clone (the README's and docs/client.md's example
 * files, `out/`, a default controller's history) is ignored by git, so `git status` stays clean.
 */
import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { ROOT } from './support/controller-cli.ts';

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
