/**
 * Addresses a user has logged in from (docs/security.md, "Lock-out"): there, a correct password
 * passes the per-user-name limit, so failures from other addresses cannot keep a user out of
 * the places it works from. Bounded: the last PER_USER addresses of at most `maxUsers` user
 * names, the least recently used forgotten first. In memory: a restart forgets them.
 */
const PER_USER = 8;
const DEFAULT_MAX_USERS = 10_000;

export class TrustedAddresses {
  private readonly byUser = new Map<string, string[]>();

  constructor(private readonly maxUsers = DEFAULT_MAX_USERS) {}

  has(userKey: string, address: string): boolean {
    return this.byUser.get(userKey)?.includes(address) ?? false;
  }

  add(userKey: string, address: string): void {
    const addresses = (this.byUser.get(userKey) ?? []).filter((each) => each !== address);
    addresses.push(address);
    if (addresses.length > PER_USER) addresses.shift();
    this.byUser.delete(userKey);
    this.byUser.set(userKey, addresses);
    for (const key of this.byUser.keys()) {
      if (this.byUser.size <= this.maxUsers) break;
      this.byUser.delete(key);
    }
  }

  clear(): void {
    this.byUser.clear();
  }
}
