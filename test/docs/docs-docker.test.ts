/**
 * docs/docker.md keeps up with the compose file: every service and every variable compose reads
 * (`${REGBRIDGE_...}`) is named there, so a new service or port cannot go undocumented.
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '..', '..');
const compose = readFileSync(resolve(ROOT, 'docker-compose.yml'), 'utf8');
const docs = readFileSync(resolve(ROOT, 'docs/docker.md'), 'utf8');

describe('docs/docker.md', () => {
  it('names every compose service and every variable compose reads', () => {
    const services = compose
      .slice(compose.indexOf('\nservices:'), compose.indexOf('\nvolumes:'))
      .split('\n')
      .map((line) => /^ {2}([a-z0-9-]+):$/.exec(line)?.[1])
      .filter((name): name is string => name !== undefined);
    const variables = [...new Set([...compose.matchAll(/\$\{([A-Z0-9_]+)/g)].map((m) => m[1]!))];
    // Names that say what they are: the long-running service and the one-shot fan-out.
    expect(services).toEqual(expect.arrayContaining(['controller', 'fanout']));
    expect(services).not.toContain('controller-service');
    expect(variables).toContain('REGBRIDGE_CONTROLLER_PORT');
    const missing = [...services, ...variables].filter((name) => !docs.includes(`\`${name}\``));
    expect(missing).toEqual([]);
    expect(docs).toContain('docker compose run --rm fanout');
    for (const doc of [docs, readFileSync(resolve(ROOT, 'docs/controller.md'), 'utf8')])
      expect(doc).not.toMatch(/`controller-service`|run --rm controller\b|`controller` profile/);
  });
});

describe('README: native modules', () => {
  it('names every locked package with an install script, and the toolchain better-sqlite3 may need', () => {
    const readme = readFileSync(resolve(ROOT, 'README.md'), 'utf8');
    const lock = JSON.parse(readFileSync(resolve(ROOT, 'package-lock.json'), 'utf8')) as {
      packages: Record<string, { hasInstallScript?: boolean }>;
    };
    const scripted = Object.entries(lock.packages)
      .filter(([, entry]) => entry.hasInstallScript)
      .map(([path]) => path.replace(/^.*node_modules\//, ''))
      .filter((name) => name !== 'protobufjs'); // dev only, via testcontainers: a JavaScript postinstall, no native build
    expect(scripted).toContain('better-sqlite3');
    expect(scripted.filter((name) => !readme.includes(`\`${name}\``))).toEqual([]);
    expect(readme).toMatch(/C\+\+ toolchain: `apt install build-essential python3`/);
  });
});
