/**
 * The `regbridge` commands before one is chosen: name, help line, module to load. Only the command
 * that runs is imported (docs/decisions/load-only-what-runs.md); test/tooling/footprint.test.ts
 * checks this index against the commands themselves.
 */
import type { Command } from 'commander';

export interface IndexedCommand {
  readonly name: string;
  /** How the command is listed in `regbridge --help`: name, `[options]`, arguments. */
  readonly term: string;
  readonly description: string;
  /** Imports the command's module and returns its `register` function. */
  readonly load: () => Promise<(program: Command) => void>;
}

export const COMMAND_INDEX: readonly IndexedCommand[] = [
  {
    name: 'serve',
    term: 'serve [options]',
    description:
      'run a device: the vendor REST API, the task queue and the MQTT bridge (what `npm start` runs)',
    load: async () => (await import('./serve-command.ts')).registerServeCommand,
  },
  {
    name: 'broker',
    term: 'broker [options]',
    description:
      'run a store broker alone (MQTT 3.1.1, per-role ACL, optional WebSocket and Redis clustering)',
    load: async () => (await import('./broker-command.ts')).registerBrokerCommand,
  },
  {
    name: 'controller',
    term: 'controller [options]',
    description: 'run the store controller service: jobs with rollout control, history, audit, dashboard',
    load: async () => (await import('./controller-command.ts')).registerControllerCommand,
  },
  {
    name: 'fanout',
    term: 'fanout [options] [scriptFile]',
    description: 'send one script to many devices through the store broker and wait for every result',
    load: async () => (await import('./fanout-command.ts')).registerFanoutCommand,
  },
  {
    name: 'watch',
    term: 'watch [options]',
    description:
      "live view of the store's devices and their latest tasks (from the broker's retained topics)",
    load: async () => (await import('./watch-command.ts')).registerWatchCommand,
  },
  {
    name: 'run',
    term: 'run [options] <file>',
    description:
      'run one script on a device over REST and print its report (exit 0 FINISHED, 1 FAILURE, 2 error)',
    load: async () => (await import('./run-command.ts')).registerRunCommand,
  },
  {
    name: 'results',
    term: 'results [options]',
    description: "search a controller service's job results: a table, or CSV with --csv",
    load: async () => (await import('./results-command.ts')).registerResultsCommand,
  },
  {
    name: 'demo',
    term: 'demo [options]',
    description:
      'a whole store in one process: broker, registers, and the controller service with its dashboard',
    load: async () => (await import('./demo-command.ts')).registerDemoCommand,
  },
  {
    name: 'hash-password',
    term: 'hash-password',
    description: 'read a password on stdin and print its scrypt hash for a users file (NAME:HASH:ROLE)',
    load: async () => (await import('./hash-password-command.ts')).registerHashPasswordCommand,
  },
  {
    name: 'history-backup',
    term: 'history-backup [options]',
    description: "copy the controller's history while it runs (SQLite online backup)",
    load: async () => (await import('./history-backup-command.ts')).registerHistoryBackupCommand,
  },
  {
    name: 'store-config',
    term: 'store-config [options]',
    description:
      "generate a store's configuration: its Mosquitto store broker bridged to the hub, its registers",
    load: async () => (await import('./store-config-command.ts')).registerStoreConfigCommand,
  },
];

/** `program`'s command `name` with its help line from the index (the one place it is written). */
export function indexedCommand(program: Command, name: string): Command {
  return program.command(name).description(COMMAND_INDEX.find((c) => c.name === name)!.description);
}

/**
 * The command a command line asks for (`serve ...`, `help serve`), or undefined (`--help`,
 * `--version`, nothing, an unknown word: commander answers those from the index alone).
 */
export function requestedCommand(args: readonly string[]): IndexedCommand | undefined {
  const words = args.filter((a) => !a.startsWith('-'));
  const name = words[0] === 'help' ? words[1] : words[0];
  return COMMAND_INDEX.find((c) => c.name === name);
}

/**
 * Adds every command to `program`: the requested one whole, the others only as help entries
 * (a command line naming one would have loaded it).
 */
export async function registerCommands(program: Command, args: readonly string[]): Promise<void> {
  const requested = requestedCommand(args);
  const terms = new Map<Command, string>();
  for (const entry of COMMAND_INDEX) {
    if (entry === requested) {
      (await entry.load())(program);
      continue;
    }
    terms.set(program.command(entry.name).description(entry.description), entry.term);
  }
  program.configureHelp({
    subcommandTerm: (command) => terms.get(command) ?? defaultTerm(command),
  });
}

/** commander's own listing of a registered command (name, `[options]`, arguments). */
function defaultTerm(command: Command): string {
  const args = command.registeredArguments
    .map((a) => {
      const name = a.name() + (a.variadic ? '...' : '');
      return a.required ? `<${name}>` : `[${name}]`;
    })
    .join(' ');
  return command.name() + (command.options.length > 0 ? ' [options]' : '') + (args ? ` ${args}` : '');
}
