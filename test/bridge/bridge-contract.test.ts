import { describe, expect, it } from 'vitest';
import { type StatusMessage, statusMessageSchema, topics } from '../../bridge/contract/topics.ts';
import { topicMatches } from '../../broker/access-rules.ts';
import { VERSION } from '../../src/version.ts';
import { skipSuite } from '../support/binaries.ts';
import { startTestDevice, type TestDevice, uniqueId } from '../support/bridge-device.ts';
import { type BrokerFixture, brokers, type RunningBroker } from '../support/brokers.ts';
import { type Received, TestClient } from '../support/mqtt.ts';
import { brokerPerSuite } from '../support/suite-hooks.ts';

const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
const strictStatus = statusMessageSchema.strict();
const json = (m: Received) => m.json as Record<string, unknown>;

describe.each(brokers)('MQTT contract on $name', (fixture: BrokerFixture) => {
  if (skipSuite(fixture.binaries, `MQTT contract on ${fixture.name}`)) return;
  const ns = 'test/store-042';
  let broker: RunningBroker;
  const cleanups = brokerPerSuite(fixture, ns, (started) => {
    broker = started;
  });

  async function controller(filters: string[], protocolVersion: 4 | 5 = 4): Promise<TestClient> {
    const client = await TestClient.connect(broker.controllerUrl, filters, {
      ...broker.controllerCreds,
      protocolVersion,
    });
    cleanups.push(() => client.close());
    return client;
  }
  async function device(
    options: Omit<Parameters<typeof startTestDevice>[1], 'ns'> = {},
  ): Promise<TestDevice> {
    const started = await startTestDevice(broker, { ns, ...options });
    cleanups.push(() => started.stop());
    return started;
  }
  const statusesOf = (client: TestClient, deviceId: string, id: number): StatusMessage[] =>
    client.messages
      .filter((m) => m.topic === topics.taskStatus(ns, deviceId, id) && m.payload.length > 0)
      .map((m) => strictStatus.parse(m.json));
  const ended = (deviceId: string, id?: number) => (m: Received) =>
    m.topic.startsWith(`${ns}/devices/${deviceId}/tasks/`) &&
    (id === undefined || json(m)?.id === id) &&
    (json(m)?.status === 'FINISHED' || json(m)?.status === 'FAILURE');
  /** Contract 3.1: a device answers on its own reply topic, `<ns>/devices/<id>/replies/<requestId>`. */
  const replyTopic = (deviceId: string) => `${ns}/devices/${deviceId}/replies/+`;
  const isReply = (m: Received, filter: string) => topicMatches(filter, m.topic);
  const publishScript = (client: TestClient, deviceId: string, body: unknown) =>
    client.publish(topics.deviceScripts(ns, deviceId), JSON.stringify(body));

  it('publishes a retained online state with exact fields, and the offline state on stop', async () => {
    const deviceId = uniqueId('state');
    const live = await controller([topics.state(ns, deviceId)]);
    const d = await device({ deviceId, groups: ['front', 'north'] });
    const bootId = d.device.bridge!.bootId;
    const expected = {
      online: true,
      deviceId,
      bootId,
      installation: 'cash-register',
      version: VERSION,
      startedAt: expect.stringMatching(ISO),
      groups: ['all', 'front', 'north'],
    };
    expect(json(await live.waitFor((m) => json(m)?.online === true, 'online state'))).toEqual(expected);
    const fresh = await controller([topics.state(ns, deviceId)]);
    const retained = await fresh.waitFor((m) => m.retain, 'retained state');
    expect(json(retained)).toEqual(expected);
    const health = d.device.bridge!.health();
    expect(health).toMatchObject({ state: 'connected', url: broker.url });
    expect(JSON.stringify(health)).not.toContain('pw-');

    await d.stop();
    const offline = await live.waitFor((m) => json(m)?.online === false, 'offline state');
    expect(json(offline)).toEqual({ online: false, deviceId, bootId });
    const after = await controller([topics.state(ns, deviceId)]);
    expect(json(await after.waitFor((m) => m.retain, 'retained offline state'))).toEqual({
      online: false,
      deviceId,
      bootId,
    });
  });

  it('mirrors a REST task: queued, started, finished, with REST ids, one bootId and growing seq', async () => {
    const deviceId = uniqueId('rest');
    const live = await controller([topics.deviceTaskStatuses(ns, deviceId)]);
    const d = await device({ deviceId });
    const { id } = await d.submit('PRINT hello\nSLEEP 20\nPRINT bye');
    await live.waitFor(ended(deviceId, id), 'finished status');
    const messages = statusesOf(live, deviceId, id);
    expect(messages.map((m) => m.status)).toEqual(['RUNNING', 'RUNNING', 'FINISHED']);
    const [queued, started, finished] = messages as [StatusMessage, StatusMessage, StatusMessage];
    expect(queued.startedAt).toBeUndefined();
    expect(started.startedAt).toMatch(ISO);
    expect(finished).toMatchObject({ report: 'hello\nbye', deviceId, bootId: d.device.bridge!.bootId });
    for (const m of messages) expect(m.bootId).toBe(d.device.bridge!.bootId);
    expect(started.seq).toBeGreaterThan(queued.seq);
    expect(finished.seq).toBeGreaterThan(started.seq);
    const { deviceId: _d, bootId: _b, seq: _s, ...body } = finished;
    expect(await d.task(id)).toEqual(body);

    const fresh = await controller([topics.taskStatus(ns, deviceId, id)]);
    const retained = await fresh.waitFor((m) => m.retain, 'retained status');
    expect(strictStatus.parse(retained.json)).toEqual(finished);
  });

  it('runs a script from the device topic and answers on its own reply topic', async () => {
    const deviceId = uniqueId('intake');
    const reply = replyTopic(deviceId);
    const live = await controller([topics.deviceTaskStatuses(ns, deviceId), reply]);
    const d = await device({ deviceId });
    await publishScript(live, deviceId, { script: 'PRINT via mqtt', requestId: 'req-1' });
    const answer = json(await live.waitFor((m) => isReply(m, reply), 'reply'));
    expect(answer).toEqual({ requestId: 'req-1', deviceId, id: expect.any(Number), status: 'RUNNING' });
    const id = answer.id as number;
    const finished = strictStatus.parse((await live.waitFor(ended(deviceId, id), 'finished')).json);
    expect(finished).toMatchObject({ id, requestId: 'req-1', status: 'FINISHED', report: 'via mqtt' });
    expect(await d.task(id)).toMatchObject({ id, status: 'FINISHED', report: 'via mqtt' });
  });

  it('fans a group script out to every member: group all and a custom group', async () => {
    const [a, b, c] = [uniqueId('fan-a'), uniqueId('fan-b'), uniqueId('fan-c')];
    const live = await controller([topics.allTaskStatuses(ns)]);
    const devices = await Promise.all([
      device({ deviceId: a, groups: ['north'] }),
      device({ deviceId: b, groups: ['north'] }),
      device({ deviceId: c }),
    ]);
    const withRequest = (requestId: string) => (m: Received) =>
      json(m)?.requestId === requestId && ended(json(m)?.deviceId as string)(m);
    await live.publish(
      topics.groupScripts(ns, 'all'),
      JSON.stringify({ script: 'PRINT everyone', requestId: 'all-1' }),
    );
    const all = await live.waitForCount(withRequest('all-1'), 3, 'all-1 on 3 devices');
    expect(new Set(all.map((m) => json(m).deviceId))).toEqual(new Set([a, b, c]));

    await live.publish(
      topics.groupScripts(ns, 'north'),
      JSON.stringify({ script: 'PRINT north', requestId: 'north-1' }),
    );
    const north = await live.waitForCount(withRequest('north-1'), 2, 'north-1 on 2 devices');
    expect(new Set(north.map((m) => json(m).deviceId))).toEqual(new Set([a, b]));
    // c is not in north: after a later script to c itself has ended, c holds no north task.
    await publishScript(live, c, { script: 'PRINT c only', requestId: 'c-after' });
    await live.waitFor(withRequest('c-after'), 'c-after');
    const cTasks = devices[2]!.device.queue.list().map((t) => t.requestId);
    expect(cTasks.sort()).toEqual(['all-1', 'c-after']);
  });

  it('executes a redelivered requestId once, republishes its status and replies twice with the same id', async () => {
    const deviceId = uniqueId('dup');
    const reply = replyTopic(deviceId);
    const live = await controller([topics.deviceTaskStatuses(ns, deviceId), reply]);
    const d = await device({ deviceId });
    let starts = 0;
    d.device.queue.on('started', () => {
      starts += 1;
    });
    const body = { script: 'PRINT once\nSLEEP 20', requestId: 'dup-1' };
    await publishScript(live, deviceId, body);
    await publishScript(live, deviceId, body);
    const replies = await live.waitForCount((m) => isReply(m, reply), 2, 'two replies');
    const id = json(replies[0]!).id as number;
    expect(replies.map((m) => json(m).id)).toEqual([id, id]);
    await live.waitFor(ended(deviceId, id), 'finished');
    // queued, started, finished + the republish for the repeat.
    await live.waitForCount(
      (m) => m.topic === topics.taskStatus(ns, deviceId, id),
      4,
      'four status messages',
    );
    const seqs = statusesOf(live, deviceId, id).map((m) => m.seq);
    expect([...seqs].sort((x, y) => x - y)).toEqual(seqs);
    expect(starts).toBe(1);
    expect(d.device.queue.list().filter((t) => t.requestId === 'dup-1')).toHaveLength(1);
  });

  it('ends a script whose notAfter has passed as FAILURE with EXPIRED, without running it', async () => {
    const deviceId = uniqueId('expired');
    const reply = replyTopic(deviceId);
    const live = await controller([topics.deviceTaskStatuses(ns, deviceId), reply]);
    const d = await device({ deviceId });
    let starts = 0;
    d.device.queue.on('started', () => {
      starts += 1;
    });
    await publishScript(live, deviceId, {
      script: 'PRINT stale',
      requestId: 'old-1',
      notAfter: Date.now() - 60_000,
    });
    const answer = json(await live.waitFor((m) => isReply(m, reply), 'reply'));
    expect(answer).toEqual({ requestId: 'old-1', deviceId, id: expect.any(Number), status: 'FAILURE' });
    const failed = strictStatus.parse(
      (await live.waitFor(ended(deviceId, answer.id as number), 'failure')).json,
    );
    expect(failed.status).toBe('FAILURE');
    expect(failed.error).toMatch(/^EXPIRED/);
    expect(failed.startedAt).toBeUndefined();
    expect(starts).toBe(0);
  });

  it('refuses invalid payloads and over-long scripts on its reply topic, creating no task', async () => {
    const deviceId = uniqueId('invalid');
    const reply = replyTopic(deviceId);
    const live = await controller([topics.deviceTaskStatuses(ns, deviceId), reply]);
    const d = await device({ deviceId, maxScriptBytes: 16 });
    await live.publish(topics.deviceScripts(ns, deviceId), 'not json at all');
    await publishScript(live, deviceId, { script: '', requestId: 'bad-1' });
    await publishScript(live, deviceId, {
      script: 'PRINT 0123456789abcdef',
      requestId: 'big-1',
    });
    await publishScript(live, deviceId, { script: 42 }); // no requestId: no reply (contract 3.1)
    await publishScript(live, deviceId, { script: 42, requestId: 'num-1' });
    const refusals = (await live.waitForCount((m) => isReply(m, reply), 3, 'three refusals')).map(json);
    expect(refusals[0]).toEqual({
      requestId: 'bad-1',
      deviceId,
      error: expect.stringMatching(/^INVALID_REQUEST/),
    });
    expect(refusals[1]).toEqual({
      requestId: 'big-1',
      deviceId,
      error: expect.stringMatching(/^SCRIPT_TOO_LARGE/),
    });
    expect(refusals[2]).toEqual({
      requestId: 'num-1',
      deviceId,
      error: expect.stringMatching(/^INVALID_REQUEST: .*script/),
    });
    expect(d.device.queue.list()).toHaveLength(0);
    // Still serving: a valid script after all that runs.
    await publishScript(live, deviceId, { script: 'PRINT ok', requestId: 'ok-1' });
    const ok = await live.waitFor((m) => isReply(m, reply) && json(m).id !== undefined, 'accepted');
    await live.waitFor(ended(deviceId, json(ok).id as number), 'finished');
    expect(ok.topic).toBe(`${ns}/devices/${deviceId}/replies/ok-1`);
    expect(live.messages.filter((m) => isReply(m, reply))).toHaveLength(4);
    expect(live.messages.filter((m) => m.topic.includes('/tasks/'))).toHaveLength(3);
  });

  it('agrees with REST on what a valid script is: blank scripts and invalid UTF-8 are refused', async () => {
    const deviceId = uniqueId('valid');
    const reply = replyTopic(deviceId);
    const live = await controller([topics.deviceTaskStatuses(ns, deviceId), reply]);
    const d = await device({ deviceId });
    await publishScript(live, deviceId, { script: ' \r\n\t', requestId: 'blank-1' });
    // "PRINT café" with the é as the Latin-1 byte 0xE9: not UTF-8, must not run as "caf\uFFFD".
    await live.publish(
      topics.deviceScripts(ns, deviceId),
      Buffer.from(JSON.stringify({ script: 'PRINT café', requestId: 'latin-1' }), 'latin1'),
    );
    const refusals = (await live.waitForCount((m) => isReply(m, reply), 2, 'two refusals')).map(json);
    expect(refusals).toEqual([
      { requestId: 'blank-1', deviceId, error: 'INVALID_REQUEST: the script must not be empty' },
      { requestId: 'latin-1', deviceId, error: 'INVALID_REQUEST: the payload is not valid UTF-8' },
    ]);
    expect(d.device.queue.list()).toHaveLength(0);
    // The same script as UTF-8 runs; its requestId was not burnt by the refusal.
    await publishScript(live, deviceId, { script: 'PRINT café', requestId: 'latin-1' });
    const ok = json(await live.waitFor((m) => isReply(m, reply) && json(m).id !== undefined, 'accepted'));
    const done = strictStatus.parse((await live.waitFor(ended(deviceId, ok.id as number), 'finished')).json);
    expect(done).toMatchObject({ status: 'FINISHED', report: 'café', requestId: 'latin-1' });
  });

  // Contract 3.1: replyTo (v1.1) is ignored; every answer goes to the device's own reply topic.
  it('ignores replyTo, wherever it points: every answer on its own reply topic, nothing elsewhere', async () => {
    const deviceId = uniqueId('replyto');
    const reply = replyTopic(deviceId);
    const live = await controller([`${ns}/devices/${deviceId}/#`, `${ns}/groups/#`, `${ns}/replies/#`]);
    const d = await device({ deviceId });
    await live.waitFor((m) => m.topic === topics.state(ns, deviceId) && json(m)?.online === true, 'online');
    const elsewhere = [
      topics.state(ns, deviceId),
      `${ns}/devices/${deviceId}/tasks/1/status`,
      topics.deviceScripts(ns, 'other-device'),
      topics.groupScripts(ns, 'all'),
      `${ns}/replies/ctl/r`,
      'elsewhere/replies',
    ];
    for (const [i, replyTo] of elsewhere.entries()) {
      await publishScript(live, deviceId, { script: 'PRINT h', requestId: `h-${i}`, replyTo });
    }
    const answers = await live.waitForCount((m) => isReply(m, reply), elsewhere.length, 'every answer');
    expect(answers.map((m) => m.topic)).toEqual(
      elsewhere.map((_, i) => `${ns}/devices/${deviceId}/replies/h-${i}`),
    );
    expect(answers.map((m) => json(m).deviceId)).toEqual(elsewhere.map(() => deviceId));
    expect(d.device.queue.list()).toHaveLength(elsewhere.length);
    const misplaced = live.messages.filter(
      (m) =>
        !isReply(m, reply) && m.topic !== topics.deviceScripts(ns, deviceId) && json(m)?.error !== undefined,
    );
    expect(misplaced).toEqual([]);
    expect(
      live.messages.filter(
        (m) => m.topic.startsWith(`${ns}/replies/`) || m.topic.startsWith(`${ns}/groups/`),
      ),
    ).toEqual([]);
    for (const m of live.messages.filter((m) => m.topic === topics.state(ns, deviceId))) {
      expect(json(m).online).toBe(true);
    }
  });

  // docs/mqtt.md: a retained submission creates no task. The store broker refuses it
  // itself (its ACL); on other brokers the device sees the retain flag and refuses it on its reply topic.
  it('creates no task for a retained submission', async () => {
    const deviceId = uniqueId('retained');
    const reply = replyTopic(deviceId);
    const live = await controller([reply]);
    const scripts = topics.deviceScripts(ns, deviceId);
    if (!fixture.refusesRetainedScripts) {
      await live.publish(scripts, JSON.stringify({ script: 'PRINT stale', requestId: 'ret-1' }), {
        retain: true,
      });
      cleanups.push(() => live.publish(scripts, '', { retain: true }));
      const d = await device({ deviceId });
      const refusal = json(await live.waitFor((m) => isReply(m, reply), 'refusal'));
      expect(refusal).toEqual({
        requestId: 'ret-1',
        deviceId,
        error: expect.stringMatching(/^RETAINED_SUBMISSION/),
      });
      expect(d.device.queue.list()).toHaveLength(0);
      return;
    }
    const d = await device({ deviceId });
    // Live (the device is subscribed) and stored: both refused by the broker's ACL.
    await live.publish(scripts, JSON.stringify({ script: 'PRINT stale', requestId: 'ret-1' }), {
      retain: true,
    });
    await live.publish(scripts, JSON.stringify({ script: 'PRINT fresh', requestId: 'ret-2' }));
    const accepted = json(await live.waitFor((m) => isReply(m, reply), 'reply to the normal submission'));
    expect(accepted).toMatchObject({ requestId: 'ret-2', deviceId, status: 'RUNNING' });
    expect(d.device.queue.list().map((t) => t.requestId)).toEqual(['ret-2']);
    const barrierTopic = `${ns}/replies/${uniqueId('barrier')}`;
    const fresh = await controller([scripts, barrierTopic]);
    await fresh.barrier(barrierTopic);
    expect(fresh.messages.filter((m) => m.topic === scripts)).toEqual([]);
  });

  it('clears the status topic of an evicted task (retain 2: three tasks leave two)', async () => {
    const deviceId = uniqueId('evict');
    const live = await controller([topics.deviceTaskStatuses(ns, deviceId)]);
    const d = await device({ deviceId, retain: 2 });
    const ids: number[] = [];
    for (const n of [1, 2, 3]) {
      const { id } = await d.submit(`PRINT ${n}`);
      ids.push(id);
      await live.waitFor(ended(deviceId, id), `task ${n} ended`);
    }
    const first = topics.taskStatus(ns, deviceId, ids[0]!);
    await live.waitFor((m) => m.topic === first && m.payload.length === 0, 'clear of the first task');
    const barrierTopic = `${ns}/replies/${uniqueId('barrier')}`;
    const fresh = await controller([topics.deviceTaskStatuses(ns, deviceId), barrierTopic]);
    await fresh.waitForCount((m) => m.retain, 2, 'two retained statuses');
    await fresh.barrier(barrierTopic);
    const retained = fresh.messages.filter((m) => m.retain).map((m) => strictStatus.parse(m.json));
    expect(retained.map((m) => m.id).sort((x, y) => x - y)).toEqual(ids.slice(1));
  });

  it('publishes the last will when the connection dies, then comes back online', async () => {
    const deviceId = uniqueId('will');
    const live = await controller([topics.state(ns, deviceId)]);
    const d = await device({ deviceId });
    const bootId = d.device.bridge!.bootId;
    await live.waitFor((m) => json(m)?.online === true, 'online');
    d.device.bridge!.simulateConnectionLoss();
    const will = await live.waitFor((m) => json(m)?.online === false, 'last will');
    expect(json(will)).toEqual({ online: false, deviceId, bootId });
    const index = live.messages.indexOf(will);
    await live.waitFor((m) => json(m)?.online === true && live.messages.indexOf(m) > index, 'online again');
  });

  it('clears status topics left by an earlier boot', async () => {
    const deviceId = uniqueId('reboot');
    const live = await controller([topics.deviceTaskStatuses(ns, deviceId)]);
    const first = await device({ deviceId });
    const { id } = await first.submit('PRINT earlier boot');
    await live.waitFor(ended(deviceId, id), 'finished in the first boot');
    await first.stop();
    await device({ deviceId });
    await live.waitFor(
      (m) => m.topic === topics.taskStatus(ns, deviceId, id) && m.payload.length === 0,
      'clear',
    );
  });
});
