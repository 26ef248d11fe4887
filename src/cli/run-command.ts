import type { Command } from 'commander';

// Placeholder until the owning issue lands; replaced by the real command.
export function registerRunCommand(program: Command): void {
  program
    .command('run')
    .description('not yet available')
    .action(() => {
      console.error('regbridge run: not yet available');
      process.exitCode = 2;
    });
}
