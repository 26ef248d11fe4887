/**
 * The MQTT cancel of docs/api.md, against every broker of the contract suite (store
 * broker, store brokers over Redis, mosquitto, nats-server): the device and group cancel topics,
 * their payload rules and replies, the cancel-before-script rule, and the mirrored FAILURE.
 */
import { describe, expect, it } from 'vitest';
import { type StatusMessage, statusMessageSchema, topics } from '../../bridge/contract/topics.ts';
import { topicMatches } from '../../broker/access-rules.ts';
import { startTestDevice, type TestDevice, uniqueId } from '../support/bridge-device.ts';
import { type BrokerFixture, brokers, type RunningBroker } from '../support/brokers.ts';
import { type Received, TestClient } from '../support/mqtt.ts';
import { brokerPerSuite } from '../support/suite-hooks.ts';

const strictStatus = statusMessageSchema.strict();
const json = (m: Received) => m.json as Record<string, unknown>;

describe.each(brokers)('MQTT cancel on $name', (fixture: BrokerFixture) => {
  const ns = 'test/store-043';
  let broker: RunningBroker;
  const cleanups = brokerPerSuite(fixture, ns, (started) => {
    broker = started;
  });

  async function controller(filters: string[]): Promise<TestClient> {
    const client = await TestClient.connect(broker.controllerUrl, filters, broker.controllerCreds);
    cleanups.push(() => client.close());
    return client;
  }
  async function device(deviceId: string, groups: string[] = []): Promise<TestDevice> {
    const started = await startTestDevice(broker, { ns, deviceId, groups });
    cleanups.push(() => started.stop());
    return started;
  }
  /** Contract 3.1: answers come on the device's own reply topic; only a requestId gets one. */
  const replyTopic = (deviceId: string) => `${ns}/devices/${deviceId}/replies/+`;
  const isReply = (m: Received, filter: string) => topicMatches(filter, m.topic);
  const send = (client: TestClient, topic: string, body: unknown) =>
    client.publish(topic, JSON.stringify(body));
  const ended = (deviceId: string, id: number) => (m: Received) =>
    m.topic === topics.taskStatus(ns, deviceId, id) && json(m)?.status === 'FAILURE';
  /** Queues a script over MQTT and resolves to its task id (from the reply). */
  async function queueScript(live: TestClient, deviceId: string, requestId: string, reply: string) {
    await send(live, topics.deviceScripts(ns, deviceId), {
      script: 'PRINT never',
      requestId,
    });
    const answer = await live.waitFor((m) => isReply(m, reply) && json(m).requestId === requestId, requestId);
    expect(json(answer)).toMatchObject({ requestId, status: 'RUNNING' });
    return json(answer).id as number;
  }

  it('cancels a queued task by id and by requestId; the FAILURE is mirrored; a running or ended task is not', async () => {
    const deviceId = uniqueId('cancel');
    const reply = replyTopic(deviceId);
    const live = await controller([topics.deviceTaskStatuses(ns, deviceId), reply]);
    const d = await device(deviceId);
    const { id: running } = await d.submit('SLEEP 30000');
    const byId = await queueScript(live, deviceId, 'q-1', reply);
    const byRequest = await queueScript(live, deviceId, 'q-2', reply);
    const cancelTopic = topics.deviceCancel(ns, deviceId);
    const answer = (n: number) => live.waitForCount((m) => isReply(m, reply), n, `reply ${n}`);

    // By id alone: no requestId, so no answer (contract 3.1); the mirrored FAILURE tells.
    await send(live, cancelTopic, { id: byId });
    await live.waitFor(ended(deviceId, byId), 'cancelled by id');
    await send(live, cancelTopic, { requestId: 'q-2' });
    expect(json((await answer(3))[2]!)).toEqual({
      deviceId,
      requestId: 'q-2',
      id: byRequest,
      status: 'FAILURE',
    });

    const mirrored: StatusMessage = strictStatus.parse(
      (await live.waitFor(ended(deviceId, byId), 'mirrored')).json,
    );
    expect(mirrored).toMatchObject({ id: byId, status: 'FAILURE', requestId: 'q-1' });
    expect(mirrored.error).toBe(`CANCELLED: cancelled over MQTT (${cancelTopic}) before it started`);
    expect(mirrored.startedAt).toBeUndefined();
    const second = strictStatus.parse((await live.waitFor(ended(deviceId, byRequest), 'mirrored 2')).json);
    expect(second.error).toMatch(/^CANCELLED: /);
    expect(await d.task(byId)).toMatchObject({ status: 'FAILURE', error: mirrored.error });

    await send(live, cancelTopic, { id: running });
    await send(live, cancelTopic, { requestId: 'q-1' });
    expect(json((await answer(4))[3]!)).toEqual({
      deviceId,
      requestId: 'q-1',
      error: `TASK_ENDED: Task ${byId} has already ended (FAILURE)`,
    });
    await send(live, cancelTopic, { id: 12345 });
    await send(live, cancelTopic, { requestId: 'sync-1' });
    expect(json((await answer(5))[4]!)).toMatchObject({ requestId: 'sync-1' });
    // One topic keeps its order ([MQTT-4.6.0-6]): the cancels by id were handled, unanswered.
    expect(live.messages.filter((m) => isReply(m, reply))).toHaveLength(5);
    expect(d.device.queue.get(running)?.state).toBe('running');
  });

  it('a cancel that overtakes its script wins: on a group topic, for every member', async () => {
    const [a, b] = [uniqueId('early-a'), uniqueId('early-b')];
    const group = uniqueId('g');
    const reply = replyTopic('+');
    const live = await controller([reply]);
    const devices = [await device(a, [group]), await device(b, [group])];
    await send(live, topics.groupCancel(ns, group), { requestId: 'job-7' });
    const remembered = (await live.waitForCount((m) => isReply(m, reply), 2, 'two answers')).map(json);
    expect(remembered.map((r) => r.deviceId).sort()).toEqual([a, b].sort());
    for (const answer of remembered) {
      expect(answer).toEqual({
        deviceId: answer.deviceId,
        requestId: 'job-7',
        error:
          'TASK_DOES_NOT_EXIST: no task has requestId job-7 yet; the cancel is remembered, so a script arriving with it will not run',
      });
    }
    await send(live, topics.groupScripts(ns, group), {
      script: 'PRINT late',
      requestId: 'job-7',
    });
    const refused = (await live.waitForCount((m) => isReply(m, reply), 4, 'two refusals')).slice(2).map(json);
    for (const answer of refused) {
      expect(answer).toEqual({
        deviceId: answer.deviceId,
        requestId: 'job-7',
        error: 'CANCELLED: requestId job-7 was cancelled before its script arrived; nothing runs',
      });
    }
    expect(refused.map((r) => r.deviceId).sort()).toEqual([a, b].sort());
    for (const d of devices) expect(d.device.queue.list()).toEqual([]);
  });

  it('a group cancel by requestId cancels the queued task on each member', async () => {
    const [a, b] = [uniqueId('grp-a'), uniqueId('grp-b')];
    const group = uniqueId('g');
    const reply = replyTopic('+');
    const live = await controller([reply, topics.allTaskStatuses(ns)]);
    const devices = [await device(a, [group]), await device(b, [group])];
    for (const d of devices) await d.submit('SLEEP 30000');
    await send(live, topics.groupScripts(ns, group), {
      script: 'PRINT never',
      requestId: 'job-8',
    });
    const queued = (await live.waitForCount((m) => isReply(m, reply), 2, 'two queued')).map(json);
    await send(live, topics.groupCancel(ns, group), { requestId: 'job-8' });
    const cancelled = (await live.waitForCount((m) => isReply(m, reply), 4, 'two cancelled'))
      .slice(2)
      .map(json);
    for (const answer of cancelled) {
      const first = queued.find((q) => q.deviceId === answer.deviceId)!;
      expect(answer).toEqual({
        deviceId: answer.deviceId,
        requestId: 'job-8',
        id: first.id,
        status: 'FAILURE',
      });
    }
    for (const d of devices) {
      const id = queued.find((q) => q.deviceId === d.deviceId)!.id as number;
      await live.waitFor(ended(d.deviceId, id), `${d.deviceId} mirrored`);
      expect(d.device.queue.get(id)).toMatchObject({
        state: 'failed',
        error: expect.stringMatching(/^CANCELLED/),
      });
    }
  });

  // Like a retained script, a retained cancel is one from the past: the store broker drops it
  // itself; elsewhere the device refuses it when the broker hands it over as retained.
  it('a retained cancel cancels nothing and is not remembered', async () => {
    const deviceId = uniqueId('retcancel');
    const reply = replyTopic(deviceId);
    const live = await controller([reply, topics.deviceTaskStatuses(ns, deviceId)]);
    const cancelTopic = topics.deviceCancel(ns, deviceId);
    await live.publish(cancelTopic, JSON.stringify({ requestId: 'ret-1' }), { retain: true });
    cleanups.push(() => live.publish(cancelTopic, '', { retain: true }));
    const d = await device(deviceId);
    if (!fixture.refusesRetainedScripts) {
      const refusal = json(await live.waitFor((m) => isReply(m, reply), 'refusal'));
      expect(refusal).toEqual({
        requestId: 'ret-1',
        deviceId,
        error:
          'RETAINED_SUBMISSION: retained cancels are refused (the broker stored it earlier); publish cancels with retain=false',
      });
    }
    // Not remembered: a script with that requestId runs.
    await send(live, topics.deviceScripts(ns, deviceId), {
      script: 'PRINT runs',
      requestId: 'ret-1',
    });
    const accepted = json(
      await live.waitFor((m) => isReply(m, reply) && json(m).id !== undefined, 'accepted'),
    );
    const done = await live.waitFor(
      (m) =>
        m.topic === topics.taskStatus(ns, deviceId, accepted.id as number) && json(m)?.status === 'FINISHED',
      'finished',
    );
    expect(json(done)).toMatchObject({ requestId: 'ret-1', report: 'runs' });
    expect(live.messages.filter((m) => isReply(m, reply) && json(m).error !== undefined)).toHaveLength(
      fixture.refusesRetainedScripts ? 0 : 1,
    );
    expect(d.device.queue.list()).toHaveLength(1);
  });

  it('refuses cancels that break the payload rules, cancelling nothing', async () => {
    const deviceId = uniqueId('badcancel');
    const group = uniqueId('g');
    const reply = replyTopic(deviceId);
    const live = await controller([reply]);
    const d = await device(deviceId, [group]);
    await d.submit('SLEEP 30000');
    const id = await queueScript(live, deviceId, 'keep-1', reply);
    const deviceTopic = topics.deviceCancel(ns, deviceId);
    await send(live, deviceTopic, { id, requestId: 'keep-1' });
    await send(live, deviceTopic, { requestId: 'both-missing-id-is-fine' });
    await send(live, deviceTopic, {});
    await send(live, topics.groupCancel(ns, group), { id, requestId: 'keep-1' });
    await send(live, deviceTopic, { id: -1 });
    await send(live, deviceTopic, { requestId: 'sync-1' });
    const all = (await live.waitForCount((m) => isReply(m, reply), 5, 'five answers')).slice(1).map(json);
    // The group cancel went to another topic, and brokers keep order per topic only
    // ([MQTT-4.6.0-6]): its answer may come anywhere among the others.
    const groupError =
      'INVALID_REQUEST: invalid payload: id: a group cancel names a requestId, not a task id';
    expect(all.filter((a) => a.error === groupError)).toEqual([
      { requestId: 'keep-1', deviceId, error: groupError },
    ]);
    const answers = all.filter((a) => a.error !== groupError);
    expect(answers[0]).toEqual({
      requestId: 'keep-1',
      deviceId,
      error: 'INVALID_REQUEST: invalid payload: exactly one of id and requestId',
    });
    // Only a requestId: valid, and unseen, so remembered.
    expect(answers[1]).toMatchObject({
      requestId: 'both-missing-id-is-fine',
      error: expect.stringMatching(/^TASK_DOES_NOT_EXIST/),
    });
    // `{}` and `{id: -1}` carry no requestId: refused without an answer (contract 3.1).
    expect(answers[2]).toMatchObject({ requestId: 'sync-1' });
    expect(answers).toHaveLength(3);
    expect(d.device.queue.get(id)?.state).toBe('queued');
  });
});
