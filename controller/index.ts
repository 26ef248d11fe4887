/** The package entry `regbridge/controller`: the store controller and its results (docs/controller.md). */
export { StoreController, type StoreControllerOptions } from './store-controller.ts';
export type * from './types.ts';
