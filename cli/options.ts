/** Helpers shared by the commands: env-backed options, repeatable flags, config errors. */
import { type Command, Option } from 'commander';
import { ConfigError } from '../src/config.ts';

/** `--foo-bar` reads REGBRIDGE_FOO_BAR when not given (contract section 4). */
export function envName(flag: string): string {
  return `REGBRIDGE_${flag.replace(/^--/, '').replace(/-/g, '_').toUpperCase()}`;
}

export function option(flags: string, description: string): Option {
  const long = /--[a-z][a-z0-9-]*/.exec(flags)?.[0];
  const opt = new Option(flags, description);
  return long ? opt.env(envName(long)) : opt;
}

/**
 * Repeatable flags (`--user a:b --user c:d`). From the environment the values are separated by
 * commas (REGBRIDGE_USER="a:b,c:d"); on the command line each flag carries one value.
 */
export function repeatable(flags: string, description: string): Option {
  return option(flags, `${description} (repeatable; env: comma-separated)`).argParser(
    (value: string, previous: string[] | undefined) => [...(previous ?? []), value],
  );
}

/** Values that came from the environment arrive as one string: split them. */
export function listValue(value: string[] | string | undefined): string[] | undefined {
  if (value === undefined) return undefined;
  if (typeof value === 'string')
    return value
      .split(',')
      .map((v) => v.trim())
      .filter(Boolean);
  return value;
}

/** Prints configuration problems (all at once) without a stack and sets exit code 2. */
export function reportStartError(command: Command, error: unknown): void {
  if (error instanceof ConfigError) {
    console.error(`regbridge ${command.name()}: ${error.message}`);
  } else if (error instanceof Error && ['ListenError', 'BrokerListenError'].includes(error.name)) {
    console.error(`regbridge ${command.name()}: ${error.message}`);
  } else {
    console.error(
      `regbridge ${command.name()}: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`,
    );
  }
  process.exitCode = 2;
}

/** SIGINT/SIGTERM run `stop` once; a second signal exits at once. */
export function onShutdownSignal(stop: () => Promise<void>): void {
  let stopping = false;
  const handler = (signal: NodeJS.Signals): void => {
    if (stopping) {
      process.exit(130);
    }
    stopping = true;
    stop().then(
      () => process.exit(0),
      (error: unknown) => {
        console.error(`error while stopping after ${signal}:`, error);
        process.exit(1);
      },
    );
  };
  process.on('SIGINT', handler);
  process.on('SIGTERM', handler);
}

/**
 * The values of a repeatable flag. commander hands an environment value through the flag's
 * parser as if it were one flag, so a value from REGBRIDGE_<FLAG> is split on commas here, while
 * values from the command line are kept whole (a password may contain a comma).
 */
export function repeatedValues(
  command: Command,
  key: string,
  value: string[] | string | undefined,
): string[] | undefined {
  if (value === undefined) return undefined;
  const items = Array.isArray(value) ? value : [value];
  if (command.getOptionValueSource(key) !== 'env') return items;
  return items
    .flatMap((item) => item.split(','))
    .map((item) => item.trim())
    .filter(Boolean);
}
