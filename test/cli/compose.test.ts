/**
 * docker-compose.yml and the CLI must agree: every service's sub-command, every flag and every
 * REGBRIDGE_* variable must exist in `regbridge <cmd> --help` (REGBRIDGE_FOO_BAR is --foo-bar);
 * services, profiles, dependencies, ports and healthchecks are as documented (each container
 * listens on the port it publishes, so host networking works); and the healthcheck scripts (the
 * broker's in the compose file, the registers' in the Dockerfile) really work against a running
 * device and broker. npm run test:containers runs the file's services in Docker.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningDevice, startDevice } from '../../cli/device.ts';
import { parseServeConfig } from '../../cli/serve-config.ts';
import { brokersByName, type RunningBroker } from '../support/brokers.ts';
import {
  type Compose,
  type ComposeService,
  dockerfileHealthcheck,
  readCompose,
  readComposeSource,
} from '../support/compose.ts';
import { runCli } from '../support/controller-cli.ts';
import { silent } from '../support/loggers.ts';

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

  beforeAll(() => {
    compose = readCompose();
  });

  it('has a broker, three registers, the controller service, and fanout/watch behind profiles', () => {
    expect(Object.keys(compose.services).sort()).toEqual([
      'broker',
      'controller',
      'fanout',
      'reg1',
      'reg2',
      'reg3',
      'watch',
    ]);
    expect(compose.services.fanout!.profiles).toEqual(['fanout']);
    expect(compose.services.fanout!.command?.[2]).toBe('fanout');
    expect(compose.services.watch!.profiles).toEqual(['watch']);
    for (const name of ['broker', 'reg1', 'reg2', 'reg3', 'controller'])
      expect(compose.services[name]!.profiles).toBeUndefined();
  });

  it('the controller service publishes its port and keeps its SQLite history in a volume', () => {
    const service = compose.services.controller! as ComposeService & { volumes?: string[] };
    expect(service.command).toEqual(['node', 'bin/regbridge.js', 'controller']);
    expect(service.ports).toEqual(['8090:8090']);
    expect(service.environment!.REGBRIDGE_PORT).toBe('8090');
    expect(service.volumes).toEqual(['controller-data:/home/node']);
    expect(service.environment!.REGBRIDGE_DB).toBe('/home/node/regbridge-controller.db');
    expect((compose as Compose & { volumes?: Record<string, unknown> }).volumes).toHaveProperty(
      'controller-data',
    );
    // The image's HEALTHCHECK (GET /health on REGBRIDGE_PORT) serves it as it serves the registers.
    expect(service.healthcheck).toBeUndefined();
    expect(service.depends_on).toEqual({ broker: { condition: 'service_healthy' } });
  });

  it('always-on services have healthchecks; dependants wait for them to be healthy', () => {
    expect(compose.services.broker!.healthcheck?.test.slice(0, 3)).toEqual(['CMD', 'node', '-e']);
    // Registers use the image's own HEALTHCHECK (the Dockerfile's), not a copy of it.
    for (const name of ['reg1', 'reg2', 'reg3']) expect(compose.services[name]!.healthcheck).toBeUndefined();
    expect(dockerfileHealthcheck().slice(0, 2)).toEqual(['node', '-e']);
    for (const name of ['reg1', 'reg2', 'reg3', 'watch']) {
      expect(compose.services[name]!.depends_on).toEqual({ broker: { condition: 'service_healthy' } });
    }
    expect(compose.services.fanout!.depends_on).toEqual({
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
    // One `--help` child process per sub-command (five of them), slow on a loaded machine.
  }, 90_000);

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
    // One `--help` child process per sub-command (five of them), slow on a loaded machine.
  }, 90_000);

  it('host ports are overridable, distinct, and each the port its container listens on', () => {
    const ports = (c: Compose) =>
      ['broker', 'reg1', 'reg2', 'reg3'].map((name) => {
        const service = c.services[name]!;
        const [host, inside] = service.ports![0]!.split(':');
        expect(inside, `${name}: listens where it publishes (host networking)`).toBe(host);
        expect(service.environment!.REGBRIDGE_PORT, name).toBe(host);
        return host;
      });
    expect(ports(compose)).toEqual(['1883', '8081', '8082', '8083']);
    const moved = readCompose({
      REGBRIDGE_MQTT_PORT: '11883',
      REGBRIDGE_REG1_PORT: '18081',
      REGBRIDGE_REG2_PORT: '18082',
      REGBRIDGE_REG3_PORT: '18083',
      REGBRIDGE_BROKER_HOST: '127.0.0.1',
    });
    expect(ports(moved)).toEqual(['11883', '18081', '18082', '18083']);
    for (const name of ['reg1', 'reg2', 'reg3', 'controller', 'fanout', 'watch'])
      expect(new URL(moved.services[name]!.environment!.REGBRIDGE_MQTT_URL!).host, name).toBe(
        '127.0.0.1:11883',
      );
  });

  it('one local image: the broker builds it, the others never pull it', () => {
    for (const [name, service] of Object.entries(compose.services)) {
      expect(service.image, name).toBe('regbridge:local');
      if (name === 'broker') expect(service.build).toBe('.');
      else expect(service.pull_policy, name).toBe('never');
    }
  });

  it('the host-network override puts every service on the host network', () => {
    const host = readComposeSource('docker-compose.host.yml');
    expect(Object.keys(host.services).sort()).toEqual(Object.keys(compose.services).sort());
    for (const service of Object.values(host.services)) expect(service).toEqual({ network_mode: 'host' });
  });

  it('the one-shot fanout reads the X report config', () => {
    const fanout = compose.services.fanout!;
    expect(fanout.configs).toEqual([{ source: 'x-report', target: fanout.command![3] }]);
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

    // A check runs as in its container: the service's REGBRIDGE_PORT in the environment.
    const check = (command: string[], port: number) =>
      run(process.execPath, command.slice(1), { env: { ...process.env, REGBRIDGE_PORT: String(port) } });

    it("register (the Dockerfile's HEALTHCHECK): fetch /health answers ok", async () => {
      await expect(check(dockerfileHealthcheck(), device.httpPort)).resolves.toBeDefined();
      // And it fails where nothing listens (the port of a stopped broker would do; use port 1).
      await expect(check(dockerfileHealthcheck(), 1)).rejects.toThrow();
    });

    it('broker: a TCP connect succeeds', async () => {
      const command = compose.services.broker!.healthcheck!.test.slice(1);
      await expect(check(command, Number(new URL(broker.url).port))).resolves.toBeDefined();
      await expect(check(command, 1)).rejects.toThrow();
    });
  });
});
