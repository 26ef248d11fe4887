/**
 * The audit of refused logins (docs/controller.md, "Audit trail"): the user name tried is
 * recorded as a keyed digest (it may be a password typed into the wrong field), and one user name
 * from one address makes at most one `login_failed` row per minute, so failing on purpose cannot
 * grow the history file. A row after a quiet minute says how many refusals it stands for.
 */
import type { AuditLog } from '../audit-log.ts';

const ROW_EVERY_MS = 60_000;
/** (digest, address) pairs remembered at most; the oldest forgotten first. */
const MAX_PAIRS = 10_000;

interface Seen {
  at: number;
  /** Refusals since the last row. */
  unrecorded: number;
}

export class LoginAudit {
  private readonly seen = new Map<string, Seen>();

  constructor(
    private readonly audit: AuditLog,
    private readonly now: () => number = Date.now,
  ) {}

  /** `digest`: AuthService.userNameDigest() of the name tried. */
  refused(digest: string, knownUser: boolean, address: string, code: string): void {
    this.#row(`digest:${digest}`, address, `${code} (${knownUser ? 'a configured user' : 'no such user'})`);
  }

  /** A single sign-on refused (docs/controller.md, "Single sign-on"): no user name is known yet. */
  refusedSignOn(address: string, code: string, reason: string): void {
    this.#row('oidc', address, `${code} (single sign-on: ${reason})`);
  }

  #row(user: string, address: string, detail: string): void {
    const key = `${user}\u0000${address}`;
    const now = this.now();
    const seen = this.seen.get(key);
    if (seen && now - seen.at < ROW_EVERY_MS) {
      seen.unrecorded += 1;
      return;
    }
    const more = seen?.unrecorded ? `; ${seen.unrecorded} more refused in the minute before` : '';
    this.seen.delete(key);
    this.seen.set(key, { at: now, unrecorded: 0 });
    for (const oldest of this.seen.keys()) {
      if (this.seen.size <= MAX_PAIRS) break;
      this.seen.delete(oldest);
    }
    this.audit.record({ user, address, action: 'login_failed', detail: `${detail}${more}` });
  }
}
