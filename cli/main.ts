/** The `regbridge` command line: one sub-command per module, commander parses, each command owns its run. */
import { Command } from 'commander';
import { VERSION } from '../src/version.ts';
import { COMMANDS } from './commands.ts';
import { usageErrorsExit2 } from './options.ts';

const program = new Command('regbridge')
  .description("Run scripts on a store's cash registers and watch them finish")
  .version(VERSION)
  .showHelpAfterError('(add --help for the commands and flags)');
// Before the commands are added: they inherit it.
usageErrorsExit2(program);

for (const command of COMMANDS) command.register(program);

await program.parseAsync(process.argv);
