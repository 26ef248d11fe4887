/**
 * Single-use tickets of the event stream (docs/controller.md, "Events"): an EventSource cannot send
 * an Authorization header and a token in a URL reaches logs. A ticket opens one stream bound to
 * its token's session; only its sha256 is kept, at most `max` of them.
 */
import { hash, randomBytes } from 'node:crypto';
import type { TokenSession } from '../../src/auth/token-store.ts';

export const TICKET_TTL_SECONDS = 30;
const DEFAULT_MAX_TICKETS = 10_000;

interface Held {
  readonly session: TokenSession;
  readonly expiresAt: number;
}

export class EventTickets {
  private readonly held = new Map<string, Held>();

  constructor(
    private readonly max = DEFAULT_MAX_TICKETS,
    private readonly now: () => number = Date.now,
  ) {}

  issue(session: TokenSession): { ticket: string; expiresIn: number } {
    this.prune();
    const ticket = randomBytes(32).toString('base64url');
    this.held.set(hash('sha256', ticket, 'base64url'), {
      session,
      expiresAt: Math.min(session.expiresAt, this.now() + TICKET_TTL_SECONDS * 1000),
    });
    for (const key of this.held.keys()) {
      if (this.held.size <= this.max) break;
      this.held.delete(key);
    }
    return { ticket, expiresIn: TICKET_TTL_SECONDS };
  }

  /** The session a live ticket was issued under; the ticket is used up either way. */
  redeem(ticket: string): TokenSession | undefined {
    const key = hash('sha256', ticket, 'base64url');
    const held = this.held.get(key);
    this.held.delete(key);
    return held && held.expiresAt > this.now() ? held.session : undefined;
  }

  private prune(): void {
    const now = this.now();
    for (const [key, held] of this.held) {
      if (held.expiresAt > now) break;
      this.held.delete(key);
    }
  }
}
