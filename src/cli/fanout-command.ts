import type { Command } from 'commander';

// Placeholder until the owning issue lands; replaced by the real command.
export function registerFanoutCommand(program: Command): void {
  program
    .command('fanout')
    .description('not yet available')
    .action(() => {
      console.error('regbridge fanout: not yet available');
      process.exitCode = 2;
    });
}
