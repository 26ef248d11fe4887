import type { Command } from 'commander';

// Placeholder until the owning issue lands; replaced by the real command.
export function registerDemoCommand(program: Command): void {
  program
    .command('demo')
    .description('not yet available')
    .action(() => {
      console.error('regbridge demo: not yet available');
      process.exitCode = 2;
    });
}
