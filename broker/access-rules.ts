/**
 * The store broker's per-role ACL (device, controller, observer) over docs/mqtt.md topics; the
 * table is in docs/broker.md. `<ns>` may hold several levels (`stores/042`). A device publishes
 * only under its own subtree (contract 3.1), so nothing it sends speaks for another register, and
 * only it may use the client id `regbridge_<ns>_<deviceId>` (contract 6.1).
 */
import { deviceClientId, deviceClientIdPrefix, ID_PATTERN } from '../bridge/contract/topics.ts';
import type { BrokerRole } from './users.ts';

/** How a rule treats the retain flag. */
/**
 * `never`: only non-retained messages; `clear-only`: only a zero-byte retained message (a clear);
 * `never-or-clear`: non-retained messages, or a clear.
 */
export type RetainRule = 'any' | 'never' | 'clear-only' | 'never-or-clear';

export interface PublishRule {
  /** Topic filter; `<self>` already replaced by the user's name. */
  filter: string;
  retain: RetainRule;
}

export interface PublishAttempt {
  topic: string;
  retain: boolean;
  payloadLength: number;
}

export type AclDecision = { allowed: true } | { allowed: false; reason: string };

const ALLOW: AclDecision = { allowed: true };

/** True when `topic` (a topic name) matches `filter` ([MQTT-4.7.1]). */
export function topicMatches(filter: string, topic: string): boolean {
  return levelsMatch(filter.split('/'), topic.split('/'));
}

/** topicMatches over filter and topic already split into levels. */
function levelsMatch(f: readonly string[], t: readonly string[]): boolean {
  for (let i = 0; i < f.length; i++) {
    const level = f[i];
    // `#` also matches the parent level: `a/#` matches `a` ([MQTT-4.7.1-2]).
    if (level === '#') return true;
    if (i >= t.length) return false;
    if (level !== '+' && level !== t[i]) return false;
  }
  return f.length === t.length;
}

/** A publish rule with its filter split into levels once. */
interface CompiledRule extends PublishRule {
  levels: readonly string[];
}

/**
 * Compiled rule lists kept per (role, name). Users are a configured set, so this stays small;
 * the bound only guards against a broker that lets in unboundedly many anonymous names.
 */
const MAX_CACHED_RULE_SETS = 10_000;

/**
 * True when every topic that `filter` can match is also matched by `pattern`, i.e. a client
 * subscribing to `filter` can receive nothing outside `pattern`.
 */
export function filterWithin(filter: string, pattern: string): boolean {
  const f = filter.split('/');
  const p = pattern.split('/');
  for (let i = 0; i < p.length; i++) {
    const want = p[i];
    if (want === '#') return true;
    const got = f[i];
    if (got === undefined) return false;
    if (got === '#') return false; // reaches deeper or wider than a literal or `+` level
    if (want === '+') continue; // `+` and any literal lie within `+`
    if (got !== want) return false; // a `+` in the filter is wider than a literal
  }
  return f.length === p.length;
}

export class AccessRules {
  readonly ns: string;
  /** canPublish runs for every PUBLISH the broker receives: its rules are built and split once. */
  private readonly compiled = new Map<string, readonly CompiledRule[]>();

  constructor(ns: string) {
    this.ns = ns;
  }

  private compiledRules(role: BrokerRole, name: string): readonly CompiledRule[] {
    const key = `${role}\u0000${name}`;
    let rules = this.compiled.get(key);
    if (rules === undefined) {
      rules = this.publishRules(role, name).map((rule) => ({ ...rule, levels: rule.filter.split('/') }));
      if (this.compiled.size >= MAX_CACHED_RULE_SETS) {
        const oldest = this.compiled.keys().next();
        if (!oldest.done) this.compiled.delete(oldest.value);
      }
      this.compiled.set(key, rules);
    }
    return rules;
  }

  publishRules(role: BrokerRole, name: string): PublishRule[] {
    const ns = this.ns;
    switch (role) {
      case 'device':
        return [
          { filter: `${ns}/devices/${name}/state`, retain: 'any' },
          { filter: `${ns}/devices/${name}/tasks/+/status`, retain: 'any' },
          // Its answers to scripts and cancels: the topic names the register that sent them.
          { filter: `${ns}/devices/${name}/replies/+`, retain: 'never' },
        ];
      case 'controller':
        return [
          // docs/mqtt.md: a retained submission creates no task. In MQTT 3.1.1 a device
          // cannot see the retain flag on a live delivery ([MQTT-3.3.1-9]), so the store broker
          // refuses retained scripts itself; clearing one left by another broker stays allowed.
          { filter: `${ns}/devices/+/scripts`, retain: 'never-or-clear' },
          { filter: `${ns}/groups/+/scripts`, retain: 'never-or-clear' },
          // Cancels (v1.1) are commands like scripts: never retained, a clear allowed.
          { filter: `${ns}/devices/+/cancel`, retain: 'never-or-clear' },
          { filter: `${ns}/groups/+/cancel`, retain: 'never-or-clear' },
          { filter: `${ns}/replies/#`, retain: 'never' },
          // Forgetting a decommissioned device: clear its retained state and status topics,
          // never write them (only the device speaks for itself).
          { filter: `${ns}/devices/+/state`, retain: 'clear-only' },
          { filter: `${ns}/devices/+/tasks/+/status`, retain: 'clear-only' },
        ];
      case 'observer':
        return [];
    }
  }

  subscribeRules(role: BrokerRole, name: string): string[] {
    // A device reads its own topics (scripts and cancels included) and any group's scripts and
    // cancels: the broker does not know a device's groups.
    if (role === 'device')
      return [`${this.ns}/devices/${name}/#`, `${this.ns}/groups/+/scripts`, `${this.ns}/groups/+/cancel`];
    return [`${this.ns}/#`];
  }

  canPublish(role: BrokerRole, name: string, attempt: PublishAttempt): AclDecision {
    const levels = attempt.topic.split('/');
    const isClear = attempt.retain && attempt.payloadLength === 0;
    /** The retain rule of the first matching rule: it words the refusal. */
    let retainRule: RetainRule | undefined;
    for (const rule of this.compiledRules(role, name)) {
      if (!levelsMatch(rule.levels, levels)) continue;
      retainRule ??= rule.retain;
      if (rule.retain === 'any') return ALLOW;
      if (rule.retain === 'never' && !attempt.retain) return ALLOW;
      if (rule.retain === 'clear-only' && isClear) return ALLOW;
      if (rule.retain === 'never-or-clear' && (!attempt.retain || isClear)) return ALLOW;
    }
    if (retainRule === undefined) {
      return { allowed: false, reason: `role ${role} may not publish to this topic` };
    }
    return {
      allowed: false,
      reason:
        retainRule === 'never'
          ? 'messages on this topic must not be retained'
          : retainRule === 'never-or-clear'
            ? 'scripts and cancels must not be retained; only a zero-byte retained clear is allowed'
            : `role ${role} may only clear this topic (zero-byte retained message)`,
    };
  }

  /**
   * Why `clientId` is not this user's (contract 6.1), or undefined: `regbridge_<ns>_<deviceId>`
   * belongs to that device user alone, who may use no other id.
   */
  clientIdProblem(role: BrokerRole, name: string, clientId: string): string | undefined {
    if (role === 'device') {
      const own = deviceClientId(this.ns, name);
      return clientId === own ? undefined : `a device user connects with its own client id ${own} only`;
    }
    const prefix = deviceClientIdPrefix(this.ns);
    if (clientId.startsWith(prefix) && ID_PATTERN.test(clientId.slice(prefix.length)))
      return `client id reserved to register ${clientId.slice(prefix.length)}`;
    return undefined;
  }

  canSubscribe(role: BrokerRole, name: string, filter: string): boolean {
    return this.subscribeRules(role, name).some((pattern) => filterWithin(filter, pattern));
  }

  /** The last will is checked at CONNECT, so a stored will is always one the role may send. */
  canWill(role: BrokerRole, name: string, will: PublishAttempt): AclDecision {
    if (role === 'device' && will.topic !== `${this.ns}/devices/${name}/state`) {
      return { allowed: false, reason: 'a device may only set its own state topic as last will' };
    }
    return this.canPublish(role, name, will);
  }
}
