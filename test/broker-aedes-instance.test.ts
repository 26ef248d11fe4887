/**
 * broker/aedes-instance.ts: the store broker's aedes assembly. A failure after aedes was created
 * (here: a persistence without a method the store broker wraps) must close that instance, or its
 * heartbeat and will timers keep the process alive after a failed start.
 */
import { Aedes } from 'aedes';
import pino from 'pino';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { AccessRules } from '../broker/access-rules.ts';
import { createStoreAedes } from '../broker/aedes-instance.ts';
import { Gatekeeper } from '../broker/gatekeeper.ts';
import { DEFAULT_BROKER_LIMITS } from '../broker/limits.ts';
import { LoginLimiter } from '../broker/login-limiter.ts';
import { UserDirectory } from '../broker/users.ts';

const logger = pino({ level: 'silent' });

function gatekeeper(): Gatekeeper {
  const users = new UserDirectory([]);
  const logins = new LoginLimiter({ maxFailures: 10, windowMs: 60_000 });
  return new Gatekeeper(() => users, new AccessRules('pos'), false, logger, logins);
}

describe('createStoreAedes', () => {
  afterEach(() => {
    vi.restoreAllMocks();
  });

  it('closes the aedes instance it created when the assembly fails after it', async () => {
    const close = vi.spyOn(Aedes.prototype, 'close');
    // The real aedes with its own in-memory persistence, lacking what a persistence of another
    // version could lack: a method the store broker wraps.
    const create = Aedes.createBroker.bind(Aedes);
    vi.spyOn(Aedes, 'createBroker').mockImplementation(async (options) => {
      const broker = await create(options);
      (broker as unknown as { persistence: Record<string, unknown> }).persistence.addSubscriptions =
        undefined;
      return broker;
    });
    await expect(
      createStoreAedes({ limits: DEFAULT_BROKER_LIMITS, gatekeeper: gatekeeper(), redis: undefined, logger }),
    ).rejects.toThrow();
    expect(close).toHaveBeenCalledTimes(1);
  });

  it('returns a running instance and, with the in-memory persistence, the session backlog', async () => {
    const { aedes, backlog } = await createStoreAedes({
      limits: DEFAULT_BROKER_LIMITS,
      gatekeeper: gatekeeper(),
      redis: undefined,
      logger,
    });
    expect(aedes.closed).toBe(false);
    expect(backlog?.stats).toEqual({ held: 0, timedOut: 0, peak: 0 });
    await new Promise<void>((resolve) => aedes.close(() => resolve()));
  });
});
