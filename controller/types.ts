/**
 * The store controller's public types: the device directory, the task view, fan-out targets and
 * results, and the typed events. Kept apart so the CLI and tests import types without MQTT.
 */

import type { StatusMessage } from '../bridge/contract/topics.ts';
import type { Logger } from '../src/logger.ts';

export type Installation = 'cash-register' | 'cash-register+pos' | 'pos';

/** One device as learnt from its retained state topic (docs/mqtt.md). */
export interface DeviceEntry {
  /**
   * The register's id; with several stores (`--ns 'stores/+'`) its key `<store>/<deviceId>`
   * (controller/store-keys.ts), which the API splits into `store` and `deviceId`.
   */
  deviceId: string;
  /** The store (the `+` level of a multi-store namespace); absent with one store. */
  store?: string;
  /** `serve --attribute KEY=VALUE` as its last online state said (absent: none). */
  attributes?: Record<string, string>;
  online: boolean;
  bootId: string;
  /**
   * Groups from the last online state seen. A device first seen offline (only its last will is
   * retained) has `[]`: the offline payload carries no groups.
   */
  groups: string[];
  installation?: Installation;
  version?: string;
  startedAt?: string;
  /** ISO time this controller last received a state or status message of the device. */
  lastSeen: string;
}

/** Where a task is: the wire says RUNNING for queued and running alike; `startedAt` tells them apart. */
export type TaskPhase = 'queued' | 'running' | 'finished' | 'failed';

/** The latest accepted status message of one task, with its phase and when it arrived. */
export interface TaskView extends StatusMessage {
  phase: TaskPhase;
  receivedAt: string;
  /** The device has since started with another bootId: a task not ended by then is lost (RAM only). */
  previousBoot: boolean;
}

export type FanoutTarget = 'all' | readonly string[] | { group: string };

export interface SubmitOptions {
  to: FanoutTarget;
  /** How long to wait for every targeted device's end status; then NO_ANSWER. */
  deadlineMs: number;
  /** Epoch ms passed through to the devices (docs/mqtt.md): later, the task ends FAILURE EXPIRED. */
  notAfter?: number;
  /** Default: a random UUID. Must be usable as one topic level (no `/`, `+`, `#`). */
  requestId?: string;
  /** Called once, before anything is published, with the devices the script goes to. */
  onSent?: (sent: { requestId: string; sentTo: readonly string[]; offline: readonly string[] }) => void;
  /** Called once per targeted device as its result becomes known (progress bars). */
  onResult?: (result: FanoutResult, progress: { done: number; total: number }) => void;
}

export interface FinishedResult {
  deviceId: string;
  status: 'FINISHED';
  report: string;
  taskId: number;
  /** Controller clock: from publishing the script to receiving the end status. */
  durationMs: number;
}

export interface FailureResult {
  deviceId: string;
  status: 'FAILURE';
  error: string;
  /** Absent when the device refused the submission (no task was created) or the publish failed. */
  taskId?: number;
  /** The device refused the submission in its reply: no task was created. */
  refused?: true;
  durationMs: number;
}

export interface OfflineResult {
  deviceId: string;
  status: 'OFFLINE';
}

export interface NoAnswerResult {
  deviceId: string;
  status: 'NO_ANSWER';
  /** Known when the device had acknowledged the submission (reply or status). */
  taskId?: number;
  /** What was last known, e.g. `no reply` or `task 7 still running; device went offline`. */
  detail: string;
}

export type FanoutResult = FinishedResult | FailureResult | OfflineResult | NoAnswerResult;
export type FanoutStatus = FanoutResult['status'];

export interface FanoutSummary {
  finished: number;
  failed: number;
  offline: number;
  noAnswer: number;
}

const SUMMARY_KEY = {
  FINISHED: 'finished',
  FAILURE: 'failed',
  OFFLINE: 'offline',
  NO_ANSWER: 'noAnswer',
} as const;

export function summarize(results: readonly FanoutResult[]): FanoutSummary {
  const summary: FanoutSummary = { finished: 0, failed: 0, offline: 0, noAnswer: 0 };
  for (const result of results) summary[SUMMARY_KEY[result.status]] += 1;
  return summary;
}

export type ConnectionState = 'connected' | 'reconnecting' | 'offline' | 'stopped';

export interface ControllerEvents {
  /** A device's directory entry changed (new device, online/offline, new boot). */
  device: [entry: DeviceEntry];
  /** A device's state topic was cleared (zero-byte retained message): it left the directory. */
  deviceRemoved: [deviceId: string];
  /** A status message was accepted (out-of-order and duplicate ones are not emitted). */
  status: [task: TaskView];
  /** One targeted device's final result of a submission. */
  result: [requestId: string, result: FanoutResult];
  connection: [state: ConnectionState];
  /** Reconnected: `registers` with open results were sent their submission again (resendOpen). */
  reasked: [registers: number];
}

/** The defaults of StoreControllerOptions, in one place (the `fanout`/`watch` flags read them too). */
export const CONTROLLER_DEFAULTS = Object.freeze({
  settleMs: 250,
  maxSettleMs: 5000,
  connectTimeoutMs: 10_000,
  /** The first wait before a reconnect attempt (ms; at least half of it, randomised). */
  reconnectFirstMs: 1000,
  /** Shorter than the devices' 30 s: one controller per store makes no herd, and jobs wait for it. */
  reconnectMaxMs: 10_000,
});

/**
 * The controller subscribes at QoS 0: its session is clean, so QoS 1 buys nothing a live
 * connection does not, and on nats-server every QoS 1 subscription is a JetStream consumer that
 * blocked reconnects and SUBSCRIBEs after a node loss (docs/topology.md).
 */
export const CONTROLLER_SUBSCRIBE_QOS = 0;

export interface StoreControllerOptions {
  /** Broker URL(s), as DeviceBridgeOptions.url: a list or comma-separated string fails over. */
  url: string | readonly string[];
  /** Override the URLs' credentials. */
  username?: string;
  password?: string;
  /** PEM CA certificate(s) trusted for mqtts:// and wss:// brokers besides the system's (`--mqtt-ca`). */
  ca?: Buffer;
  ns: string;
  /** Also a topic level of the reply topics: `[A-Za-z0-9_-]{1,64}`. Default `regbridge-ctl-<random>`. */
  clientId?: string;
  logger?: Logger;
  /** start() resolves once no state/status message arrived for this long after SUBACK (default 250 ms)... */
  settleMs?: number;
  /** ...or after this long in any case (default 5000 ms). */
  maxSettleMs?: number;
  /** First connection attempt (default 10000 ms); reconnects back off up to `reconnectMaxMs`. */
  connectTimeoutMs?: number;
  /** Cap of the reconnect backoff (default 10000 ms; 0: a fixed 1 s, as before). */
  reconnectMaxMs?: number;
  /** Rereads missing statuses this long before a deadline (recheck.ts; default 2000 ms, 0: never). */
  recheckLeadMs?: number;
  /** With several stores: the topic under each store's namespace where its link publishes its state. */
  storeLinkTopic?: string;
}
