/**
 * The head office's settings as a user meets them: `--ns 'stores/+'` (one + level, no #) for the
 * controller commands, `serve --attribute KEY=VALUE`; bad ones refused at start with every
 * problem named (docs/controller.md, "Many stores").
 */
import { describe, expect, it } from 'vitest';
import { storeNamespaceProblem } from '../bridge/contract/store-namespace.ts';
import { controllerConfigSchema, controllerCrossProblems } from '../cli/controller-config.ts';
import { parseServeConfig } from '../cli/serve-config.ts';
import { parseConfig } from '../src/config.ts';
import { runCli } from './support/controller-cli.ts';

describe('head-office settings', () => {
  it('takes one + level as the store id, and refuses two, a # or a partial +', () => {
    expect(storeNamespaceProblem('stores/+')).toBeUndefined();
    expect(storeNamespaceProblem('chain/+/pos')).toBeUndefined();
    expect(storeNamespaceProblem('stores/+/+')).toBe(
      'has 2 + levels: at most one, in place of the store id (stores/+)',
    );
    expect(storeNamespaceProblem('stores/#')).toBe(
      '# is not allowed: use one + level in place of the store id (stores/+)',
    );
    expect(storeNamespaceProblem('stores/a+')).toContain('+ must be a whole level');
    expect(() =>
      parseConfig(controllerConfigSchema, { mqttUrl: 'mqtt://h:1883', ns: 'stores/+/+' }, []),
    ).toThrow('namespace "stores/+/+": has 2 + levels');
    expect(
      controllerCrossProblems({ mqttUrl: 'mqtt://h:1883', ns: 'pos', storeLinkTopic: 'link/state' }),
    ).toContain("--store-link-topic: only with a namespace for many stores (--ns 'stores/+')");
    expect(() =>
      parseConfig(
        controllerConfigSchema,
        { mqttUrl: 'mqtt://h:1883', ns: 'stores/+', storeLinkTopic: 'devices/x' },
        [],
      ),
    ).toThrow('must not be under devices/ or groups/');
    expect(controllerCrossProblems({ brokerPort: 1883, ns: 'stores/+' })).toContain(
      "--ns: a namespace for many stores ('stores/+') needs --mqtt-url (the head office's broker); an embedded broker serves one store",
    );
  });

  it('the commands refuse a bad --ns or --attribute at start: exit 2, every problem named', async () => {
    const cases: [string[], string][] = [
      [
        ['controller', '--mqtt-url', 'mqtt://127.0.0.1:1', '--ns', 'stores/+/+'],
        'regbridge controller: invalid configuration:\n  - --ns: namespace "stores/+/+": has 2 + levels: at most one, in place of the store id (stores/+)\n',
      ],
      [
        ['fanout', '--mqtt-url', 'mqtt://127.0.0.1:1', '--ns', 'stores/#', '--to', 'all', '/dev/null'],
        'regbridge fanout: invalid configuration:\n  - --ns: namespace "stores/#": # is not allowed: use one + level in place of the store id (stores/+)\n',
      ],
      [
        ['watch', '--mqtt-url', 'mqtt://127.0.0.1:1', '--ns', 'stores/+/x/+'],
        'regbridge watch: invalid configuration:\n  - --ns: namespace "stores/+/x/+": has 2 + levels: at most one, in place of the store id (stores/+)\n',
      ],
      [
        ['serve', '--no-mqtt', '--port', '0', '--attribute', 'Bad=1', '--attribute', 'novalue'],
        'regbridge serve: invalid configuration:\n  - --attribute: attribute key "Bad" must match [a-z][a-z0-9_-]{0,31}\n  - --attribute: expected KEY=VALUE, got "novalue"\n',
      ],
    ];
    for (const [args, stderr] of cases) {
      const run = await runCli(args);
      expect(run.code, args.join(' ')).toBe(2);
      expect(run.stderr).toBe(stderr);
    }
  }, 60_000);

  it('serve --attribute: pairs into the config, every problem at once', () => {
    const config = parseServeConfig({ deviceId: 'd', attributes: ['region=north', 'note=a=b', 'empty='] });
    expect(config.attributes).toEqual([
      ['region', 'north'],
      ['note', 'a=b'],
      ['empty', ''],
    ]);
    let message = '';
    try {
      parseServeConfig({
        deviceId: 'd',
        attributes: ['Region=north', 'novalue', `long=${'x'.repeat(129)}`, 'a=1', 'a=2'],
      });
    } catch (error) {
      message = (error as Error).message;
    }
    expect(message).toContain('attribute key "Region" must match [a-z][a-z0-9_-]{0,31}');
    expect(message).toContain('expected KEY=VALUE, got "novalue"');
    expect(message).toContain('attribute long: the value has 129 characters, at most 128');
    expect(message).toContain('--attribute: attribute a given twice');
    const many = Array.from({ length: 33 }, (_, i) => `k${i}=v`);
    expect(() => parseServeConfig({ deviceId: 'd', attributes: many })).toThrow(
      '--attribute: 33 attributes given, at most 32',
    );
  });
});
