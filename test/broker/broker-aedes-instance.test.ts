/**
 * broker/aedes-instance.ts: the store broker's aedes assembly, and the start-up guard on the
 * private members its fixes touch (broker/aedes-fixes/internals-guard.ts). A missing member fails
 * the start with an error naming it; a failure after aedes was created must close that instance,
 * or its heartbeat and will timers keep the process alive after a failed start.
 */
import { Aedes } from 'aedes';
import pino from 'pino';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { AccessRules } from '../../broker/access-rules.ts';
import {
  AedesInternalsError,
  assertInternals,
  GUARDED_MEMBERS,
  probeClient,
} from '../../broker/aedes-fixes/internals-guard.ts';
import { createStoreAedes } from '../../broker/aedes-instance.ts';
import { ConnectionAdmission } from '../../broker/connection-admission.ts';
import { Gatekeeper } from '../../broker/gatekeeper.ts';
import { DEFAULT_BROKER_LIMITS } from '../../broker/limits.ts';
import { UserDirectory } from '../../broker/users.ts';
import { LoginThrottle } from '../../src/auth/login-throttle.ts';

const logger = pino({ level: 'silent' });

function gatekeeper(): Gatekeeper {
  const users = new UserDirectory([]);
  const logins = new LoginThrottle({ maxFailures: 10, userMaxFailures: 10, windowMs: 60_000 });
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
      createStoreAedes({
        limits: DEFAULT_BROKER_LIMITS,
        gatekeeper: gatekeeper(),
        admission: new ConnectionAdmission(DEFAULT_BROKER_LIMITS, logger),
        redis: undefined,
        logger,
      }),
    ).rejects.toThrow(
      /persistence\.addSubscriptions is missing \(used by broker\/aedes-fixes\/subscription-store\.ts\)/,
    );
    expect(close).toHaveBeenCalledTimes(1);
  });

  it('returns a running instance', async () => {
    const aedes = await createStoreAedes({
      limits: DEFAULT_BROKER_LIMITS,
      gatekeeper: gatekeeper(),
      admission: new ConnectionAdmission(DEFAULT_BROKER_LIMITS, logger),
      redis: undefined,
      logger,
    });
    expect(aedes.closed).toBe(false);
    await new Promise<void>((resolve) => aedes.close(() => resolve()));
  });
});

describe('the guard on aedes internals', () => {
  /** Every guarded member, with a change that removes it from a copy of the client or persistence. */
  const cases = Object.entries(GUARDED_MEMBERS).flatMap(([owner, members]) =>
    members.map((member) => [`${owner}.${member}`, owner, member] as const),
  );

  /** An object inheriting from `of` whose `member` is undefined. */
  function shadowed(of: unknown, member: string): unknown {
    return Object.assign(Object.create(of as object), { [member]: undefined });
  }

  it('passes on the pinned aedes, mqtt-packet and persistence', async () => {
    const aedes = await Aedes.createBroker();
    const probe = probeClient(aedes);
    try {
      expect(() =>
        assertInternals(probe.client, (aedes as unknown as { persistence: unknown }).persistence),
      ).not.toThrow();
    } finally {
      probe.close();
      await new Promise<void>((resolve) => aedes.close(() => resolve()));
    }
  });

  it.each(cases)('fails naming %s when it is missing', async (name, owner, member) => {
    const aedes = await Aedes.createBroker();
    const probe = probeClient(aedes);
    // Copies of a fresh client and of the persistence: the instance itself stays whole.
    const client = { ...(probe.client as Record<string, unknown>) };
    const persistence = Object.create((aedes as unknown as { persistence: object }).persistence);
    try {
      // A prototype member (the parser's methods) is shadowed on a copy, an own one deleted.
      if (owner === 'client') delete client[member];
      else if (owner === 'persistence') persistence[member] = undefined;
      else client._parser = shadowed(client._parser, member);
      let thrown: unknown;
      try {
        assertInternals(client, persistence);
      } catch (error) {
        thrown = error;
      }
      expect(thrown).toBeInstanceOf(AedesInternalsError);
      expect((thrown as AedesInternalsError).member).toBe(name);
      expect((thrown as Error).message).toContain(`${name} is missing`);
    } finally {
      probe.close();
      await new Promise<void>((resolve) => aedes.close(() => resolve()));
    }
  });
});
