/**
 * The one registry of API error codes and their HTTP statuses (contract section 1).
 * docs/errors.md lists the same codes; test/errors-docs.test.ts keeps the two in step.
 */
export const errorRegistry = {
  INVALID_REQUEST: {
    statusCode: 400,
    error: 'Bad Request',
    description: 'Malformed JSON, a missing or mistyped field, an empty script, a non-integer task id.',
  },
  INVALID_CREDENTIALS: {
    statusCode: 401,
    error: 'Unauthorized',
    description: 'Wrong user name or password at authenticate.',
  },
  UNAUTHORIZED: {
    statusCode: 401,
    error: 'Unauthorized',
    description: 'Missing, malformed, unknown or expired bearer token. Carries `WWW-Authenticate: Bearer`.',
  },
  TASK_DOES_NOT_EXIST: {
    statusCode: 404,
    error: 'Not Found',
    description:
      'Unknown or evicted task id. The body also carries `id` and `status: "TASK_DOES_NOT_EXIST"`.',
  },
  ROUTE_NOT_FOUND: { statusCode: 404, error: 'Not Found', description: 'No route for this method and path.' },
  IDEMPOTENCY_CONFLICT: {
    statusCode: 409,
    error: 'Conflict',
    description: 'An `Idempotency-Key` seen before with a different script.',
  },
  SCRIPT_TOO_LARGE: {
    statusCode: 413,
    error: 'Payload Too Large',
    description: 'Script (or request body) over the limit (default 1 MiB).',
  },
  UNSUPPORTED_MEDIA_TYPE: {
    statusCode: 415,
    error: 'Unsupported Media Type',
    description: 'A body that is not `application/json`.',
  },
  TOO_MANY_ATTEMPTS: {
    statusCode: 429,
    error: 'Too Many Requests',
    description: 'Repeated failed authentications from one address. Carries `Retry-After`.',
  },
  INTERNAL_ERROR: {
    statusCode: 500,
    error: 'Internal Server Error',
    description: 'A bug: the service could not answer. Logged with its stack.',
  },
  QUEUE_FULL: {
    statusCode: 503,
    error: 'Service Unavailable',
    description: 'Too many queued tasks (`--max-queue`). Carries `Retry-After`.',
  },
} as const satisfies Record<string, { statusCode: number; error: string; description: string }>;

export type ErrorCode = keyof typeof errorRegistry;

export interface ErrorBody {
  statusCode: number;
  error: string;
  code: ErrorCode;
  message: string;
  [extra: string]: unknown;
}

/** An error the API answers with its registered status and the contract's body. */
export class ApiError extends Error {
  readonly code: ErrorCode;
  readonly statusCode: number;
  readonly headers: Record<string, string>;
  readonly extra: Record<string, unknown>;

  constructor(
    code: ErrorCode,
    message: string,
    options: { headers?: Record<string, string>; extra?: Record<string, unknown> } = {},
  ) {
    super(message);
    this.name = 'ApiError';
    this.code = code;
    this.statusCode = errorRegistry[code].statusCode;
    this.headers = options.headers ?? {};
    this.extra = options.extra ?? {};
  }

  toBody(): ErrorBody {
    return {
      statusCode: this.statusCode,
      error: errorRegistry[this.code].error,
      code: this.code,
      message: this.message,
      ...this.extra,
    };
  }
}

export function taskDoesNotExist(id: number): ApiError {
  return new ApiError('TASK_DOES_NOT_EXIST', `Task ${id} does not exist`, {
    extra: { id, status: 'TASK_DOES_NOT_EXIST' },
  });
}
