/**
 * The `regbridge` command line: one sub-command per module, commander parses, each command owns
 * its run. Only the command asked for is loaded (cli/command-index.ts). Run by cli/main.ts (the
 * bundle every command line starts from) and by cli/serve-main.ts (the `serve` bundle that starts
 * from V8's code cache, docs/decisions/serve-code-cache.md).
 */
import { Command } from 'commander';
import { VERSION } from '../src/version.ts';
import { registerCommands } from './command-index.ts';

/**
 * Usage errors (unknown command or option, missing argument or value) exit 2, like every other
 * configuration problem, instead of commander's 1: a script can tell them from "a device did not
 * finish" (1). Help and version exit 0. Set on the program before the commands are added: each
 * command inherits it.
 */
function usageErrorsExit2(command: Command): Command {
  return command.exitOverride((error) => {
    process.exit(error.exitCode === 0 ? 0 : 2);
  });
}

/**
 * Once parsed, the command line leaves the process title: /proc/<pid>/cmdline is readable by
 * every local user, and `--user NAME:PASSWORD` or `--mqtt-url mqtt://u:p@...` would stay there
 * for the process's life. On Linux node's process.title overwrites (and zero-fills) the original
 * argv area (docs/security.md, "Secrets on the command line").
 */
function hideCommandLine(program: Command): void {
  program.hook('preAction', (_program, action) => {
    try {
      process.title = `regbridge ${action.name()}`;
    } catch {
      // a platform without a settable title: nothing to hide there
    }
  });
}

/** Parses `argv` (node's, with the executable and script first) and runs the command it names. */
export async function runCommandLine(argv: readonly string[]): Promise<void> {
  const program = new Command('regbridge')
    .description("Run scripts on a store's cash registers and watch them finish")
    .version(VERSION)
    .showHelpAfterError('(add --help for the commands and flags)');
  // Before the commands are added: they inherit it.
  usageErrorsExit2(program);

  await registerCommands(program, argv.slice(2));
  hideCommandLine(program);

  await program.parseAsync([...argv]);
}
