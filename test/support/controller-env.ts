/**
 * A store for the controller suites: real devices (startDevice, connected to a real broker from
 * test/support/brokers.ts) and fake devices (a raw mqtt client that speaks the device side of
 * docs/mqtt.md only as far as a test tells it to).
 */
import { randomUUID } from 'node:crypto';
import { connect, type MqttClient } from 'mqtt';
import type { OnlineState, ScriptSubmission, StatusMessage } from '../../bridge/contract/topics.ts';
import { deviceClientId, topics } from '../../bridge/contract/topics.ts';
import { type RunningDevice, startDevice } from '../../cli/device.ts';
import { parseServeConfig, type ServeConfigInput } from '../../cli/serve-config.ts';
import { StoreController } from '../../controller/store-controller.ts';
import type { Credentials, RunningBroker } from './brokers.ts';
import { silent } from './loggers.ts';
import { until } from './waits.ts';

/** `mqtt://user:pass@host:port` from a credential-less URL. */
export function withCreds(url: string, creds: Credentials): string {
  if (creds.username === undefined) return url;
  const parsed = new URL(url);
  parsed.username = encodeURIComponent(creds.username);
  parsed.password = encodeURIComponent(creds.password ?? '');
  return parsed.toString().replace(/\/$/, '');
}

export function controllerUrl(broker: RunningBroker): string {
  return withCreds(broker.controllerUrl, broker.controllerCreds);
}

export async function startRealDevice(
  broker: RunningBroker,
  ns: string,
  deviceId: string,
  extra: Partial<ServeConfigInput> = {},
): Promise<RunningDevice> {
  return startDevice(
    parseServeConfig({
      port: 0,
      host: '127.0.0.1',
      deviceId,
      mqttUrl: withCreds(broker.url, broker.deviceCreds(deviceId)),
      ns,
      users: ['admin:pw'],
      logLevel: 'silent',
      ...extra,
    }),
    { logger: silent },
  );
}

export function newController(broker: RunningBroker, ns: string): StoreController {
  return new StoreController({
    url: broker.controllerUrl,
    ...broker.controllerCreds,
    ns,
    logger: silent,
    settleMs: 150,
  });
}

/** A device played by the test: publishes what it is told, hands every script it gets to the test. */
export class FakeDevice {
  readonly deviceId: string;
  readonly ns: string;
  bootId = randomUUID();
  readonly scripts: ScriptSubmission[] = [];
  private client: MqttClient | undefined;
  private seq = 0;
  private readonly url: string;
  private readonly creds: Credentials;

  constructor(broker: RunningBroker, ns: string, deviceId: string) {
    this.deviceId = deviceId;
    this.ns = ns;
    this.url = broker.url;
    this.creds = broker.deviceCreds(deviceId);
  }

  async start(groups: string[] = []): Promise<void> {
    const client = connect(this.url, {
      ...this.creds,
      // A device user connects with its own client id only (contract 6.1).
      clientId: deviceClientId(this.ns, this.deviceId),
      protocolVersion: 4,
      reconnectPeriod: 0,
    });
    this.client = client;
    await new Promise<void>((resolve, reject) => {
      client.once('connect', () => resolve());
      client.once('error', reject);
    });
    client.on('message', (_topic, payload) => {
      this.scripts.push(JSON.parse(payload.toString()) as ScriptSubmission);
    });
    await client.subscribeAsync(
      [topics.deviceScripts(this.ns, this.deviceId), `${this.ns}/groups/+/scripts`],
      { qos: 1 },
    );
    await this.publishOnline(groups);
  }

  async publishOnline(groups: string[] = []): Promise<void> {
    const state: OnlineState = {
      online: true,
      deviceId: this.deviceId,
      bootId: this.bootId,
      installation: 'cash-register',
      version: 'fake',
      startedAt: new Date().toISOString(),
      groups,
    };
    await this.publish(topics.state(this.ns, this.deviceId), state, true);
  }

  async publishOffline(): Promise<void> {
    await this.publish(
      topics.state(this.ns, this.deviceId),
      { online: false, deviceId: this.deviceId, bootId: this.bootId },
      true,
    );
  }

  /** A restart: a new bootId, seq starts again at 1. */
  async restart(groups: string[] = []): Promise<void> {
    this.bootId = randomUUID();
    this.seq = 0;
    await this.publishOnline(groups);
  }

  /** Publishes a status; `seq` defaults to the next one. Returns the seq used. */
  async status(fields: Pick<StatusMessage, 'id' | 'status'> & Partial<StatusMessage>): Promise<number> {
    const seq = fields.seq ?? ++this.seq;
    this.seq = Math.max(this.seq, seq);
    const message: StatusMessage = {
      deviceId: this.deviceId,
      bootId: this.bootId,
      queuedAt: new Date().toISOString(),
      ...fields,
      seq,
    };
    await this.publish(topics.taskStatus(this.ns, this.deviceId, fields.id), message, true);
    return seq;
  }

  /** On this device's own reply topic (contract 3.1). */
  async reply(to: ScriptSubmission, body: Record<string, unknown>): Promise<void> {
    if (!to.requestId) throw new Error('submission without requestId');
    const topic = topics.deviceReply(this.ns, this.deviceId, to.requestId);
    await this.publish(topic, { requestId: to.requestId, deviceId: this.deviceId, ...body }, false);
  }

  async waitForScript(count = 1): Promise<ScriptSubmission> {
    await until(() => this.scripts.length >= count, `${this.deviceId} to get script #${count}`);
    return this.scripts[count - 1]!;
  }

  async stop(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    if (client) await client.endAsync();
  }

  /** Publishes anything as this device user (an attacker's register in the trust suites). */
  async publish(topic: string, body: unknown, retain: boolean): Promise<void> {
    if (!this.client) throw new Error('fake device not started');
    await this.client.publishAsync(topic, JSON.stringify(body), { qos: 1, retain });
  }
}
