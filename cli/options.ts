/** Helpers shared by the commands: start errors, usage errors, shutdown signals. */
import type { Command } from 'commander';
import { ConfigError } from '../src/config.ts';

/**
 * A start that failed for a reason the user fixes with a flag: its message is one line naming the
 * cause and the flag, printed without a stack (docs/controller.md, "Start errors").
 */
export class StartError extends Error {
  override readonly name = 'StartError';
}

/** Prints configuration problems (all at once) without a stack and sets exit code 2. */
export function reportStartError(command: Command, error: unknown): void {
  const plain =
    error instanceof ConfigError ||
    (error instanceof Error && ['ListenError', 'BrokerListenError', 'StartError'].includes(error.name));
  const text =
    error instanceof Error ? (plain ? error.message : (error.stack ?? error.message)) : String(error);
  console.error(`regbridge ${command.name()}: ${text}`);
  process.exitCode = 2;
}

/** SIGINT/SIGTERM run `stop` once; a second signal exits at once. */
export function onShutdownSignal(stop: () => Promise<void>): void {
  let stopping = false;
  const handler = (signal: NodeJS.Signals): void => {
    if (stopping) {
      process.exit(130);
    }
    stopping = true;
    stop().then(
      () => process.exit(0),
      (error: unknown) => {
        console.error(`error while stopping after ${signal}:`, error);
        process.exit(1);
      },
    );
  };
  process.on('SIGINT', handler);
  process.on('SIGTERM', handler);
}

/**
 * SIGHUP (a reload request: `kill -HUP`, systemd's reload) runs `reload` instead of Node's default,
 * which ends the process. A command with nothing to reload still installs one that logs.
 */
export function onReloadSignal(reload: () => void): void {
  process.on('SIGHUP', reload);
}

/** The address to show for a listen address: a wildcard's loopback. */
export function loopbackFor(host: string): string {
  return host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host;
}
