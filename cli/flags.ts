/**
 * One declaration per command's flags (docs/decisions/flag-tables.md): a table
 * `{ configKey: flag(...) }` yields the commander options (`addFlags`), the `REGBRIDGE_<FLAG>`
 * environment names (`envNames`), the zod schema with defaults (`flagSchema`) and the parsing
 * (`parseFlags`). A default is written once, as a user types it, so help and schema cannot
 * disagree; list a new command in test/cli/cli-flags.test.ts, which checks that.
 */
import { type Command, Option } from 'commander';
import * as z from 'zod';
import { ConfigError, parseConfig } from '../src/config.ts';
import { reportStartError } from './options.ts';

type ValueDefault = string | number | boolean | readonly string[];

export interface FlagSpec<F extends z.ZodType = z.ZodType> {
  /** Commander syntax: `--port <port>`, `--json`, `--no-mqtt`. */
  readonly flags: string;
  readonly help: string;
  /** The config field: the value's schema with its default (or optional, or an array). */
  readonly field: F;
  readonly kind: 'value' | 'switch' | 'negated';
  /** Repeatable on the command line; comma-separated in the environment; an array in the config. */
  readonly repeatable: boolean;
  /** The default, as a user would type it; a function for computed defaults (the host name). */
  readonly default?: ValueDefault | (() => ValueDefault) | undefined;
  /** What help shows for a computed default, or for a flag without default ('off', 'none'). */
  readonly defaultHelp?: string | undefined;
}

export type FlagTable = Record<string, FlagSpec>;

// biome-ignore lint/suspicious/noExplicitAny: prefault takes the schema's input type, checked by the overloads
const withDefault = (schema: z.ZodType, value: unknown): any => (schema as any).prefault(value);

/** A string flag value read by `parse`; what it throws is the issue (never echoing the value). */
export function parsedBy<T>(parse: (text: string) => T) {
  return z.string().transform((text, ctx): T => {
    try {
      return parse(text);
    } catch (error) {
      ctx.addIssue({ code: 'custom', message: (error as Error).message });
      return z.NEVER;
    }
  });
}

/**
 * A flag with a value: `--port <port>`. With `default` (as typed: '60s', '8080', or a function)
 * the field is always set; with `required`, the schema's own message says what is missing;
 * otherwise it is optional.
 */
export function flag<S extends z.ZodType>(
  flags: string,
  help: string,
  schema: S,
  options: { default: z.input<S> | (() => z.input<S>); defaultHelp?: string },
): FlagSpec<z.ZodPrefault<S>>;
export function flag<S extends z.ZodType>(
  flags: string,
  help: string,
  schema: S,
  options: { required: true; defaultHelp?: string },
): FlagSpec<S>;
export function flag<S extends z.ZodType>(
  flags: string,
  help: string,
  schema: S,
  options?: { defaultHelp?: string },
): FlagSpec<z.ZodOptional<S>>;
export function flag(
  flags: string,
  help: string,
  schema: z.ZodType,
  options: { default?: unknown; defaultHelp?: string; required?: boolean } = {},
): FlagSpec {
  const hasDefault = options.default !== undefined;
  return {
    flags,
    help,
    field: hasDefault ? withDefault(schema, options.default) : options.required ? schema : schema.optional(),
    kind: 'value',
    repeatable: false,
    default: options.default as ValueDefault | (() => ValueDefault) | undefined,
    defaultHelp: options.defaultHelp,
  };
}

/** A repeatable flag: `--user a:1 --user b:2`, REGBRIDGE_USER=a:1,b:2; an array, empty by default. */
export function repeatableFlag<S extends z.ZodType>(
  flags: string,
  help: string,
  schema: S,
): FlagSpec<z.ZodPrefault<z.ZodArray<S>>> {
  return {
    flags,
    help,
    field: withDefault(z.array(schema), []),
    kind: 'value',
    repeatable: true,
    defaultHelp: 'none',
  };
}

const TRUE_WORDS = ['1', 'true', 'yes', 'on'];
const FALSE_WORDS = ['', '0', 'false', 'no', 'off'];

/** true/false from a switch (`true`) or from a variable (1/0, yes/no, on/off; empty is false). */
export const booleanValue = z.union([z.boolean(), z.string()]).transform((value, ctx) => {
  if (typeof value === 'boolean') return value;
  const text = value.trim().toLowerCase();
  if (TRUE_WORDS.includes(text)) return true;
  if (FALSE_WORDS.includes(text)) return false;
  ctx.addIssue({
    code: 'custom',
    message: `expected true or false (1/0, yes/no, on/off), got ${JSON.stringify(value)}`,
  });
  return z.NEVER;
});

/** A switch without value: `--json`; its variable takes true/false words (REGBRIDGE_JSON=1). */
export function switchFlag(flags: string, help: string): FlagSpec<z.ZodPrefault<typeof booleanValue>> {
  return {
    flags,
    help,
    field: withDefault(booleanValue, false),
    kind: 'switch',
    repeatable: false,
    default: false,
  };
}

/**
 * `--no-mqtt`: config key `mqtt`, default true. Its variables: REGBRIDGE_MQTT (on/off) and
 * REGBRIDGE_NO_MQTT (1/true/yes/on turns it off).
 */
export function negatedFlag(flags: string, help: string): FlagSpec<z.ZodPrefault<typeof booleanValue>> {
  return {
    flags,
    help,
    field: withDefault(booleanValue, true),
    kind: 'negated',
    repeatable: false,
    default: true,
  };
}

function longName(spec: FlagSpec): string {
  const long = /--[a-z][a-z0-9-]*/.exec(spec.flags)?.[0];
  if (!long) throw new Error(`flag without long name: ${spec.flags}`);
  return long;
}

/** `--foo-bar` is REGBRIDGE_FOO_BAR. */
export function envName(long: string): string {
  return `REGBRIDGE_${long.replace(/^--/, '').replace(/-/g, '_').toUpperCase()}`;
}

/** The variables a flag reads, first wins: `--no-mqtt` reads REGBRIDGE_MQTT, then REGBRIDGE_NO_MQTT. */
export function envNames(spec: FlagSpec): string[] {
  const long = longName(spec);
  if (spec.kind === 'negated') return [envName(long.replace(/^--no-/, '--')), envName(long)];
  return [envName(long)];
}

function defaultText(spec: FlagSpec): string | undefined {
  if (spec.defaultHelp !== undefined) return spec.defaultHelp;
  if (spec.kind !== 'value' || spec.default === undefined) return undefined;
  const value = typeof spec.default === 'function' ? spec.default() : spec.default;
  return Array.isArray(value) ? value.join(',') : String(value);
}

/** The help line of a flag: its text, its default as typed, its variable(s). */
export function helpText(spec: FlagSpec): string {
  const parts: string[] = [];
  const shown = defaultText(spec);
  if (shown !== undefined && shown !== '') parts.push(`default: ${shown}`);
  const names = envNames(spec);
  if (spec.kind === 'negated') parts.push(`env: ${names[0]}=off or ${names[1]}=1`);
  else if (spec.kind === 'switch') parts.push(`env: ${names[0]}=1`);
  else parts.push(`env: ${names[0]}${spec.repeatable ? ', comma-separated' : ''}`);
  const repeat = spec.repeatable ? ' (repeatable)' : '';
  return `${spec.help}${repeat} (${parts.join('; ')})`;
}

/** Adds the table's options to a command; commander only parses, zod checks. */
export function addFlags(command: Command, table: FlagTable): Command {
  for (const spec of Object.values(table)) {
    const option = new Option(spec.flags, helpText(spec));
    if (spec.repeatable)
      option.argParser((value: string, previous: string[] | undefined) => [...(previous ?? []), value]);
    command.addOption(option);
  }
  return command;
}

/** The zod object of a table: config key -> its field (value schema with default, prefault: parsed as typed). */
export function flagSchema<T extends FlagTable>(table: T): z.ZodObject<{ [K in keyof T]: T[K]['field'] }> {
  const shape = Object.fromEntries(Object.entries(table).map(([key, spec]) => [key, spec.field]));
  return z.object(shape) as z.ZodObject<{ [K in keyof T]: T[K]['field'] }>;
}

/** Where each config key's value came from, for error messages. */
export type Sources = Record<string, { env: string } | 'cli'>;

/** The schema's input from what commander parsed and the environment; undefined keys left out. */
export function flagInput(
  command: Command,
  table: FlagTable,
  env: NodeJS.ProcessEnv = process.env,
): { input: Record<string, unknown>; sources: Sources } {
  const input: Record<string, unknown> = {};
  const sources: Sources = {};
  const options = new Map(command.options.map((option) => [option.long, option]));
  for (const [key, spec] of Object.entries(table)) {
    const option = options.get(longName(spec));
    const attribute = option?.attributeName() ?? key;
    if (command.getOptionValueSource(attribute) === 'cli') {
      input[key] = command.getOptionValue(attribute);
      sources[key] = 'cli';
      continue;
    }
    const names = envNames(spec);
    const name = names.find((n) => env[n] !== undefined);
    if (name === undefined) continue;
    const raw = env[name] as string;
    sources[key] = { env: name };
    if (spec.repeatable) {
      input[key] = raw
        .split(',')
        .map((item) => item.trim())
        .filter(Boolean);
    } else if (spec.kind === 'negated' && name === names[1]) {
      // REGBRIDGE_NO_MQTT=1 means mqtt off; anything that is not a true word leaves it on.
      if (TRUE_WORDS.includes(raw.trim().toLowerCase())) input[key] = false;
    } else {
      input[key] = raw;
    }
  }
  return { input, sources };
}

/** Error label of a config key: its flag, and the variable and command when it came from one. */
export function labeler(table: FlagTable, sources: Sources = {}, commandName?: string) {
  return (key: string): string => {
    const spec = table[key];
    if (!spec) return `--${key.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`;
    const long = longName(spec);
    const source = sources[key];
    if (source && source !== 'cli') {
      // The same variable may mean different things to different commands (REGBRIDGE_PORT):
      // say which command read it (docs/decisions/environment-variables.md).
      return `${long} (from ${source.env}, read by regbridge ${commandName ?? 'this command'})`;
    }
    return long;
  };
}

/**
 * Gathers flags and variables, validates once (every problem at once, ConfigError), freezes.
 * `extra` computes cross-flag problems from the input (reported with the schema's own).
 */
export function parseFlags<S extends z.ZodType>(
  command: Command,
  table: FlagTable,
  schema: S,
  options: {
    extra?: (input: Record<string, unknown>) => string[];
    input?: Record<string, unknown>;
    env?: NodeJS.ProcessEnv;
  } = {},
): Readonly<z.infer<S>> {
  const { input, sources } = flagInput(command, table, options.env);
  const all = { ...input, ...options.input };
  return parseConfig(schema, all, options.extra?.(all) ?? [], labeler(table, sources, command.name()));
}

/** parseFlags for a command's action: undefined once the problem is reported (exit code 2). */
export function parseFlagsOrReport<S extends z.ZodType>(
  ...args: Parameters<typeof parseFlags<S>>
): Readonly<z.infer<S>> | undefined {
  try {
    return parseFlags(...args);
  } catch (error) {
    reportStartError(args[0], error);
    return undefined;
  }
}

export { ConfigError };
