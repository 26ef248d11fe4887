/**
 * The pure parts of the store controller: the directory's ordering rules, message decoding,
 * target planning and `--to` parsing, the fan-out bookkeeping, and the tables.
 */
import { describe, expect, it } from 'vitest';
import type { OnlineState, StatusMessage } from '../../bridge/contract/topics.ts';
import {
  type DeviceRow,
  firstLine,
  renderDevices,
  renderResults,
  renderSummary,
  reportedAt,
  sanitize,
} from '../../cli/format-table.ts';
import { DeviceDirectory } from '../../controller/directory.ts';
import { Fanout } from '../../controller/fanout.ts';
import { decodeControllerMessage } from '../../controller/messages.ts';
import { parseTarget, planTargets } from '../../controller/targets.ts';
import { type DeviceEntry, summarize } from '../../controller/types.ts';

const T0 = new Date('2026-01-01T10:00:00.000Z');
const online = (deviceId: string, bootId: string, groups: string[] = []): OnlineState => ({
  online: true,
  deviceId,
  bootId,
  installation: 'cash-register',
  version: '1.0.0',
  startedAt: T0.toISOString(),
  groups,
});
const status = (
  fields: Partial<StatusMessage> & Pick<StatusMessage, 'id' | 'seq' | 'status'>,
): StatusMessage => ({
  deviceId: 'reg1',
  bootId: 'b1',
  queuedAt: T0.toISOString(),
  ...fields,
});

describe('DeviceDirectory', () => {
  it('keeps metadata of an online boot when that boot goes offline; a first-seen offline device has no groups', () => {
    const dir = new DeviceDirectory();
    dir.applyState('reg1', online('reg1', 'b1', ['front']), T0);
    const change = dir.applyState('reg1', { online: false, deviceId: 'reg1', bootId: 'b1' }, T0);
    expect(change).toMatchObject({
      kind: 'changed',
      newBoot: false,
      entry: { online: false, groups: ['front'], version: '1.0.0' },
    });
    dir.applyState('reg2', { online: false, deviceId: 'reg2', bootId: 'x' }, T0);
    expect(dir.device('reg2')).toEqual({
      deviceId: 'reg2',
      online: false,
      bootId: 'x',
      groups: [],
      lastSeen: T0.toISOString(),
    });
  });

  it('ignores a state of a superseded boot and a state whose deviceId differs from the topic', () => {
    const dir = new DeviceDirectory();
    dir.applyState('reg1', online('reg1', 'b1'), T0);
    expect(dir.applyState('reg1', online('reg1', 'b2'), T0)).toMatchObject({
      kind: 'changed',
      newBoot: true,
    });
    expect(dir.applyState('reg1', { online: false, deviceId: 'reg1', bootId: 'b1' }, T0).kind).toBe(
      'ignored',
    );
    expect(dir.applyState('reg1', online('reg9', 'b3'), T0).kind).toBe('ignored');
    expect(dir.device('reg1')).toMatchObject({ online: true, bootId: 'b2' });
  });

  it('a cleared state topic removes the device and its tasks', () => {
    const dir = new DeviceDirectory();
    dir.applyState('reg1', online('reg1', 'b1'), T0);
    dir.applyStatus(status({ id: 1, seq: 1, status: 'RUNNING' }), T0);
    expect(dir.applyState('reg1', null, T0)).toEqual({ kind: 'removed', deviceId: 'reg1' });
    expect(dir.list()).toEqual([]);
    expect(dir.tasksOf('reg1')).toEqual([]);
  });

  it('orders statuses per task: retained replay in topic order keeps every task, stale seqs are ignored', () => {
    const dir = new DeviceDirectory();
    dir.applyState('reg1', online('reg1', 'b1'), T0);
    // Replay order is topic order: task 12 (seq 30) before task 9 (seq 20).
    expect(dir.applyStatus(status({ id: 12, seq: 30, status: 'RUNNING' }), T0)).toBeDefined();
    expect(dir.applyStatus(status({ id: 9, seq: 20, status: 'FINISHED', report: 'ok' }), T0)).toBeDefined();
    expect(
      dir.applyStatus(status({ id: 9, seq: 19, status: 'RUNNING', startedAt: T0.toISOString() }), T0),
    ).toBeUndefined();
    expect(dir.applyStatus(status({ id: 9, seq: 20, status: 'FINISHED', report: 'ok' }), T0)).toBeUndefined();
    expect(dir.tasksOf('reg1').map((t) => [t.id, t.phase])).toEqual([
      [12, 'queued'],
      [9, 'finished'],
    ]);
    expect(dir.queueOf('reg1')).toEqual({ queued: 1, running: 0 });
    // The newest task is the highest id, whatever the arrival order; the queue as queueOf.
    expect(dir.taskSummaryOf('reg1')).toEqual({
      lastTask: { id: 12, status: 'RUNNING' },
      queue: { queued: 1, running: 0 },
    });
    expect(dir.taskSummaryOf('nobody')).toEqual({ queue: { queued: 0, running: 0 } });
  });

  it('a new boot marks earlier tasks as previous boot; a same-id message of an old boot cannot replace a current one', () => {
    const dir = new DeviceDirectory();
    dir.applyState('reg1', online('reg1', 'b1'), T0);
    dir.applyStatus(status({ id: 5, seq: 1, status: 'RUNNING', startedAt: T0.toISOString() }), T0);
    dir.applyState('reg1', online('reg1', 'b2'), T0);
    expect(dir.tasksOf('reg1')[0]).toMatchObject({ id: 5, previousBoot: true });
    expect(dir.queueOf('reg1')).toEqual({ queued: 0, running: 0 });
    expect(dir.taskSummaryOf('reg1').queue).toEqual({ queued: 0, running: 0 });
    dir.applyStatus(status({ id: 6, seq: 1, bootId: 'b2', status: 'RUNNING' }), T0);
    expect(dir.applyStatus(status({ id: 6, seq: 9, bootId: 'b1', status: 'FINISHED' }), T0)).toBeUndefined();
    expect(dir.tasksOf('reg1')[0]).toMatchObject({ id: 6, bootId: 'b2', previousBoot: false });
  });

  it('bounds the tasks kept per device and forgets cleared ones', () => {
    const dir = new DeviceDirectory(3);
    for (let id = 1; id <= 5; id++) dir.applyStatus(status({ id, seq: id, status: 'FINISHED' }), T0);
    expect(dir.tasksOf('reg1').map((t) => t.id)).toEqual([5, 4, 3]);
    expect(dir.clearStatus('reg1', 4)).toBe(true);
    expect(dir.tasksOf('reg1').map((t) => t.id)).toEqual([5, 3]);
  });

  it('a view carries every field of the status and no undefined one, and is the caller’s own copy', () => {
    const dir = new DeviceDirectory();
    dir.applyState('reg1', online('reg1', 'b1'), T0);
    const T1 = new Date('2026-01-01T10:00:01.000Z');
    const full = status({
      id: 7,
      seq: 3,
      status: 'FINISHED',
      report: 'line',
      requestId: 'req-1',
      startedAt: T0.toISOString(),
      finishedAt: T1.toISOString(),
    });
    const view = dir.applyStatus(full, T1)!;
    expect(view).toStrictEqual({
      ...full,
      phase: 'finished',
      receivedAt: T1.toISOString(),
      previousBoot: false,
    });
    const queued = dir.applyStatus(status({ id: 8, seq: 1, status: 'RUNNING' }), T1)!;
    expect(Object.keys(queued).sort()).toEqual(
      ['bootId', 'deviceId', 'id', 'phase', 'previousBoot', 'queuedAt', 'receivedAt', 'seq', 'status'].sort(),
    );
    const failed = dir.applyStatus(status({ id: 9, seq: 2, status: 'FAILURE', error: 'E' }), T1)!;
    expect(failed.error).toBe('E');
    view.report = 'changed by a listener';
    dir.tasksOf('reg1')[1]!.report = 'changed by a reader';
    expect(dir.tasksOf('reg1').find((t) => t.id === 7)?.report).toBe('line');
    expect(dir.device('reg1')?.lastSeen).toBe(T1.toISOString());
  });
});

describe('decodeControllerMessage', () => {
  const decode = (topic: string, body: unknown) =>
    decodeControllerMessage(
      'pos',
      topic,
      Buffer.from(typeof body === 'string' ? body : JSON.stringify(body)),
    );

  it('decodes states, statuses, clears and replies', () => {
    expect(decode('pos/devices/reg1/state', online('reg1', 'b1'))).toMatchObject({
      kind: 'state',
      deviceId: 'reg1',
    });
    expect(decode('pos/devices/reg1/state', '')).toEqual({ kind: 'state', deviceId: 'reg1', state: null });
    expect(decode('pos/devices/reg1/tasks/3/status', '')).toEqual({
      kind: 'statusCleared',
      deviceId: 'reg1',
      taskId: 3,
    });
    expect(
      decode('pos/devices/reg1/tasks/3/status', status({ id: 3, seq: 1, status: 'RUNNING' })),
    ).toMatchObject({
      kind: 'status',
    });
    expect(decode('pos/devices/reg1/replies/r-1', { deviceId: 'reg1', id: 3, status: 'RUNNING' })).toEqual({
      kind: 'reply',
      deviceId: 'reg1',
      requestId: 'r-1',
      reply: { requestId: 'r-1', deviceId: 'reg1', id: 3, status: 'RUNNING' },
    });
  });

  it('reports malformed or inconsistent payloads as invalid and ignores foreign topics', () => {
    expect(decode('pos/devices/reg1/state', '{nope')).toEqual({
      kind: 'invalid',
      error: 'payload is not valid JSON',
    });
    expect(decode('pos/devices/reg1/state', online('reg2', 'b1'))?.kind).toBe('invalid');
    expect(
      decode('pos/devices/reg1/tasks/4/status', status({ id: 3, seq: 1, status: 'RUNNING' }))?.kind,
    ).toBe('invalid');
    // Contract 3.1: a reply is bound to the register of its topic.
    expect(
      decode('pos/devices/reg1/replies/r-1', { requestId: 'r-2', deviceId: 'reg1', error: 'x' }),
    ).toEqual({
      kind: 'badReply',
      deviceId: 'reg1',
      error: 'reply requestId differs from its topic',
    });
    expect(
      decode('pos/devices/evil/replies/r-1', { requestId: 'r-1', deviceId: 'reg1', error: 'x' }),
    ).toEqual({
      kind: 'badReply',
      deviceId: 'evil',
      error: 'reply deviceId differs from its topic',
    });
    expect(decode('pos/devices/reg1/replies/r-1', '{nope')?.kind).toBe('badReply');
    // The v1.1 reply topic is no longer read.
    expect(decode('pos/replies/ctl1/r-1', { deviceId: 'reg1', error: 'x' })).toBeUndefined();
    expect(decode('pos/devices/reg1/replies/r-1/x', { deviceId: 'reg1', error: 'x' })).toBeUndefined();
    expect(decode('pos/devices/reg1/scripts', { script: 'x' })).toBeUndefined();
  });
});

describe('targets', () => {
  const entry = (deviceId: string, isOnline: boolean, groups: string[]): DeviceEntry => ({
    deviceId,
    online: isOnline,
    bootId: `${deviceId}-b`,
    groups,
    lastSeen: T0.toISOString(),
  });
  const devices = [
    entry('b', true, ['front']),
    entry('a', true, ['back']),
    entry('c', false, ['front']),
    entry('d', false, []),
  ];

  it('parses --to', () => {
    expect(parseTarget('all')).toBe('all');
    expect(parseTarget('group:front')).toEqual({ group: 'front' });
    expect(parseTarget('reg1, reg2')).toEqual(['reg1', 'reg2']);
    expect(() => parseTarget('group:no/pe')).toThrow(/invalid group id/);
    expect(() => parseTarget('reg#1')).toThrow(/invalid device id/);
    expect(() => parseTarget(' , ')).toThrow(/expected all/);
  });

  it('plans all, a group and an id list from the directory', () => {
    expect(planTargets(devices, 'all')).toEqual({
      online: [
        { deviceId: 'a', bootId: 'a-b' },
        { deviceId: 'b', bootId: 'b-b' },
      ],
      offline: ['c', 'd'],
      group: 'all',
    });
    expect(planTargets(devices, { group: 'front' })).toEqual({
      online: [{ deviceId: 'b', bootId: 'b-b' }],
      offline: ['c'],
      group: 'front',
    });
    expect(planTargets(devices, ['c', 'b', 'zz', 'b'])).toEqual({
      online: [{ deviceId: 'b', bootId: 'b-b' }],
      offline: ['c', 'zz'],
    });
    expect(() => planTargets(devices, ['../x'])).toThrow();
  });
});

describe('Fanout bookkeeping', () => {
  it('keeps target order, ignores other requests and other boots, and expires with what it knew', () => {
    const fanout = new Fanout(
      'r1',
      1000,
      [
        { deviceId: 'a', bootId: 'ba' },
        { deviceId: 'b', bootId: 'bb' },
      ],
      ['c'],
    );
    expect(fanout.initialResults()).toEqual([{ deviceId: 'c', status: 'OFFLINE' }]);
    expect(fanout.onReply({ requestId: 'other', deviceId: 'a', error: 'x' }, 1100)).toBeUndefined();
    expect(
      fanout.onReply({ requestId: 'r1', deviceId: 'a', id: 4, status: 'RUNNING' }, 1100),
    ).toBeUndefined();
    const view = {
      ...status({ id: 4, seq: 2, status: 'FINISHED', report: 'r' }),
      deviceId: 'a',
      phase: 'finished' as const,
      receivedAt: '',
      previousBoot: false,
    };
    // Same task id, other boot: not ours.
    expect(fanout.onStatus({ ...view, bootId: 'zz' }, 1200)).toBeUndefined();
    // Matched by the task id from the reply, even without requestId.
    expect(fanout.onStatus({ ...view, bootId: 'ba' }, 1200)).toEqual({
      deviceId: 'a',
      status: 'FINISHED',
      report: 'r',
      taskId: 4,
      durationMs: 200,
    });
    expect(fanout.expire()).toEqual([{ deviceId: 'b', status: 'NO_ANSWER', detail: 'no reply' }]);
    expect(fanout.results().map((r) => r.deviceId)).toEqual(['a', 'b', 'c']);
    expect(fanout.complete).toBe(true);
  });

  it("knows whom it was sent to; a cancel's refusal on the reply topic ends nothing, the script's does", () => {
    const fanout = new Fanout('r1', 1000, [{ deviceId: 'a', bootId: 'ba' }], ['c']);
    expect([fanout.wasSentTo('a'), fanout.wasSentTo('c'), fanout.wasSentTo('z')]).toEqual([
      true,
      false,
      false,
    ]);
    for (const code of ['TASK_RUNNING', 'TASK_ENDED', 'TASK_DOES_NOT_EXIST']) {
      expect(fanout.onReply({ requestId: 'r1', deviceId: 'a', error: `${code}: x` }, 1100)).toBeUndefined();
    }
    expect(fanout.onReply({ requestId: 'r1', deviceId: 'a', error: 'CANCELLED: y' }, 1100)).toEqual({
      deviceId: 'a',
      status: 'FAILURE',
      error: 'CANCELLED: y',
      durationMs: 100,
      // The register refused the script without creating a task (rollout control's REFUSED).
      refused: true,
    });
  });
});

describe('tables', () => {
  it('sanitizes control characters from device text and cuts to the first line', () => {
    expect(sanitize('\u001b[2Jhi\u0007')).toBe('?[2Jhi?');
    expect(firstLine('one\r\ntwo')).toBe('one');
    expect(firstLine('x'.repeat(80), 10)).toBe(`${'x'.repeat(9)}…`);
  });

  it('renders results and the summary', () => {
    const results = [
      {
        deviceId: 'reg1',
        status: 'FINISHED' as const,
        report: 'X REPORT\nmore',
        taskId: 3,
        durationMs: 1500,
      },
      { deviceId: 'reg2', status: 'FAILURE' as const, error: 'paper jam', durationMs: 20 },
      { deviceId: 'reg3', status: 'OFFLINE' as const },
      { deviceId: 'reg4', status: 'NO_ANSWER' as const, detail: 'no reply' },
    ];
    expect(renderResults(results).split('\n')).toEqual([
      'DEVICE  STATUS     TASK  DURATION  REPORT / ERROR',
      '------  ---------  ----  --------  --------------------',
      'reg1    FINISHED   3     1.5s      X REPORT',
      'reg2    FAILURE    -     20ms      paper jam',
      'reg3    OFFLINE    -     -         not online when sent',
      'reg4    NO_ANSWER  -     -         no reply',
    ]);
    expect(renderSummary(summarize(results))).toBe('4 devices: 1 finished, 1 failed, 1 offline, 1 no answer');
  });

  it('renders the device view', () => {
    const entry: DeviceEntry = {
      deviceId: 'reg1',
      online: true,
      bootId: 'b',
      groups: ['all', 'front'],
      lastSeen: T0.toISOString(),
    };
    const latest = {
      ...status({ id: 7, seq: 3, status: 'FAILURE', error: 'boom' }),
      phase: 'failed' as const,
      receivedAt: '',
      previousBoot: false,
    };
    expect(renderDevices([{ entry, queue: { queued: 2, running: 1 }, latest }], T0).split('\n')[2]).toBe(
      'reg1    yes     all,front  1 running, 2 queued  #7 FAILURE: boom  10:00:00',
    );
  });

  it('SEEN is when the device last reported by its own clock, not when the watcher received it', () => {
    // The watcher received everything now (retained messages arrive at once on subscribe)...
    const now = new Date('2026-01-01T12:00:00.000Z');
    const entry: DeviceEntry = {
      deviceId: 'reg1',
      online: true,
      bootId: 'b1',
      groups: [],
      startedAt: '2026-01-01T08:00:00.000Z',
      lastSeen: now.toISOString(),
    };
    const latest = {
      ...status({ id: 7, seq: 3, status: 'FINISHED', report: 'ok' }),
      queuedAt: '2026-01-01T09:15:00.000Z',
      startedAt: '2026-01-01T09:15:01.000Z',
      finishedAt: '2026-01-01T09:15:02.000Z',
      phase: 'finished' as const,
      receivedAt: now.toISOString(),
      previousBoot: false,
    };
    const seen = (row: DeviceRow): string => renderDevices([row], now).split('\n')[2]!.split(/\s+/).at(-1)!;
    // ...but the device finished its last task at 09:15:02, and started at 08:00:00.
    expect(seen({ entry, queue: { queued: 0, running: 0 }, latest })).toBe('09:15:02');
    expect(reportedAt(entry, latest)).toBe('2026-01-01T09:15:02.000Z');
    expect(seen({ entry, queue: { queued: 0, running: 0 } })).toBe('08:00:00');
    // A task from a previous boot is older than this boot's start.
    expect(
      seen({
        entry: { ...entry, startedAt: '2026-01-01T11:00:00.000Z' },
        queue: { queued: 0, running: 0 },
        latest,
      }),
    ).toBe('11:00:00');
    // Another day: the date.
    expect(
      seen({ entry: { ...entry, startedAt: '2025-12-31T23:00:00.000Z' }, queue: { queued: 0, running: 0 } }),
    ).toBe('2025-12-31');
    // An offline device first seen through its last will: nothing reported yet.
    expect(
      seen({
        entry: { deviceId: 'reg9', online: false, bootId: 'b', groups: [], lastSeen: now.toISOString() },
        queue: { queued: 0, running: 0 },
      }),
    ).toBe('-');
    expect(renderDevices([])).toBe('(no devices known yet)');
  });
});
