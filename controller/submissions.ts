/**
 * The store controller's submissions in flight (controller/store-controller.ts): each one's fan-out, its
 * deadline and recheck timers, the publishes of the script, and the results as they become known
 * (reported through the caller's callbacks and the controller's `result` event).
 */
import type { MqttClient } from 'mqtt';
import { type Reply, type ScriptSubmission, topics } from '../bridge/contract/topics.ts';
import type { Logger } from '../src/logger.ts';
import type { DeviceDirectory } from './directory.ts';
import { DueTimers } from './due-timers.ts';
import type { Fanout } from './fanout.ts';
import type { RetainedRecheck } from './recheck.ts';
import { topicPartsOf } from './store-keys.ts';
import type { TargetPlan } from './targets.ts';
import type { FanoutResult, SubmitOptions } from './types.ts';

/** Default lead of the retained-status recheck before a deadline (controller/recheck.ts). */
const RECHECK_LEAD_MS = 2000;

interface Active {
  fanout: Fanout;
  /** Epoch ms of the deadline, and of the recheck before it (undefined: none). */
  due: number;
  recheckDue: number | undefined;
  /** Status filters subscribed afresh for this submission's missing devices. */
  rechecked: string[];
  /** The submission as published: sent again, unchanged, after a reconnect (resendOpen). */
  payload: string;
  onResult: SubmitOptions['onResult'];
  resolve: (results: FanoutResult[]) => void;
}

export interface SubmissionsOptions {
  ns: string;
  logger: Logger;
  directory: DeviceDirectory;
  recheck: RetainedRecheck;
  /** The controller's client; undefined once stopped (nothing is unsubscribed then). */
  client: () => MqttClient | undefined;
  /** Every result of every submission, as it becomes known (the controller's `result` event). */
  onResult: (requestId: string, result: FanoutResult) => void;
  recheckLeadMs: number | undefined;
}

/**
 * One publish per group topic (per store's group topic with several stores: a wildcard level
 * cannot be published to), or one per register.
 */
function plannedSends(
  ns: string,
  plan: TargetPlan,
  sentTo: readonly string[],
): { topic: string; deviceIds: string[] }[] {
  if (plan.group === undefined) {
    return sentTo.map((id) => {
      const parts = topicPartsOf(ns, id);
      return { topic: topics.deviceScripts(parts.ns, parts.deviceId), deviceIds: [id] };
    });
  }
  const byNs = new Map<string, string[]>();
  for (const id of sentTo) {
    const storeNs = topicPartsOf(ns, id).ns;
    const list = byNs.get(storeNs);
    if (list) list.push(id);
    else byNs.set(storeNs, [id]);
  }
  const group = plan.group;
  return [...byNs].map(([storeNs, deviceIds]) => ({ topic: topics.groupScripts(storeNs, group), deviceIds }));
}

export class Submissions {
  private readonly options: SubmissionsOptions;
  private readonly active = new Map<string, Active>();
  /**
   * The submissions each device was sent in: a state or status concerns only those. (A job sends
   * one submission per register; scanning every submission per message was quadratic.)
   */
  private readonly byDevice = new Map<string, Set<Active>>();
  private readonly deadlines = new DueTimers<Active>((active) => {
    for (const result of active.fanout.expire()) this.report(active, result);
  });
  private readonly rechecks = new DueTimers<Active>((active) => this.recheckMissing(active));

  constructor(options: SubmissionsOptions) {
    this.options = options;
  }

  has(requestId: string): boolean {
    return this.active.has(requestId);
  }

  /**
   * Tracks `fanout` until complete or `options.deadlineMs` passed, and publishes the script once
   * per group of `plan` or once per device; resolves with the results in target order.
   */
  run(
    client: MqttClient,
    fanout: Fanout,
    plan: TargetPlan,
    submission: ScriptSubmission,
    options: SubmitOptions,
  ): Promise<FanoutResult[]> {
    const { ns, logger } = this.options;
    const { requestId } = fanout;
    return new Promise<FanoutResult[]>((resolve) => {
      const due = Math.round(Date.now() + options.deadlineMs);
      // Shortly before the deadline, look at the retained statuses of the devices still missing.
      const lead = Math.min(this.options.recheckLeadMs ?? RECHECK_LEAD_MS, options.deadlineMs / 2);
      const active: Active = {
        fanout,
        due,
        recheckDue: lead > 0 ? Math.round(due - lead) : undefined,
        onResult: options.onResult,
        resolve,
        rechecked: [],
        payload: JSON.stringify(submission),
      };
      this.deadlines.add(active, due);
      if (active.recheckDue !== undefined) this.rechecks.add(active, active.recheckDue);
      this.active.set(requestId, active);
      for (const deviceId of fanout.sentTo) {
        let set = this.byDevice.get(deviceId);
        if (!set) {
          set = new Set();
          this.byDevice.set(deviceId, set);
        }
        set.add(active);
      }
      this.callback(() => options.onSent?.({ requestId, sentTo: fanout.sentTo, offline: plan.offline }));
      for (const result of fanout.initialResults()) this.report(active, result);
      // Nothing targeted (an empty group, no device known): no result will ever come, so end
      // now; report() ends it only on a result.
      if (fanout.complete) {
        this.finish(active);
        return;
      }
      const { payload } = active;
      const sends = plannedSends(ns, plan, fanout.sentTo);
      for (const { topic, deviceIds } of sends) {
        logger.debug({ topic, requestId, devices: deviceIds.length }, 'script sent');
        // The callback form: a job publishes once per register, and a promise each is garbage.
        client.publish(topic, payload, { qos: 1 }, (error) => {
          if (!error) return;
          logger.warn({ topic, requestId, err: error.message }, 'publish failed');
          for (const result of fanout.fail(deviceIds, `publish failed: ${error.message}`, Date.now())) {
            this.report(active, result);
          }
        });
      }
    });
  }

  /**
   * A reply, already bound to the register whose reply topic it came on: taken only by the
   * submission in flight with its requestId, and only when that was sent to the register
   * (contract 3.1). Otherwise it is dropped and the reason returned.
   */
  reply(reply: Reply & { requestId: string }, now: number): 'taken' | 'unknownRequest' | 'notSent' {
    const active = this.active.get(reply.requestId);
    if (!active) return 'unknownRequest';
    if (!active.fanout.wasSentTo(reply.deviceId)) return 'notSent';
    const result = active.fanout.onReply(reply, now);
    if (result) this.report(active, result);
    return 'taken';
  }

  /** Feeds a state or status to every submission the device was sent in (only those can have it pending). */
  feed(apply: (fanout: Fanout) => FanoutResult | undefined, to: { deviceId: string }): void {
    const set = this.byDevice.get(to.deviceId);
    if (!set) return;
    for (const active of [...set]) {
      const result = apply(active.fanout);
      if (result) this.report(active, result);
    }
  }

  /**
   * After a reconnect: the same submission (same requestId) again to each register whose result
   * is open. One that has the task answers again without running it (docs/mqtt.md, idempotency); a
   * clustered hub may have lost retained statuses (docs/topology.md). Returns how many were asked.
   */
  resendOpen(client: MqttClient): number {
    let asked = 0;
    for (const active of this.active.values()) asked += this.askAgain(client, active);
    if (asked > 0)
      this.options.logger.info(
        { registers: asked },
        'reconnected: asked the registers of open results again',
      );
    return asked;
  }

  /** Sends `active`'s submission again, unchanged, to its registers still missing. */
  private askAgain(client: MqttClient, active: Active): number {
    const { ns, logger } = this.options;
    const { requestId } = active.fanout;
    let asked = 0;
    for (const { deviceId, bootId } of active.fanout.pendingTargets()) {
      // Another boot never had the task (tasks live in RAM): the state already ended it FAILURE.
      if (this.options.directory.device(deviceId)?.bootId !== bootId) continue;
      asked += 1;
      const parts = topicPartsOf(ns, deviceId);
      client.publish(topics.deviceScripts(parts.ns, parts.deviceId), active.payload, { qos: 1 }, (error) => {
        // Still open: the next reconnect, the recheck or the deadline decides.
        if (error) logger.warn({ deviceId, requestId, err: error.message }, 'resend failed');
      });
    }
    return asked;
  }

  /** Ends one submission now: its devices still missing are NO_ANSWER with `reason`. */
  expireOne(requestId: string, reason: string): void {
    const active = this.active.get(requestId);
    if (!active) return;
    for (const result of active.fanout.expire(reason)) this.report(active, result);
  }

  /** Ends every submission: the devices still missing are NO_ANSWER with `reason`. */
  expireAll(reason: string): void {
    for (const active of [...this.active.values()]) {
      for (const result of active.fanout.expire(reason)) this.report(active, result);
    }
  }

  private report(active: Active, result: FanoutResult): void {
    const { fanout } = active;
    this.options.onResult(fanout.requestId, result);
    this.callback(() => active.onResult?.(result, { done: fanout.done, total: fanout.total }));
    if (fanout.complete) this.finish(active);
  }

  /** Ends a complete submission once: timers, rechecked subscriptions, the caller's promise. */
  private finish(active: Active): void {
    const { fanout } = active;
    if (!this.active.has(fanout.requestId)) return;
    this.deadlines.delete(active, active.due);
    if (active.recheckDue !== undefined) this.rechecks.delete(active, active.recheckDue);
    this.options.recheck.release(this.options.client(), active.rechecked);
    this.active.delete(fanout.requestId);
    for (const deviceId of fanout.sentTo) {
      const set = this.byDevice.get(deviceId);
      set?.delete(active);
      if (set?.size === 0) this.byDevice.delete(deviceId);
    }
    active.resolve(fanout.results());
  }

  /**
   * A status this controller missed ends the wait too: first what the directory knows, then the
   * retained statuses read again through a fresh subscription (recheck.ts), and the submission
   * sent again to the registers still missing (the same requestId: nothing runs twice).
   */
  private recheckMissing(active: Active): void {
    const now = Date.now();
    for (const deviceId of active.fanout.pendingDeviceIds()) {
      for (const view of this.options.directory.tasksOf(deviceId)) {
        const result = active.fanout.onStatus(view, now);
        if (result) this.report(active, result);
      }
    }
    const missing = active.fanout.pendingDeviceIds();
    const client = this.options.client();
    if (!client || missing.length === 0 || !this.active.has(active.fanout.requestId)) return;
    this.options.logger.info(
      { requestId: active.fanout.requestId, missing: missing.length },
      'rechecking retained statuses',
    );
    active.rechecked = this.options.recheck.request(client, missing);
    // A hub that keeps no retained statuses (docs/topology.md) has nothing to send again: the
    // registers are asked too, and republish their status without running anything again.
    this.askAgain(client, active);
  }

  /** A caller's callback must not break the controller's bookkeeping. */
  private callback(call: () => void): void {
    try {
      call();
    } catch (error) {
      this.options.logger.warn({ err: (error as Error).message }, 'submit callback threw');
    }
  }
}
