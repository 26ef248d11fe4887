/** What /health says about the MQTT side; the bridge reports it, the app only displays it. */
export interface MqttHealth {
  state: 'disabled' | 'connecting' | 'connected' | 'reconnecting' | 'offline';
  /** Broker URL without credentials. */
  url?: string;
  /** Status messages published while connected, and buffered ones waiting for the broker. */
  pending?: number;
}
