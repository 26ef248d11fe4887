/** The TypeScript client of a regbridge device (mirror of the vendor's Java client class). */
export { type Credentials, DeviceClient } from './device-client.ts';
export {
  type ClientErrorCode,
  ConnectionException,
  InternalErrorException,
  RestException,
  type RestExceptionOptions,
  TaskDoesNotExistException,
  TaskProcessingException,
  TimeoutException,
} from './rest-exception.ts';
export type {
  DeviceClientOptions,
  GetTaskStatusOptions,
  ProcessFmScriptOptions,
  TaskStatusName,
  TasksResponse,
  WaitForTaskOptions,
} from './types.ts';
