/** What /health says about the MQTT side; the bridge reports it, the app only displays it. */
export interface MqttHealth {
  state: 'disabled' | 'connecting' | 'connected' | 'reconnecting' | 'offline';
  /** Broker URL without credentials. */
  url?: string;
  /** MQTT protocol of the connection in use, while connected. */
  protocol?: '3.1.1' | '5';
  /** Status messages published while connected, and buffered ones waiting for the broker. */
  pending?: number;
}
