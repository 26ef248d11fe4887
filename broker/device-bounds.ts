/**
 * What a logged-in register may hold in the store broker (contract 6.1), checked in
 * authorizePublish: at most `maxRetainedStatuses` retained statuses, reports of at most
 * `maxReportBytes`, a `version` of at most 64 characters. Counts live in memory: devices republish
 * every held task on reconnect.
 */

/** Contract 6.1: the `version` of a device's state. */
export const MAX_VERSION_LENGTH = 64;

export class DeviceBounds {
  readonly #maxRetainedStatuses: number;
  readonly #maxReportBytes: number;
  /** Device -> its status topics holding a retained (non-empty) message. */
  readonly #retained = new Map<string, Set<string>>();

  constructor(maxRetainedStatuses: number, maxReportBytes: number) {
    this.#maxRetainedStatuses = maxRetainedStatuses;
    this.#maxReportBytes = maxReportBytes;
  }

  /**
   * Why a status payload must be refused (its `report` over `maxReportBytes`), or undefined. Only
   * a payload larger than the cap can hold such a report, so only that one is parsed.
   */
  report(payload: Buffer | undefined): string | undefined {
    if (!payload || payload.length <= this.#maxReportBytes) return undefined;
    let report: unknown;
    try {
      report = (JSON.parse(payload.toString('utf8')) as { report?: unknown } | null)?.report;
    } catch {
      return undefined; // not ours to judge: controllers refuse invalid statuses themselves
    }
    return typeof report === 'string' && Buffer.byteLength(report, 'utf8') > this.#maxReportBytes
      ? `report larger than ${this.#maxReportBytes} bytes (--max-report-bytes)`
      : undefined;
  }

  /**
   * Why this publish of `deviceId`'s status topic must be refused, or undefined. Called for
   * publishes the ACL allowed; a zero-byte retained message (a clear) always passes and frees
   * its place, whoever sends it.
   */
  status(deviceId: string, topic: string, retain: boolean, payloadLength: number): string | undefined {
    if (!retain) return undefined;
    let topics = this.#retained.get(deviceId);
    if (payloadLength === 0) {
      topics?.delete(topic);
      if (topics?.size === 0) this.#retained.delete(deviceId);
      return undefined;
    }
    if (topics?.has(topic)) return undefined;
    if ((topics?.size ?? 0) >= this.#maxRetainedStatuses) {
      return `device ${deviceId} already holds ${this.#maxRetainedStatuses} retained task statuses (--max-retained-statuses); clear ended ones first`;
    }
    if (!topics) {
      topics = new Set();
      this.#retained.set(deviceId, topics);
    }
    topics.add(topic);
    return undefined;
  }

  /** Why a device's state payload must be refused (a `version` over 64 characters), or undefined. */
  state(payload: Buffer | undefined): string | undefined {
    if (!payload || payload.length === 0) return undefined;
    let version: unknown;
    try {
      version = (JSON.parse(payload.toString('utf8')) as { version?: unknown } | null)?.version;
    } catch {
      return undefined; // not ours to judge: controllers refuse invalid states themselves
    }
    return typeof version === 'string' && version.length > MAX_VERSION_LENGTH
      ? `state version longer than ${MAX_VERSION_LENGTH} characters`
      : undefined;
  }
}
