/**
 * Plain mqtt.js clients a test connects and closes: connect() resolves on the CONNACK and rejects
 * on a refusal (the error carries its return code) or a close before it; closeAll() in afterEach
 * ends every client the suite opened.
 */
import mqtt, { type IClientOptions, type MqttClient } from 'mqtt';

export class MqttClients {
  private readonly open: MqttClient[] = [];

  /** `target` is a URL or a port on 127.0.0.1. No reconnects unless `options` asks for them. */
  connect(target: string | number, options: IClientOptions = {}): Promise<MqttClient> {
    const url = typeof target === 'number' ? `mqtt://127.0.0.1:${target}` : target;
    const client = this.add(mqtt.connect(url, { reconnectPeriod: 0, connectTimeout: 5000, ...options }));
    return new Promise((resolve, reject) => {
      client.once('connect', () => resolve(client));
      client.once('error', reject);
      client.once('close', () => reject(new Error('closed before CONNACK')));
    });
  }

  /** A client connected some other way, closed with the others. */
  add(client: MqttClient): MqttClient {
    this.open.push(client);
    return client;
  }

  async closeAll(): Promise<void> {
    await Promise.all(this.open.splice(0).map((client) => client.endAsync(true)));
  }
}

/** The next message with exactly this payload on `client` (its topic and retain flag). */
export function nextMessage(
  client: MqttClient,
  payload: string,
  timeoutMs = 5000,
): Promise<{ topic: string; retain: boolean }> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      client.off('message', onMessage);
      reject(new Error(`no message ${payload}`));
    }, timeoutMs);
    function onMessage(topic: string, body: Buffer, packet: { retain: boolean }): void {
      if (body.toString() !== payload) return;
      clearTimeout(timer);
      client.off('message', onMessage);
      resolve({ topic, retain: packet.retain });
    }
    client.on('message', onMessage);
  });
}

/** Every payload the client receives, in order. */
export function recordPayloads(client: MqttClient): string[] {
  const payloads: string[] = [];
  client.on('message', (_topic, payload) => payloads.push(payload.toString()));
  return payloads;
}
