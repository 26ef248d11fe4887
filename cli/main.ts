/** The `regbridge` command line: one sub-command per module, commander parses, each command owns its run. */
import { Command } from 'commander';
import { VERSION } from '../src/version.ts';
import { registerBrokerCommand } from './broker-command.ts';
import { registerDemoCommand } from './demo-command.ts';
import { registerFanoutCommand } from './fanout-command.ts';
import { registerRunCommand } from './run-command.ts';
import { registerServeCommand } from './serve-command.ts';
import { registerWatchCommand } from './watch-command.ts';

const program = new Command('regbridge')
  .description("Run scripts on a store's cash registers and watch them finish")
  .version(VERSION)
  .showHelpAfterError();

registerServeCommand(program);
registerBrokerCommand(program);
registerFanoutCommand(program);
registerWatchCommand(program);
registerRunCommand(program);
registerDemoCommand(program);

await program.parseAsync(process.argv);
