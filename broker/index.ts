/** The package entry `regbridge/broker`: the embedded store broker (docs/broker.md). */
export * from './store-broker.ts';
