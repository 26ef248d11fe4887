/**
 * `regbridge history-backup --db FILE --out FILE`: an online copy of the controller's history,
 * taken while the controller runs (controller/history-backup.ts; docs/controller.md,
 * "Retention and backup").
 */
import type { Command } from 'commander';
import * as z from 'zod';
import { BackupTargetExists, backupHistory } from '../controller/history-backup.ts';
import { indexedCommand } from './command-index.ts';
import { addFlags, type FlagTable, flag, flagSchema, parseFlagsOrReport } from './flags.ts';

export const historyBackupFlags = {
  db: flag('--db <file>', "the controller's SQLite history", z.string().min(1), {
    default: './regbridge-controller.db',
  }),
  out: flag('--out <file>', 'the copy to write (must not exist)', z.string().min(1)),
} satisfies FlagTable;
const historyBackupSchema = flagSchema(historyBackupFlags).refine((config) => config.out !== undefined, {
  message: '--out: required: the file to write the copy to',
  path: ['out'],
});

export function registerHistoryBackupCommand(program: Command): void {
  const command = indexedCommand(program, 'history-backup');
  addFlags(command, historyBackupFlags).action(async (_flags: unknown, cmd: Command) => {
    const config = parseFlagsOrReport(cmd, historyBackupFlags, historyBackupSchema);
    if (!config) return;
    try {
      const pages = await backupHistory(config.db, config.out!);
      console.log(`copied ${config.db} to ${config.out} (${pages} pages)`);
    } catch (error) {
      console.error(`regbridge history-backup: ${(error as Error).message}`);
      process.exitCode = error instanceof BackupTargetExists ? 2 : 1;
    }
  });
}
