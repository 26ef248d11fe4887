/**
 * One declaration per command's flags (cli/flags.ts): for every command, the default its help
 * shows, typed as a user would, gives the same configuration value as the schema's default; every
 * flag names its REGBRIDGE_<FLAG> variable; values from variables are labelled with the variable
 * and the command that read it; switches read true/false words.
 */
import { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { COMMANDS } from '../../cli/commands.ts';
import {
  addFlags,
  envName,
  envNames,
  flag,
  flagInput,
  flagSchema,
  parseFlags,
  switchFlag,
} from '../../cli/flags.ts';
import { ConfigError, port } from '../../src/config.ts';
import { runCli } from '../support/controller-cli.ts';

function program(): Command {
  const root = new Command('regbridge').exitOverride();
  for (const entry of COMMANDS) entry.register(root);
  return root;
}

/** The `default: ...` part of an option's help line, as commander prints it. */
function helpDefault(command: Command, long: string): string | undefined {
  const option = command.options.find((o) => o.long === long);
  if (!option) throw new Error(`${command.name()}: no option ${long}`);
  const text = command.createHelp().optionDescription(option);
  return /\(.*?default: (.*?)(?:;|\)$)/.exec(text)?.[1];
}

describe('every command: help defaults equal schema defaults', () => {
  const root = program();
  for (const entry of COMMANDS) {
    it(`regbridge ${entry.name}`, () => {
      const command = root.commands.find((c) => c.name() === entry.name)!;
      expect(command, entry.name).toBeDefined();
      // Each declared flag is an option of the command, and only those (besides --help).
      expect(command.options.map((o) => o.long).sort()).toEqual(
        Object.values(entry.flags)
          .map((spec) => /--[a-z][a-z0-9-]*/.exec(spec.flags)![0])
          .sort(),
      );
      for (const [key, spec] of Object.entries(entry.flags)) {
        const long = /--[a-z][a-z0-9-]*/.exec(spec.flags)![0];
        const fromSchema = spec.field.safeParse(undefined);
        const shown = helpDefault(command, long);
        const where = `${entry.name} ${long} (${key})`;
        if (typeof spec.default === 'function') {
          // Computed (the host name): help says what it is.
          expect(shown, where).toBe(spec.defaultHelp);
          continue;
        }
        if (spec.kind !== 'value') {
          // A switch is off unless given; --no-x is on unless given.
          expect(fromSchema.data, where).toBe(spec.kind === 'negated');
          continue;
        }
        if (!fromSchema.success || fromSchema.data === undefined) {
          // Required, or no default: help must not claim one the schema does not apply.
          expect(shown === undefined || ['off', 'required'].includes(shown), where).toBe(true);
          continue;
        }
        expect(shown, `${where}: the help shows the default`).toBeDefined();
        const typed = spec.repeatable ? (shown === 'none' ? [] : shown!.split(',')) : shown;
        const fromHelp = spec.field.safeParse(typed);
        expect(fromHelp.success, where).toBe(true);
        expect(fromHelp.data, where).toEqual(fromSchema.data);
      }
    });
  }

  it('the whole schema of each command applies the same defaults as its fields', () => {
    for (const entry of COMMANDS) {
      const shape = flagSchema(entry.flags).shape as Record<string, unknown>;
      expect(Object.keys(shape).sort(), entry.name).toEqual(Object.keys(entry.flags).sort());
    }
  });

  it('every flag of every command names its REGBRIDGE_<FLAG> variable in its help', () => {
    const root2 = program();
    for (const entry of COMMANDS) {
      const command = root2.commands.find((c) => c.name() === entry.name)!;
      for (const spec of Object.values(entry.flags)) {
        const long = /--[a-z][a-z0-9-]*/.exec(spec.flags)![0];
        const option = command.options.find((o) => o.long === long)!;
        if (spec.kind !== 'negated') expect(envNames(spec)).toEqual([envName(long)]);
        expect(command.createHelp().optionDescription(option), `${entry.name} ${long}`).toContain(
          `env: ${envNames(spec)[0]}`,
        );
      }
    }
  });
});

describe('the mechanism', () => {
  const table = {
    port: flag('--port <port>', 'a port', port, { default: '1883' }),
    json: switchFlag('--json', 'JSON'),
  };
  const schema = flagSchema(table);
  function parse(argv: string[], env: NodeJS.ProcessEnv) {
    const command = addFlags(new Command('probe').exitOverride(), table).action(() => {});
    command.parse(argv, { from: 'user' });
    return Promise.resolve().then(() => parseFlags(command, table, schema, { env }));
  }

  it('reads a switch variable as true/false words, never as "set means true"', async () => {
    expect((await parse([], { REGBRIDGE_JSON: '0' })).json).toBe(false);
    expect((await parse([], { REGBRIDGE_JSON: 'yes' })).json).toBe(true);
    expect((await parse(['--json'], { REGBRIDGE_JSON: 'false' })).json).toBe(true);
    expect((await parse([], {})).json).toBe(false);
  });

  it('names the variable and the command when a value from the environment is wrong', async () => {
    const error = await parse([], { REGBRIDGE_PORT: 'abc', REGBRIDGE_JSON: 'maybe' }).catch((e) => e);
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).problems).toEqual([
      '--port (from REGBRIDGE_PORT, read by regbridge probe): expected a port number (0-65535; 0 picks a free one), got "abc"',
      '--json (from REGBRIDGE_JSON, read by regbridge probe): expected true or false (1/0, yes/no, on/off), got "maybe"',
    ]);
  });

  it('is frozen', async () => {
    const config = await parse(['--port', '0'], {});
    expect(config).toEqual({ port: 0, json: false });
    expect(Object.isFrozen(config)).toBe(true);
  });

  it('keeps the input of flags that were not given out of it, so defaults apply', () => {
    const command = new Command('probe');
    expect(flagInput(command, table, {}).input).toEqual({});
  });
});

describe('help on the command line', () => {
  it('shows defaults and variables (serve and broker as child processes), exit 0', async () => {
    for (const entry of COMMANDS.filter((c) => ['serve', 'broker'].includes(c.name))) {
      const help = await runCli([entry.name, '--help']);
      expect(help.code, entry.name).toBe(0);
      expect(help.stdout.replace(/\s+/g, ' '), entry.name).toMatch(
        /\(default: [^;]+; env: REGBRIDGE_[A-Z_]+\)/,
      );
    }
  });
});
