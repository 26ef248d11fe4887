/**
 * The pure parts of a controller for many stores: topics decoded into `store/id` keys (the topic
 * binds the store), keys back into topics, targets matched on every condition, stores summed,
 * results split for the API (docs/controller.md, "Many stores").
 */
import { describe, expect, it } from 'vitest';
import { namespaceOfStore, storeOfTopic } from '../bridge/contract/store-namespace.ts';
import { decodeControllerMessage } from '../controller/messages.ts';
import { countsByStore, splitResults } from '../controller/service/store-bodies.ts';
import { topicPartsOf } from '../controller/store-keys.ts';
import { storeSummaries } from '../controller/stores.ts';
import { matchesTarget, resolveTarget, unknownListed } from '../controller/target-match.ts';
import type { DeviceEntry } from '../controller/types.ts';

const state = (deviceId: string, extra: Record<string, unknown> = {}) =>
  Buffer.from(
    JSON.stringify({
      online: true,
      deviceId,
      bootId: 'b1',
      installation: 'pos',
      version: '1',
      startedAt: '2026-11-27T08:00:00.000Z',
      groups: ['all'],
      ...extra,
    }),
  );

function entry(
  key: string,
  groups: string[],
  attributes?: Record<string, string>,
  online = true,
): DeviceEntry {
  const store = key.includes('/') ? key.split('/')[0] : undefined;
  return {
    deviceId: key,
    ...(store !== undefined && { store }),
    ...(attributes && { attributes }),
    online,
    bootId: 'b',
    groups,
    lastSeen: '2026-11-27T08:00:00.000Z',
  };
}

describe('topics of many stores', () => {
  it('finds the store level, and ignores topics outside the pattern or with a bad store id', () => {
    expect(storeOfTopic('stores/+', 'stores/042/devices/r1/state')).toEqual({
      store: '042',
      ns: 'stores/042',
    });
    expect(storeOfTopic('chain/+/pos', 'chain/7/pos/devices/r1/state')).toEqual({
      store: '7',
      ns: 'chain/7/pos',
    });
    expect(storeOfTopic('chain/+/pos', 'chain/7/other/devices/r1/state')).toBeUndefined();
    expect(storeOfTopic('stores/+', 'stores/a.b/devices/r1/state')).toBeUndefined();
    expect(namespaceOfStore('stores/+', 's1')).toBe('stores/s1');
    expect(topicPartsOf('stores/+', 's1/r1')).toEqual({ ns: 'stores/s1', deviceId: 'r1' });
    expect(topicPartsOf('pos', 'r1')).toEqual({ ns: 'pos', deviceId: 'r1' });
    expect(() => topicPartsOf('stores/+', 'r1')).toThrow('has no store');
  });

  it('keys every message by store/id once it agrees with its own topic', () => {
    const decoded = decodeControllerMessage('stores/+', 'stores/s1/devices/r1/state', state('r1'));
    expect(decoded).toMatchObject({ kind: 'state', deviceId: 's1/r1', state: { deviceId: 's1/r1' } });
    // A payload naming another register than its topic is refused before any key is made.
    expect(decodeControllerMessage('stores/+', 'stores/s1/devices/r1/state', state('r2'))).toEqual({
      kind: 'invalid',
      error: 'state deviceId differs from its topic',
    });
    const reply = decodeControllerMessage(
      'stores/+',
      'stores/s2/devices/r1/replies/job:s1:r1',
      Buffer.from(JSON.stringify({ requestId: 'job:s1:r1', deviceId: 'r1', id: 5, status: 'RUNNING' })),
    );
    expect(reply).toMatchObject({ kind: 'reply', deviceId: 's2/r1', reply: { deviceId: 's2/r1' } });
    expect(decodeControllerMessage('stores/+', 'other/s1/devices/r1/state', state('r1'))).toBeUndefined();
    // One store: ids stay plain.
    expect(decodeControllerMessage('pos', 'pos/devices/r1/state', state('r1'))).toMatchObject({
      deviceId: 'r1',
    });
  });

  it('drops attributes beyond the bounds and keeps the state', () => {
    const many = Object.fromEntries(Array.from({ length: 33 }, (_, i) => [`k${i}`, 'v']));
    for (const attributes of [many, { Bad: 'x' }, { long: 'x'.repeat(129) }]) {
      const decoded = decodeControllerMessage(
        'stores/+',
        'stores/s1/devices/r1/state',
        state('r1', { attributes }),
      );
      expect(decoded?.kind).toBe('state');
      expect((decoded as { state: Record<string, unknown> }).state.attributes).toBeUndefined();
      expect((decoded as { dropped?: string }).dropped).toMatch(/^attributes dropped: /);
    }
    const kept = decodeControllerMessage(
      'stores/+',
      'stores/s1/devices/r1/state',
      state('r1', { attributes: { region: 'north' } }),
    );
    expect((kept as { state: Record<string, unknown> }).state.attributes).toEqual({ region: 'north' });
  });
});

describe('targets, stores and bodies of many stores', () => {
  const devices = [
    entry('s1/r1', ['all', 'front'], { region: 'north' }),
    entry('s1/r2', ['all'], { region: 'south' }),
    entry('s2/r1', ['all', 'front'], { region: 'north' }, false),
  ];

  it('takes a register only when it matches every condition', () => {
    expect(resolveTarget({ group: 'front', attributes: { region: 'north' } }, devices, true)).toEqual([
      's1/r1',
      's2/r1',
    ]);
    expect(resolveTarget({ stores: ['s1'], attributes: { region: 'north' } }, devices, true)).toEqual([
      's1/r1',
    ]);
    expect(resolveTarget({ devices: ['r1', 's1/r2'] }, devices, true)).toEqual(['s1/r1', 's2/r1', 's1/r2']);
    expect(resolveTarget({ devices: ['r1'], stores: ['s2'] }, devices, true)).toEqual(['s2/r1']);
    expect(resolveTarget({ attributes: { region: 'east' } }, devices, true)).toEqual([]);
    expect(matchesTarget({ stores: ['s1'] }, entry('r1', ['all']))).toBe(false);
    expect(unknownListed({ devices: ['r1', 's3/r1', 'r9'] }, devices)).toEqual(['s3/r1', 'r9']);
  });

  it('sums stores: silent with none online or the link down', () => {
    const links = new Map([
      ['s1', { up: false, at: '2026-11-27T09:00:00.000Z' }],
      ['s3', { up: true, at: '2026-11-27T09:00:00.000Z' }],
    ]);
    expect(storeSummaries(devices, links)).toEqual([
      {
        store: 's1',
        devices: 2,
        online: 2,
        lastSeenAt: '2026-11-27T08:00:00.000Z',
        link: 'down',
        silent: true,
      },
      { store: 's2', devices: 1, online: 0, lastSeenAt: '2026-11-27T08:00:00.000Z', silent: true },
      { store: 's3', devices: 0, online: 0, link: 'up', silent: true },
    ]);
    expect(storeSummaries([entry('r1', ['all'])])).toEqual([]);
  });

  it('splits keys into store and deviceId in bodies, and counts per store', () => {
    const job = {
      jobId: 'j',
      results: [
        { deviceId: 's1/r1', status: 'FINISHED' as const, attempts: 1 },
        { deviceId: 's2/r1', status: 'FAILURE' as const, attempts: 1 },
      ],
    };
    expect(splitResults(job)).toEqual({
      jobId: 'j',
      results: [
        { store: 's1', deviceId: 'r1', status: 'FINISHED', attempts: 1 },
        { store: 's2', deviceId: 'r1', status: 'FAILURE', attempts: 1 },
      ],
    });
    const single = { jobId: 'j', results: [{ deviceId: 'r1', status: 'FINISHED', attempts: 1 }] };
    expect(splitResults(single)).toBe(single);
    expect(splitResults({ result: { deviceId: 's1/r1', status: 'RUNNING' } })).toEqual({
      result: { store: 's1', deviceId: 'r1', status: 'RUNNING' },
    });
    expect(countsByStore(job.results)).toEqual({
      s1: { total: 1, pending: 0, running: 0, finished: 1, failed: 0, offline: 0, noAnswer: 0, cancelled: 0 },
      s2: { total: 1, pending: 0, running: 0, finished: 0, failed: 1, offline: 0, noAnswer: 0, cancelled: 0 },
    });
  });
});
