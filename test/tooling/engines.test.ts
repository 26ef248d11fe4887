/**
 * Supported Node versions (README): 20.19+, 22 and 24. `npm ci` warns EBADENGINE when a locked
 * package's `engines.node` excludes the running Node, so every locked package must accept each
 * supported line. Production dependencies (what `npm i regbridge` installs) must accept 20.19.0,
 * 22.0.0 and 24.0.0; development ones (a checkout's `npm ci`) 20.19.0, 22.12.0 and 24.0.0, as
 * vite, under vitest, needs 22.12 on the 22 line. CI also runs `npm ci` on Node 20 and 24 and
 * fails on any EBADENGINE line (.ci/run). npm 11 runs a dependency's install script only when
 * package.json's `allowScripts` approves it and warns about each it has no entry for: every locked
 * package with one is approved or denied, so `npm ci` is quiet.
 */
import { existsSync, readFileSync } from 'node:fs';
import semver from 'semver';
import { describe, expect, it } from 'vitest';

interface Locked {
  dev?: boolean;
  hasInstallScript?: boolean;
  optional?: boolean;
  engines?: { node?: string } | string[];
}

const pkg = JSON.parse(readFileSync('package.json', 'utf8')) as {
  engines: { node: string };
  allowScripts?: Record<string, boolean>;
};
const lock = JSON.parse(readFileSync('package-lock.json', 'utf8')) as { packages: Record<string, Locked> };

function refusing(versions: string[], dev: boolean): string[] {
  const problems: string[] = [];
  for (const [path, entry] of Object.entries(lock.packages)) {
    if (path === '' || Boolean(entry.dev) !== dev || Array.isArray(entry.engines)) continue;
    // Optional packages for other platforms (wasm, other CPUs) are not installed, so not checked.
    if (entry.optional && !existsSync(path)) continue;
    const range = entry.engines?.node;
    if (!range) continue;
    for (const version of versions)
      if (!semver.satisfies(version, range)) problems.push(`${path} (${range}) refuses ${version}`);
  }
  return problems;
}

describe('engines', () => {
  it('the package declares 20.19 as its floor, and that range holds 22 and 24', () => {
    expect(pkg.engines.node).toBe('>=20.19');
    for (const version of ['20.19.0', '22.0.0', '24.0.0'])
      expect(semver.satisfies(version, pkg.engines.node), version).toBe(true);
    expect(semver.satisfies('20.18.3', pkg.engines.node)).toBe(false);
  });

  it('every production dependency accepts Node 20.19, 22 and 24', () => {
    expect(refusing(['20.19.0', '22.0.0', '24.0.0'], false)).toEqual([]);
  });

  it('every development dependency accepts Node 20.19, 22.12 and 24', () => {
    expect(refusing(['20.19.0', '22.12.0', '24.0.0'], true)).toEqual([]);
  });
});

describe('install scripts (npm 11 allowScripts)', () => {
  it('each locked install script is approved or denied: only better-sqlite3 and esbuild run', () => {
    const scripted = Object.entries(lock.packages)
      .filter(([, entry]) => entry.hasInstallScript)
      .map(([path]) => path.replace(/^.*node_modules\//, ''));
    const allowed = pkg.allowScripts ?? {};
    expect(Object.keys(allowed).sort()).toEqual([...new Set(scripted)].sort());
    // better-sqlite3 fetches or builds its binary, esbuild checks its platform binary; the rest
    // (ssh2, cpu-features, protobufjs: testcontainers only) have optional native parts.
    expect(
      Object.entries(allowed)
        .filter(([, allow]) => allow === true)
        .map(([name]) => name)
        .sort(),
    ).toEqual(['better-sqlite3', 'esbuild']);
    expect(Object.values(allowed).every((allow) => typeof allow === 'boolean')).toBe(true);
  });
});
