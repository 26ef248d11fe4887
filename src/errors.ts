/**
 * The one registry of error codes (docs/api.md, docs/mqtt.md), kept in step with docs/errors.md
 * by test/docs/errors-docs.test.ts. The engine throws DomainError, which knows nothing of HTTP;
 * REST (src/routes/api-error.ts) maps it to a status, MQTT to `"<CODE>: <message>"`.
 */

/** Where MQTT carries a code: a refused script, a refused cancel, or the `error` of a task. */
export type MqttUse = 'script refusal' | 'cancel refusal' | 'task error';

interface ErrorEntry {
  /** HTTP status and reason phrase; absent: REST never answers with this code. */
  readonly statusCode?: number;
  readonly error?: string;
  readonly mqtt: readonly MqttUse[];
  readonly description: string;
}

export const errorRegistry = {
  INVALID_REQUEST: {
    statusCode: 400,
    error: 'Bad Request',
    mqtt: ['script refusal', 'cancel refusal'],
    description:
      'Malformed JSON, a missing or mistyped field, an empty script, a non-integer task id. Also a body or payload that is not valid UTF-8 and a blank script.',
  },
  MALFORMED_HTTP: {
    statusCode: 400,
    error: 'Bad Request',
    mqtt: [],
    description: 'A request the HTTP parser refuses (an unknown method, a malformed request line or header).',
  },
  INVALID_SCRIPT: {
    statusCode: 400,
    error: 'Bad Request',
    mqtt: [],
    description:
      "Controller service: a job's script has lines the simulator does not know. The body carries `problems`.",
  },
  INVALID_PARAMS: {
    statusCode: 400,
    error: 'Bad Request',
    mqtt: [],
    description:
      "Controller service: a library script's parameters cannot be rendered. The body carries `problems`.",
  },
  OIDC_FAILED: {
    statusCode: 400,
    error: 'Bad Request',
    mqtt: [],
    description:
      "Controller service: a single sign-on was refused (unknown, used or expired state or hand-over code, another browser, the provider's answer not valid).",
  },
  INVALID_CREDENTIALS: {
    statusCode: 401,
    error: 'Unauthorized',
    mqtt: [],
    description: 'Wrong user name or password at authenticate.',
  },
  UNAUTHORIZED: {
    statusCode: 401,
    error: 'Unauthorized',
    mqtt: [],
    description: 'Missing, malformed, unknown or expired bearer token. Carries `WWW-Authenticate: Bearer`.',
  },
  FORBIDDEN: {
    statusCode: 403,
    error: 'Forbidden',
    mqtt: [],
    description: "Controller service: the caller's role may not do this (docs/controller.md, role table).",
  },
  OUT_OF_SCOPE: {
    statusCode: 403,
    error: 'Forbidden',
    mqtt: [],
    description: "Controller service: an operator's job would reach registers outside its scope.",
  },
  SELF_APPROVAL: {
    statusCode: 403,
    error: 'Forbidden',
    mqtt: [],
    description: 'Controller service: the creator of a job may not approve or deny it.',
  },
  TASK_DOES_NOT_EXIST: {
    statusCode: 404,
    error: 'Not Found',
    mqtt: ['cancel refusal'],
    description:
      'Unknown or evicted task id. The body also carries `id` and `status: "TASK_DOES_NOT_EXIST"`.',
  },
  ROUTE_NOT_FOUND: {
    statusCode: 404,
    error: 'Not Found',
    mqtt: [],
    description: 'No route for this method and path.',
  },
  JOB_DOES_NOT_EXIST: {
    statusCode: 404,
    error: 'Not Found',
    mqtt: [],
    description: 'Controller service: unknown job id. The body also carries `jobId`.',
  },
  SCHEDULE_DOES_NOT_EXIST: {
    statusCode: 404,
    error: 'Not Found',
    mqtt: [],
    description: 'Controller service: unknown schedule id. The body also carries `scheduleId`.',
  },
  SCRIPT_DOES_NOT_EXIST: {
    statusCode: 404,
    error: 'Not Found',
    mqtt: [],
    description:
      'Controller service: no library script (or version) with this id. The body carries `scriptId`.',
  },
  WEBHOOK_DOES_NOT_EXIST: {
    statusCode: 404,
    error: 'Not Found',
    mqtt: [],
    description: 'Controller service: unknown webhook id.',
  },
  OIDC_NOT_CONFIGURED: {
    statusCode: 404,
    error: 'Not Found',
    mqtt: [],
    description: 'Controller service: a single sign-on route while no --oidc-issuer is given.',
  },
  IDEMPOTENCY_CONFLICT: {
    statusCode: 409,
    error: 'Conflict',
    mqtt: [],
    description: 'An `Idempotency-Key` seen before with a different script.',
  },
  TASK_RUNNING: {
    statusCode: 409,
    error: 'Conflict',
    mqtt: ['cancel refusal'],
    description: 'A cancel of a task that has started: a running script is never cut.',
  },
  TASK_ENDED: {
    statusCode: 409,
    error: 'Conflict',
    mqtt: ['cancel refusal'],
    description: 'A cancel of a task that has already ended. The body also carries `id` and `status`.',
  },
  JOB_ENDED: {
    statusCode: 409,
    error: 'Conflict',
    mqtt: [],
    description:
      'Controller service: the job has already ended (cancel). The body also carries `jobId`, `status`.',
  },
  JOB_NOT_ENDED: {
    statusCode: 409,
    error: 'Conflict',
    mqtt: [],
    description:
      'Controller service: a rerun of a job that has not ended. The body also carries `jobId` and `status`.',
  },
  SCRIPT_ARCHIVED: {
    statusCode: 409,
    error: 'Conflict',
    mqtt: [],
    description: 'Controller service: the library script is archived: no new job or version may use it.',
  },
  JOB_NOT_WAITING: {
    statusCode: 409,
    error: 'Conflict',
    mqtt: [],
    description: 'Controller service: approve or deny of a job that is not waiting for approval.',
  },
  REQUEST_TIMEOUT: {
    statusCode: 408,
    error: 'Request Timeout',
    mqtt: [],
    description: 'The request line, headers or body did not arrive in time.',
  },
  SCRIPT_TOO_LARGE: {
    statusCode: 413,
    error: 'Payload Too Large',
    mqtt: ['script refusal'],
    description: 'Script (or request body) over the limit (default 1 MiB of UTF-8).',
  },
  BODY_TOO_LARGE: {
    statusCode: 413,
    error: 'Payload Too Large',
    mqtt: [],
    description:
      'A body over the limit of a route that carries no script (authenticate: `--auth-body-limit`).',
  },
  UNSUPPORTED_MEDIA_TYPE: {
    statusCode: 415,
    error: 'Unsupported Media Type',
    mqtt: [],
    description: 'A body that is not `application/json`.',
  },
  TOO_MANY_ATTEMPTS: {
    statusCode: 429,
    error: 'Too Many Requests',
    mqtt: [],
    description:
      'Repeated failed authentications from one address or for one user name. Carries `Retry-After`.',
  },
  TOO_MANY_EVENT_STREAMS: {
    statusCode: 429,
    error: 'Too Many Requests',
    mqtt: [],
    description: 'Controller service: the user already has `--max-event-streams` event streams open.',
  },
  HEADERS_TOO_LARGE: {
    statusCode: 431,
    error: 'Request Header Fields Too Large',
    mqtt: [],
    description: 'The request line and headers are over the size limit (16 KiB, the default of node).',
  },
  INTERNAL_ERROR: {
    statusCode: 500,
    error: 'Internal Server Error',
    mqtt: ['script refusal', 'cancel refusal'],
    description: 'A bug: the service could not answer. Logged with its stack.',
  },
  OIDC_UNAVAILABLE: {
    statusCode: 502,
    error: 'Bad Gateway',
    mqtt: [],
    description:
      'Controller service: the identity provider cannot be reached or its discovery document is not valid.',
  },
  QUEUE_FULL: {
    statusCode: 503,
    error: 'Service Unavailable',
    mqtt: ['script refusal'],
    description: 'Too many queued tasks (`--max-queue`). Carries `Retry-After`.',
  },
  RETAINED_SUBMISSION: {
    mqtt: ['script refusal', 'cancel refusal'],
    description: 'A script or cancel delivered as a retained message: it was published in the past.',
  },
  EXPIRED: {
    mqtt: ['task error'],
    description: 'A script whose `notAfter` had passed: the task ends FAILURE without running.',
  },
  CANCELLED: {
    mqtt: ['script refusal', 'task error'],
    description:
      'A queued task cancelled before it started ends FAILURE with this error; a script whose requestId was cancelled before it arrived is refused with it.',
  },
} as const satisfies Record<string, ErrorEntry>;

export type ErrorCode = keyof typeof errorRegistry;

/** The codes REST answers with (those with an HTTP status). */
export type HttpErrorCode = {
  [K in ErrorCode]: (typeof errorRegistry)[K] extends { statusCode: number } ? K : never;
}[ErrorCode];

export function hasHttpStatus(code: ErrorCode): code is HttpErrorCode {
  return 'statusCode' in errorRegistry[code];
}

export const httpErrorCodes = (Object.keys(errorRegistry) as ErrorCode[]).filter(hasHttpStatus);

export interface DomainErrorOptions {
  /** Fields the REST error body carries besides the four standard ones (e.g. `id`, `status`). */
  details?: Record<string, unknown>;
  /** Trying again later makes sense after this many seconds (REST: `Retry-After`). */
  retryAfterSeconds?: number;
}

/**
 * A refusal or failure of the task engine, in the engine's own terms: a registered code, a
 * human-readable message and the facts a caller may need. No HTTP status, no header.
 */
export class DomainError extends Error {
  readonly code: ErrorCode;
  readonly details: Readonly<Record<string, unknown>>;
  readonly retryAfterSeconds: number | undefined;

  constructor(code: ErrorCode, message: string, options: DomainErrorOptions = {}) {
    super(message);
    this.name = 'DomainError';
    this.code = code;
    this.details = options.details ?? {};
    this.retryAfterSeconds = options.retryAfterSeconds;
  }

  /** The MQTT form (docs/mqtt.md): the `error` of a reply starts with the code. */
  get coded(): string {
    return coded(this.code, this.message);
  }
}

/** `"<CODE>: <message>"`: how MQTT replies and a task's `error` carry a code. */
export function coded(code: ErrorCode, message: string): string {
  return `${code}: ${message}`;
}

export function taskDoesNotExist(id: number): DomainError {
  return new DomainError('TASK_DOES_NOT_EXIST', `Task ${id} does not exist`, {
    details: { id, status: 'TASK_DOES_NOT_EXIST' },
  });
}
