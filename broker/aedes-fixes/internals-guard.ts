/**
 * The one start-up check of every private member of aedes, mqtt-packet and the persistence that
 * the fixes in this folder touch. They are pinned to exact versions (package.json); an upgrade
 * that moves a member fails the broker's start with an error naming it, instead of letting a fix
 * silently stop working (the wrappers would otherwise be installed on nothing).
 */
import { PassThrough } from 'node:stream';
import type { Aedes } from 'aedes';

/** Where each member is used, so the error says which fix to revisit. */
const CLIENT_MEMBERS: Record<string, string> = {
  deliver0: 'dedupe.ts, session-resume.ts, delivery-qos.ts',
  deliverQoS: 'dedupe.ts, session-resume.ts, delivery-qos.ts',
  duplicates: 'dedupe.ts',
  subscriptions: 'delivery-qos.ts, session-backlog.ts',
  clean: 'dedupe.ts',
  connected: 'session-resume.ts',
  closed: 'session-resume.ts',
  conn: 'packet-gate.ts',
  _parser: 'packet-gate.ts',
};

const PARSER_MEMBERS: Record<string, string> = {
  _parseLength: 'packet-gate.ts',
  _parseConnect: 'packet-gate.ts',
  _parseUnsubscribe: 'packet-gate.ts',
  _emitError: 'packet-gate.ts',
  _list: 'packet-gate.ts',
  packet: 'packet-gate.ts',
  parse: 'packet-gate.ts',
};

const PERSISTENCE_MEMBERS: Record<string, string> = {
  addSubscriptions: 'subscription-store.ts',
  removeSubscriptions: 'subscription-store.ts',
  subscriptionsByTopic: 'subscription-store.ts',
  subscriptionsByClient: 'session-present.ts',
  outgoingStream: 'session-resume.ts',
  outgoingEnqueue: 'session-backlog.ts',
  outgoingEnqueueCombi: 'session-backlog.ts',
  outgoingClearMessageId: 'session-backlog.ts',
};

const FUNCTIONS = new Set([
  'deliver0',
  'deliverQoS',
  '_parseLength',
  '_parseConnect',
  '_parseUnsubscribe',
  '_emitError',
  'parse',
  ...Object.keys(PERSISTENCE_MEMBERS),
]);

export class AedesInternalsError extends Error {
  override readonly name = 'AedesInternalsError';
  readonly member: string;

  constructor(member: string, usedBy: string) {
    super(
      `the store broker cannot start: ${member} is missing (used by broker/aedes-fixes/${usedBy}); ` +
        'aedes, mqtt-packet or aedes-persistence-redis is not the version pinned in package.json',
    );
    this.member = member;
  }
}

function check(owner: string, target: unknown, members: Record<string, string>): void {
  const object = target as Record<string, unknown> | null | undefined;
  for (const [member, usedBy] of Object.entries(members)) {
    const value = object?.[member];
    const present = FUNCTIONS.has(member) ? typeof value === 'function' : value !== undefined;
    if (!present) throw new AedesInternalsError(`${owner}.${member}`, usedBy);
  }
}

/** Every member checked, by owner (`client`, `client._parser`, `persistence`). */
export const GUARDED_MEMBERS: Readonly<
  Record<'client' | 'client._parser' | 'persistence', readonly string[]>
> = {
  client: Object.keys(CLIENT_MEMBERS),
  'client._parser': Object.keys(PARSER_MEMBERS),
  persistence: Object.keys(PERSISTENCE_MEMBERS),
};

/** Throws AedesInternalsError naming the first member missing from a client, its parser or the persistence. */
export function assertInternals(client: unknown, persistence: unknown): void {
  check('client', client, CLIENT_MEMBERS);
  check('client._parser', (client as { _parser?: unknown } | null)?._parser, PARSER_MEMBERS);
  check('persistence', persistence, PERSISTENCE_MEMBERS);
}

/** A client aedes makes for a stream that never connects, closed again at once (for the check). */
export function probeClient(aedes: Aedes): { client: unknown; close(): void } {
  const stream = new PassThrough();
  const client = aedes.handle(stream as never);
  return {
    client,
    close: () => {
      client.close();
      stream.destroy();
    },
  };
}

/** The start-up check: a probe client of `aedes` and its persistence. */
export function assertAedesInternals(aedes: Aedes): void {
  const probe = probeClient(aedes);
  try {
    assertInternals(probe.client, (aedes as unknown as { persistence?: unknown }).persistence);
  } finally {
    probe.close();
  }
}
