/**
 * In-flight waits of long polls and synchronous fm-scripts. A wait ends early when its client
 * disconnects (nobody is left to answer) or when the app closes (fastify.close() would
 * otherwise wait up to 30 s, or timeoutMs, for them).
 */
import type { FastifyReply } from 'fastify';

export class Waits {
  private readonly active = new Set<AbortController>();

  get size(): number {
    return this.active.size;
  }

  async run<T>(reply: FastifyReply, wait: (signal: AbortSignal) => Promise<T>): Promise<T> {
    const controller = new AbortController();
    // The response closing before it was written means the client went away.
    const onClose = (): void => {
      if (reply.raw.writableFinished) return;
      reply.log.debug('client went away; wait abandoned');
      controller.abort();
    };
    reply.raw.once('close', onClose);
    this.active.add(controller);
    try {
      return await wait(controller.signal);
    } finally {
      this.active.delete(controller);
      reply.raw.off('close', onClose);
    }
  }

  abortAll(): void {
    for (const controller of this.active) controller.abort();
    this.active.clear();
  }
}
