/**
 * The package entry `regbridge/contract`: the MQTT topic contract (topics, payload schemas, broker
 * URLs) for programs that talk to regbridge devices over MQTT without running one (docs/mqtt.md).
 * It loads zod only: no device, broker or MQTT client code.
 */

export * from './attributes.ts';
export {
  type BrokerEndpoint,
  mqttUrlSchema,
  parseBrokerUrl,
  parseBrokerUrls,
  redactUrl,
  splitBrokerUrls,
} from './broker-url.ts';
export * from './topics.ts';
