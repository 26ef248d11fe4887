import { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { controllerConfigSchema } from '../../cli/controller-config.ts';
import { connectionSchema, parseConnection } from '../../cli/controller-flags.ts';
import { flagInput } from '../../cli/flags.ts';
import { registerServeCommand } from '../../cli/serve-command.ts';
import { parseServeConfig, serveFlags } from '../../cli/serve-config.ts';
import { ConfigError, parseConfig } from '../../src/config.ts';
import { durationMs } from '../../src/duration.ts';

describe('serve config', () => {
  it('applies the documented defaults (docs/api.md, "Command line")', () => {
    const config = parseServeConfig({ deviceId: 'reg1' });
    expect(config).toMatchObject({
      port: 8080,
      host: '0.0.0.0',
      deviceId: 'reg1',
      installation: 'cash-register',
      users: [],
      auth: 'on',
      tokenTtl: 3600,
      mqtt: true,
      brokerPort: 1883,
      ns: 'pos',
      groups: [],
      executor: 'simulator',
      retain: 128,
      maxQueue: 1000,
      scriptTimeout: 120_000,
      maxScriptBytes: 1024 * 1024,
      fmScriptTimeout: 60_000,
      mqttProtocol: 'auto',
      mqttMaxInflight: 1000,
      mqttReconnectMax: 30_000,
      requestIdMemory: 1000,
      heapGrowth: 50,
    });
    expect(Object.isFrozen(config)).toBe(true);
    expect(Object.isFrozen(config.users)).toBe(true);
  });

  it('reports every problem at once, naming the flags', () => {
    let caught: unknown;
    try {
      parseServeConfig({
        port: '99999',
        deviceId: 'bad/id',
        users: ['nopassword'],
        executor: 'command',
        ns: 'pos/+/x',
        retain: '0',
        scriptTimeout: 'soon',
      });
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(ConfigError);
    const problems = (caught as ConfigError).problems.join('\n');
    for (const flag of ['--port', '--device-id', '--user', '--ns', '--retain', '--script-timeout']) {
      expect(problems).toContain(flag);
    }
    expect(problems).toContain('NAME:PASSWORD');
    expect((caught as ConfigError).problems.length).toBeGreaterThanOrEqual(6);
  });

  it('needs --command with --executor command, and refuses --mqtt-url with --no-mqtt', () => {
    expect(() => parseServeConfig({ deviceId: 'd', executor: 'command' })).toThrow(/--command/);
    expect(() => parseServeConfig({ deviceId: 'd', mqtt: false, mqttUrl: 'mqtt://h:1883' })).toThrow(
      /contradict/,
    );
  });

  it('splits NAME:PASSWORD on the first colon only and refuses duplicate users', () => {
    const config = parseServeConfig({ deviceId: 'd', users: ['ann:pa:ss'] });
    expect(config.users).toEqual([{ name: 'ann', password: 'pa:ss' }]);
    expect(() => parseServeConfig({ deviceId: 'd', users: ['a:1', 'a:2'] })).toThrow(/given twice/);
  });

  it('accepts mqtt, mqtts and ws broker URLs only', () => {
    for (const url of ['mqtt://u:p@h:1883', 'mqtts://h:8883', 'ws://h:9001/mqtt']) {
      expect(parseServeConfig({ deviceId: 'd', mqttUrl: url }).mqttUrl).toBe(url);
    }
    expect(() => parseServeConfig({ deviceId: 'd', mqttUrl: 'http://h' })).toThrow(/--mqtt-url/);
  });

  it('reads durations in ms, s, m, h; a bare number is seconds', () => {
    expect(durationMs('500ms')).toBe(500);
    expect(durationMs('2m')).toBe(120_000);
    expect(durationMs('1.5s')).toBe(1500);
    expect(durationMs('120')).toBe(120_000);
    expect(durationMs('1h')).toBe(3_600_000);
    expect(durationMs('-1s')).toBeUndefined();
    expect(durationMs('soon')).toBeUndefined();
  });
});

/** What `regbridge serve` hands to its schema for these arguments and variables. */
function serveInput(argv: string[], env: NodeJS.ProcessEnv): Record<string, unknown> {
  const program = new Command().exitOverride();
  registerServeCommand(program);
  const serve = program.commands.find((c) => c.name() === 'serve')!;
  serve.action(() => {});
  program.parse(['serve', ...argv], { from: 'user' });
  return flagInput(serve, serveFlags, env).input;
}

describe('serve flags to config input', () => {
  it('splits repeatable values given through the environment on commas', () => {
    const input = serveInput([], { REGBRIDGE_USER: 'a:1,b:2', REGBRIDGE_GROUP: 'north, tills' });
    expect(parseServeConfig({ ...input, deviceId: 'd' })).toMatchObject({
      users: [
        { name: 'a', password: '1' },
        { name: 'b', password: '2' },
      ],
      groups: ['north', 'tills'],
    });
  });

  it('turns MQTT off with --no-mqtt or REGBRIDGE_MQTT=off', () => {
    expect(parseServeConfig({ ...serveInput(['--no-mqtt'], {}), deviceId: 'd' }).mqtt).toBe(false);
    expect(parseServeConfig({ ...serveInput([], { REGBRIDGE_MQTT: 'off' }), deviceId: 'd' }).mqtt).toBe(
      false,
    );
    expect(serveInput([], {}).mqtt).toBeUndefined();
    expect(parseServeConfig({ ...serveInput([], {}), deviceId: 'd' }).mqtt).toBe(true);
  });
});

describe('repeatable flags', () => {
  it('splits REGBRIDGE_USER on commas but keeps command-line values whole', () => {
    expect(serveInput([], { REGBRIDGE_USER: 'a:1, b:2' }).users).toEqual(['a:1', 'b:2']);
    expect(serveInput(['--user', 'a:1,x', '--user', 'b:2'], {}).users).toEqual(['a:1,x', 'b:2']);
  });

  it('prefers the command line to the variable', () => {
    expect(serveInput(['--port', '9'], { REGBRIDGE_PORT: '10' }).port).toBe('9');
  });
});

describe('serve cross-checks and flag names', () => {
  it('refuses a --user named like the device on the embedded broker, naming both flags', () => {
    expect(() => parseServeConfig({ deviceId: 'till', users: ['till:pw'] })).toThrow(
      /--user: user till.*--device-id/,
    );
    expect(
      parseServeConfig({ deviceId: 'till', users: ['till:pw'], mqttUrl: 'mqtt://h:1883' }).users,
    ).toHaveLength(1);
  });

  it('names repeatable flags as typed (--user, --group), without indexes', () => {
    expect(() => parseServeConfig({ deviceId: 'd', users: ['x'], groups: ['a b'] })).toThrow(
      /--user: expected NAME:PASSWORD[\s\S]*--group: must match/,
    );
  });

  it('accepts --mqtt-protocol auto (default), 3.1.1 (or 4) and 5, and 5 only with an external broker', () => {
    expect(parseServeConfig({ deviceId: 'd' }).mqttProtocol).toBe('auto');
    expect(parseServeConfig({ deviceId: 'd', mqttProtocol: '3.1.1' }).mqttProtocol).toBe('3.1.1');
    expect(parseServeConfig({ deviceId: 'd', mqttProtocol: '4' }).mqttProtocol).toBe('3.1.1');
    expect(parseServeConfig({ deviceId: 'd', mqttProtocol: 4 }).mqttProtocol).toBe('3.1.1');
    expect(
      parseServeConfig({ deviceId: 'd', mqttProtocol: '5', mqttUrl: 'mqtt://h:1883' }).mqttProtocol,
    ).toBe('5');
    expect(() => parseServeConfig({ deviceId: 'd', mqttProtocol: '5' })).toThrow(
      /--mqtt-protocol: the embedded broker/,
    );
    expect(() => parseServeConfig({ deviceId: 'd', mqttProtocol: '3' })).toThrow(/--mqtt-protocol/);
  });

  it('takes --mqtt-reconnect-max as a duration: 0 (no backoff) or at least the first wait, 1s', () => {
    const max = (value: string | number) => parseServeConfig({ deviceId: 'd', mqttReconnectMax: value });
    expect(max('2m').mqttReconnectMax).toBe(120_000);
    expect(max('1500ms').mqttReconnectMax).toBe(1500);
    expect(max(0).mqttReconnectMax).toBe(0);
    expect(() => max('500ms')).toThrow(/--mqtt-reconnect-max: expected 0 \(no backoff\) or at least 1s/);
    expect(() => max('soon')).toThrow(/--mqtt-reconnect-max: not a duration/);
    const input = serveInput([], { REGBRIDGE_MQTT_RECONNECT_MAX: '10s' });
    expect(parseServeConfig({ ...input, deviceId: 'd' }).mqttReconnectMax).toBe(10_000);
  });

  it('gives the controller commands the same --mqtt-reconnect-max, default 10s (fanout, watch, controller)', () => {
    const connection = (value?: string | number) =>
      parseConnection(connectionSchema, { mqttUrl: 'mqtt://h:1883', mqttReconnectMax: value });
    expect(connection().mqttReconnectMax).toBe(10_000);
    expect(connection('1m').mqttReconnectMax).toBe(60_000);
    expect(connection(0).mqttReconnectMax).toBe(0);
    expect(() => connection('200ms')).toThrow(
      /--mqtt-reconnect-max: expected 0 \(no backoff\) or at least 1s/,
    );
    const service = (value?: string) =>
      parseConfig(controllerConfigSchema, { mqttUrl: 'mqtt://h:1883', mqttReconnectMax: value }, []);
    expect(service().mqttReconnectMax).toBe(10_000);
    expect(service('45s').mqttReconnectMax).toBe(45_000);
    expect(() => service('0.5s')).toThrow(/expected 0 \(no backoff\) or at least 1s/);
  });

  it('turns MQTT off with REGBRIDGE_NO_MQTT=1|true|yes|on', () => {
    for (const value of ['1', 'true', 'YES', 'on'])
      expect(serveInput([], { REGBRIDGE_NO_MQTT: value }).mqtt).toBe(false);
    expect(serveInput([], { REGBRIDGE_NO_MQTT: 'false' }).mqtt).toBeUndefined();
  });

  it('gives every serve flag its REGBRIDGE_<FLAG> variable (docs/api.md, "Command line")', async () => {
    const { envName, envNames } = await import('../../cli/flags.ts');
    const program = new Command();
    registerServeCommand(program);
    const serve = program.commands.find((c) => c.name() === 'serve')!;
    const longs = serve.options.map((o) => o.long);
    for (const flag of [
      '--port',
      '--host',
      '--device-id',
      '--installation',
      '--user',
      '--auth',
      '--token-ttl',
      '--mqtt-url',
      '--broker-port',
      '--no-mqtt',
      '--ns',
      '--group',
      '--executor',
      '--command',
      '--retain',
      '--max-queue',
    ]) {
      expect(longs).toContain(flag);
    }
    for (const spec of Object.values(serveFlags)) {
      const long = /--[a-z-]+/.exec(spec.flags)![0];
      // --no-mqtt: REGBRIDGE_MQTT=off, then REGBRIDGE_NO_MQTT=1.
      if (long === '--no-mqtt') expect(envNames(spec)).toEqual(['REGBRIDGE_MQTT', 'REGBRIDGE_NO_MQTT']);
      else expect(envNames(spec), long).toEqual([envName(long)]);
      const option = serve.options.find((o) => o.long === long)!;
      expect(option.description, long).toContain(envNames(spec)[0]);
    }
  });
});
