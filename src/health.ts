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
}
