/**
 * What the composition root runs: components with start() and stop(), built whole before they
 * start. A runner (cli/device.ts, cli/controller-service.ts) is an ordered list of them: start
 * walks it in order, stop walks the started ones in reverse, and a start that fails stops what
 * had started (docs/decisions/device-components-order.md).
 */
import type { Logger } from '../src/logger.ts';

export interface Component {
  /** For the log line of a failing stop (else the class name). */
  readonly name?: string;
  start(): Promise<void> | void;
  stop(): Promise<void> | void;
}

export class ComponentList {
  private readonly started: Component[] = [];

  constructor(private readonly logger: Logger) {}

  /** Starts each component in order; if one fails, stops those started (in reverse) and rethrows. */
  async start(components: readonly Component[]): Promise<void> {
    for (const component of components) {
      try {
        await component.start();
      } catch (error) {
        await this.stop();
        throw error;
      }
      this.started.push(component);
    }
  }

  /** Stops every started component, last started first; a failing stop is logged, the rest go on. */
  async stop(): Promise<void> {
    for (const component of this.started.splice(0).reverse()) {
      try {
        await component.stop();
      } catch (error) {
        this.logger.error(
          { err: error, component: component.name ?? component.constructor.name },
          'error while stopping',
        );
      }
    }
  }
}

function isPortTaken(error: unknown): boolean {
  // Both fastify's listen error and BrokerListenError carry the errno code.
  return (error as NodeJS.ErrnoException).code === 'EADDRINUSE';
}

/**
 * Listens on `port`; when it is taken and `freeIfTaken` (a defaulted port, not one the user
 * asked for), on a free port instead, logged, with `said` recorded for the start-up banner
 * (README, "Command line": `npm start` works where 1883 or 8080 is taken). `taken` narrows which
 * EADDRINUSE counts (the broker's main port, not its WebSocket one).
 */
export async function listenOrFreePort(
  port: number,
  listen: (port: number) => Promise<void>,
  fallback: {
    freeIfTaken: boolean | undefined;
    logger: Logger;
    warning: string;
    said?: { notes: string[]; note: string };
    taken?: (error: unknown) => boolean;
  },
): Promise<void> {
  try {
    await listen(port);
  } catch (error) {
    if (!fallback.freeIfTaken || !isPortTaken(error) || !(fallback.taken?.(error) ?? true)) throw error;
    fallback.logger.warn({ port }, fallback.warning);
    await listen(0);
    fallback.said?.notes.push(fallback.said.note);
  }
}
