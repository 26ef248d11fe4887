/** What /health says about the MQTT side; the bridge reports it, the app only displays it. */
export interface MqttHealth {
  state: 'disabled' | 'connecting' | 'connected' | 'reconnecting' | 'offline';
  /** Broker URL without credentials. */
  url?: string;
  /** MQTT protocol of the connection in use, while connected. */
  protocol?: '3.1.1' | '5';
  /** Status messages published while connected, and buffered ones waiting for the broker. */
  pending?: number;
  /**
   * While disconnected: the reconnect attempt waited for or under way since the connection was
   * lost, and the milliseconds until it starts (0: under way); docs/mqtt.md, reconnect backoff.
   */
  reconnect?: { attempt: number; inMs: number };
  /** While not connected: for how long (ms) since start or since the connection was lost. */
  offlineMs?: number;
}

/**
 * /health's verdict: `degraded` once the broker has been out of reach for `graceMs` or longer
 * (`--health-mqtt-grace`), so a container health check sees a register cut off from its store.
 */
export function healthStatus(mqtt: MqttHealth, graceMs: number): 'ok' | 'degraded' {
  if (mqtt.state === 'disabled' || mqtt.state === 'connected') return 'ok';
  return (mqtt.offlineMs ?? 0) >= graceMs ? 'degraded' : 'ok';
}
