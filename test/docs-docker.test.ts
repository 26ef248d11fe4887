/**
 * docs/docker.md keeps up with the compose file: every service and every variable compose reads
 * (`${REGBRIDGE_...}`) is named there, so a new service or port cannot go undocumented.
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '..');
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
    expect(services).toContain('controller-service');
    expect(variables).toContain('REGBRIDGE_CONTROLLER_PORT');
    const missing = [...services, ...variables].filter((name) => !docs.includes(`\`${name}\``));
    expect(missing).toEqual([]);
  });
});
