/**
 * The REST form of an error (docs/api.md): a registered code with its HTTP status, the
 * headers it needs and the body `{statusCode, error, code, message}` (+ the code's extra fields).
 * Only the REST layer (routes, auth) speaks in these; the engine's DomainErrors are translated
 * here, once.
 */
import { type DomainError, errorRegistry, type HttpErrorCode, hasHttpStatus } from '../errors.ts';

export interface ErrorBody {
  statusCode: number;
  error: string;
  code: HttpErrorCode;
  message: string;
  [extra: string]: unknown;
}

/** An error the API answers with its registered status and the contract's body. */
export class ApiError extends Error {
  readonly code: HttpErrorCode;
  readonly statusCode: number;
  readonly headers: Record<string, string>;
  readonly extra: Record<string, unknown>;

  constructor(
    code: HttpErrorCode,
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

/**
 * The engine's refusal as REST answers it: the registry's status, `Retry-After` when the engine
 * says when to try again, the details as extra body fields. A domain code that has no REST form
 * reaching REST is a bug, answered as one.
 */
export function fromDomainError(error: DomainError): ApiError {
  if (!hasHttpStatus(error.code)) {
    return new ApiError('INTERNAL_ERROR', `Internal error (${error.code} has no REST form)`);
  }
  return new ApiError(error.code, error.message, {
    extra: { ...error.details },
    ...(error.retryAfterSeconds !== undefined && {
      headers: { 'retry-after': String(Math.max(1, Math.ceil(error.retryAfterSeconds))) },
    }),
  });
}
