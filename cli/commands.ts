/**
 * Every `regbridge` command with its flag table (cli/flags.ts). main.ts registers them;
 * test/cli/cli-flags.test.ts checks each table (help defaults equal schema defaults, variables named
 * REGBRIDGE_<FLAG>). A new command is added here.
 */
import type { Command } from 'commander';
import { brokerFlags, registerBrokerCommand } from './broker-command.ts';
import { registerControllerCommand } from './controller-command.ts';
import { controllerFlags } from './controller-config.ts';
import { demoFlags, registerDemoCommand } from './demo-command.ts';
import { fanoutFlags, registerFanoutCommand } from './fanout-command.ts';
import type { FlagTable } from './flags.ts';
import { hashPasswordFlags, registerHashPasswordCommand } from './hash-password-command.ts';
import { historyBackupFlags, registerHistoryBackupCommand } from './history-backup-command.ts';
import { registerResultsCommand, resultsFlags } from './results-command.ts';
import { registerRunCommand, runFlags } from './run-command.ts';
import { registerServeCommand } from './serve-command.ts';
import { serveFlags } from './serve-config.ts';
import { registerStoreConfigCommand, storeConfigFlags } from './store-config-command.ts';
import { registerWatchCommand, watchFlags } from './watch-command.ts';

export interface CommandEntry {
  readonly name: string;
  readonly flags: FlagTable;
  readonly register: (program: Command) => void;
}

export const COMMANDS: readonly CommandEntry[] = [
  { name: 'serve', flags: serveFlags, register: registerServeCommand },
  { name: 'broker', flags: brokerFlags, register: registerBrokerCommand },
  { name: 'controller', flags: controllerFlags, register: registerControllerCommand },
  { name: 'fanout', flags: fanoutFlags, register: registerFanoutCommand },
  { name: 'watch', flags: watchFlags, register: registerWatchCommand },
  { name: 'run', flags: runFlags, register: registerRunCommand },
  { name: 'results', flags: resultsFlags, register: registerResultsCommand },
  { name: 'demo', flags: demoFlags, register: registerDemoCommand },
  { name: 'hash-password', flags: hashPasswordFlags, register: registerHashPasswordCommand },
  { name: 'history-backup', flags: historyBackupFlags, register: registerHistoryBackupCommand },
  { name: 'store-config', flags: storeConfigFlags, register: registerStoreConfigCommand },
];
