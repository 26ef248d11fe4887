import type { Command } from 'commander';

// Placeholder until the owning issue lands; replaced by the real command.
export function registerWatchCommand(program: Command): void {
  program
    .command('watch')
    .description('not yet available')
    .action(() => {
      console.error('regbridge watch: not yet available');
      process.exitCode = 2;
    });
}
