/**
 * docker-compose.yml as the tests read it: parsed, with compose's `${NAME:-default}` and `${NAME}`
 * interpolation applied from an explicit variable map (never the caller's environment), and the
 * Dockerfile's HEALTHCHECK command. test/cli/compose.test.ts checks the file against the CLI; the
 * container test (test/containers/) starts its services from it, so the two never drift.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { ROOT } from './controller-cli.ts';

export interface ComposeHealthcheck {
  test: string[];
  interval?: string;
  timeout?: string;
  retries?: number;
  start_period?: string;
}

export interface ComposeService {
  image?: string;
  build?: string;
  pull_policy?: string;
  command?: string[];
  environment?: Record<string, string>;
  profiles?: string[];
  healthcheck?: ComposeHealthcheck;
  depends_on?: Record<string, { condition: string }>;
  configs?: { source: string; target: string }[];
  ports?: string[];
  volumes?: string[];
  network_mode?: string;
}

export interface Compose {
  services: Record<string, ComposeService>;
  configs?: Record<string, { content?: string }>;
  volumes?: Record<string, unknown>;
}

/** Compose's interpolation: `${NAME:-default}` (default when unset or empty) and `${NAME}`. */
export function interpolate(text: string, vars: Record<string, string>): string {
  return text.replace(/\$\{([A-Z0-9_]+)(?::-([^}]*))?\}/g, (_match, name: string, fallback?: string) => {
    const value = vars[name];
    if (value !== undefined && value !== '') return value;
    if (fallback !== undefined) return fallback;
    throw new Error(`compose variable ${name} has no value and no default`);
  });
}

/** The raw file (variables not substituted). */
export function readComposeSource(file = 'docker-compose.yml'): Compose {
  return parse(readFileSync(join(ROOT, file), 'utf8')) as Compose;
}

/** The file with every variable substituted from `vars` (unset ones take their defaults). */
export function readCompose(vars: Record<string, string> = {}, file = 'docker-compose.yml'): Compose {
  return parse(interpolate(readFileSync(join(ROOT, file), 'utf8'), vars)) as Compose;
}

/** The Dockerfile's HEALTHCHECK, exec form: its command after CMD. */
export function dockerfileHealthcheck(): string[] {
  const dockerfile = readFileSync(join(ROOT, 'Dockerfile'), 'utf8').replace(/\\\n/g, ' ');
  const line = dockerfile.split('\n').find((l) => l.startsWith('HEALTHCHECK '));
  const json = line?.slice(line.indexOf('CMD ') + 4).trim();
  if (!json) throw new Error('the Dockerfile has no HEALTHCHECK ... CMD [...] line');
  return JSON.parse(json) as string[];
}
