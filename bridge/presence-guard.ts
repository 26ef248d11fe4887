/**
 * Keeps a device's retained state right when a broker publishes its last will late (surviving
 * aedes instances publish a crashed one's wills minutes later, docs/broker.md): an offline state
 * of its own boot, received while connected, is answered by publishing online again.
 */
import type { Logger } from 'pino';
import { stateSchema } from './contract/topics.ts';

export interface PresenceGuardOptions {
  bootId: string;
  /** True while connected (the link is usable). */
  online: () => boolean;
  /** Publishes the online state (retained). */
  republish: () => void;
  logger: Logger;
}

export class PresenceGuard {
  readonly #options: PresenceGuardOptions;

  constructor(options: PresenceGuardOptions) {
    this.#options = options;
  }

  /** A message on the device's own state topic (its own online states come back too: ignored). */
  handle(payload: Buffer): void {
    const { bootId, online, republish, logger } = this.#options;
    if (payload.length === 0 || !online()) return;
    let parsed: ReturnType<typeof stateSchema.safeParse>;
    try {
      parsed = stateSchema.safeParse(JSON.parse(payload.toString('utf8')));
    } catch {
      return;
    }
    // An earlier boot's will is history; only this boot's will contradicts a live connection.
    if (!parsed.success || parsed.data.online || parsed.data.bootId !== bootId) return;
    logger.warn(
      'own last will received while connected (published late by a broker); republishing online state',
    );
    republish();
  }
}
