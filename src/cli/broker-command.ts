import type { Command } from 'commander';

// Placeholder until the owning issue lands; replaced by the real command.
export function registerBrokerCommand(program: Command): void {
  program
    .command('broker')
    .description('not yet available')
    .action(() => {
      console.error('regbridge broker: not yet available');
      process.exitCode = 2;
    });
}
