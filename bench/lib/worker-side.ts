/**
 * The worker end of bench/lib/proc.ts's IPC channel: send messages, receive commands, and leave
 * when the parent goes away (a killed scenario must not leave workers behind).
 */
import type { WorkerMessage } from './proc.ts';

export function sendToParent(message: WorkerMessage): void {
  if (process.send && process.connected) process.send(message);
}

export interface WorkerHandlers {
  /** Commands from the parent other than "stop". */
  onMessage?: (message: WorkerMessage) => void | Promise<void>;
  /** Runs on "stop", SIGTERM or a lost parent, before the process exits. */
  onStop?: () => void | Promise<void>;
}

export function workerMain(main: () => Promise<void>, handlers: WorkerHandlers = {}): void {
  let stopping = false;
  const stop = async (code: number): Promise<void> => {
    if (stopping) return;
    stopping = true;
    const force = setTimeout(() => process.exit(code), 5000);
    force.unref();
    try {
      await handlers.onStop?.();
    } catch (error) {
      console.error(`worker stop failed: ${(error as Error).message}`);
    }
    process.exit(code);
  };
  process.on('message', (message: WorkerMessage) => {
    if (message.type === 'stop') {
      void stop(0);
      return;
    }
    void Promise.resolve(handlers.onMessage?.(message)).catch((error: unknown) => {
      sendToParent({ type: 'error', message: (error as Error).stack ?? String(error) });
    });
  });
  process.on('disconnect', () => void stop(0));
  process.once('SIGTERM', () => void stop(143));
  main().catch((error: unknown) => {
    sendToParent({ type: 'error', message: (error as Error).stack ?? String(error) });
    void stop(1);
  });
}
