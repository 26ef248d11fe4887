/**
 * docker-compose.yml and the CLI must agree (no Docker daemon here): every service's
 * sub-command, every flag and every REGBRIDGE_* variable must exist in `regbridge <cmd> --help`
 * (REGBRIDGE_FOO_BAR is --foo-bar); services, profiles, dependencies and healthchecks are as
 * documented; and the healthcheck scripts really work against a running device and broker.
 */
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { type RunningDevice, startDevice } from '../cli/device.ts';
import { parseServeConfig } from '../cli/serve-config.ts';
import { brokersByName, type RunningBroker } from './helpers/brokers.ts';
import { ROOT, runCli } from './helpers/controller-cli.ts';
import { silent } from './helpers/controller-env.ts';

interface Service {
  command?: string[];
  environment?: Record<string, string>;
  profiles?: string[];
  healthcheck?: { test: string[] };
  depends_on?: Record<string, { condition: string }>;
  configs?: { source: string; target: string }[];
  ports?: string[];
}

interface Compose {
  services: Record<string, Service>;
  configs?: Record<string, { content?: string }>;
}

const run = promisify(execFile);

describe('docker-compose.yml', () => {
  let compose: Compose;
  const helpFlags = new Map<string, Set<string>>();

  async function flagsOf(subcommand: string): Promise<Set<string>> {
    let flags = helpFlags.get(subcommand);
    if (!flags) {
      const help = await runCli([subcommand, '--help']);
      expect(help.code, `regbridge ${subcommand} --help`).toBe(0);
      flags = new Set(help.stdout.match(/--[a-z][a-z0-9-]*/g) ?? []);
      helpFlags.set(subcommand, flags);
    }
    return flags;
  }

  beforeAll(async () => {
    compose = parse(await readFile(join(ROOT, 'docker-compose.yml'), 'utf8')) as Compose;
  });

  it('has a broker, three registers, and controller/watch behind profiles', () => {
    expect(Object.keys(compose.services).sort()).toEqual([
      'broker',
      'controller',
      'reg1',
      'reg2',
      'reg3',
      'watch',
    ]);
    expect(compose.services.controller!.profiles).toEqual(['controller']);
    expect(compose.services.watch!.profiles).toEqual(['watch']);
    for (const name of ['broker', 'reg1', 'reg2', 'reg3'])
      expect(compose.services[name]!.profiles).toBeUndefined();
  });

  it('always-on services have healthchecks; dependants wait for them to be healthy', () => {
    for (const name of ['broker', 'reg1', 'reg2', 'reg3']) {
      expect(compose.services[name]!.healthcheck?.test.slice(0, 3)).toEqual(['CMD', 'node', '-e']);
    }
    for (const name of ['reg1', 'reg2', 'reg3', 'watch']) {
      expect(compose.services[name]!.depends_on).toEqual({ broker: { condition: 'service_healthy' } });
    }
    expect(compose.services.controller!.depends_on).toEqual({
      reg1: { condition: 'service_healthy' },
      reg2: { condition: 'service_healthy' },
      reg3: { condition: 'service_healthy' },
    });
  });

  it('every command is `node bin/regbridge.js <cmd>` with flags the CLI knows', async () => {
    for (const [name, service] of Object.entries(compose.services)) {
      const [node, bin, subcommand, ...args] = service.command ?? [];
      expect([node, bin], name).toEqual(['node', 'bin/regbridge.js']);
      const flags = await flagsOf(subcommand!);
      for (const arg of args.filter((a) => a.startsWith('--'))) {
        expect(flags.has(arg), `${name}: ${subcommand} has no ${arg}`).toBe(true);
      }
    }
  });

  it('every REGBRIDGE_* variable maps to a flag of its service command; credentials have defaults', async () => {
    for (const [name, service] of Object.entries(compose.services)) {
      const subcommand = service.command![2]!;
      const flags = await flagsOf(subcommand);
      for (const [key, value] of Object.entries(service.environment ?? {})) {
        expect(key, `${name}: only REGBRIDGE_* variables`).toMatch(/^REGBRIDGE_[A-Z0-9_]+$/);
        const flag = `--${key.slice('REGBRIDGE_'.length).toLowerCase().replace(/_/g, '-')}`;
        expect(flags.has(flag), `${name}: ${key} -> ${flag} is not a flag of ${subcommand}`).toBe(true);
        // Interpolated variables always carry a default (`${NAME:-default}`), so `up` works bare.
        for (const ref of String(value).match(/\$\{[^}]*\}/g) ?? [])
          expect(ref, `${name}: ${key}`).toMatch(/:-/);
      }
    }
  });

  it('registers publish distinct host ports; the controller reads the X report config', () => {
    const ports = ['reg1', 'reg2', 'reg3'].map((name) => compose.services[name]!.ports![0]!.split(':')[0]);
    expect(new Set(ports).size).toBe(3);
    const controller = compose.services.controller!;
    expect(controller.configs).toEqual([{ source: 'x-report', target: controller.command![3] }]);
    expect(compose.configs?.['x-report']?.content).toMatch(/^X REPORT$/m);
  });

  describe('the healthcheck scripts work', () => {
    let device: RunningDevice;
    let broker: RunningBroker;

    beforeAll(async () => {
      device = await startDevice(
        parseServeConfig({
          port: 0,
          host: '127.0.0.1',
          mqtt: false,
          users: ['admin:pw'],
          logLevel: 'silent',
        }),
        { logger: silent },
      );
      broker = await brokersByName.embedded.start('pos');
    });

    afterAll(async () => {
      await device?.stop();
      await broker?.stop();
    });

    const script = (service: string, port: number, replace: string): string =>
      compose.services[service]!.healthcheck!.test[3]!.replace(replace, String(port));

    it('register: fetch /health answers ok', async () => {
      const check = script('reg1', device.httpPort, '8080');
      await expect(run(process.execPath, ['-e', check])).resolves.toBeDefined();
      // And it fails where nothing listens (the port of a stopped broker would do; use port 1).
      await expect(run(process.execPath, ['-e', script('reg1', 1, '8080')])).rejects.toThrow();
    });

    it('broker: a TCP connect succeeds', async () => {
      const port = Number(new URL(broker.url).port);
      await expect(run(process.execPath, ['-e', script('broker', port, '1883')])).resolves.toBeDefined();
      await expect(run(process.execPath, ['-e', script('broker', 1, '1883')])).rejects.toThrow();
    });
  });
});
