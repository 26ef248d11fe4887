package regbridge.client;

/**
 * Every error the client throws. {@link #getStatusCode()} is the HTTP status (0 when there was no
 * answer, or when the error is a task's outcome), {@link #getCode()} the device's error code
 * ({@code INVALID_CREDENTIALS}, {@code UNAUTHORIZED}, {@code INVALID_REQUEST}, {@code QUEUE_FULL},
 * ...) or one the client assigns ({@code HTTP_ERROR}, {@code INVALID_RESPONSE},
 * {@code CONNECTION_ERROR}, {@code TIMEOUT}, {@code INTERRUPTED}, {@code TASK_FAILURE},
 * {@code UNEXPECTED_STATUS}).
 */
public class RestException extends Exception {
    private static final long serialVersionUID = 1L;

    private final int statusCode;
    private final String code;
    private final String serverMessage;
    private final Long retryAfterSeconds;

    public RestException(String message, int statusCode, String code) {
        this(message, statusCode, code, null, null, null);
    }

    public RestException(
            String message, int statusCode, String code, String serverMessage, Long retryAfterSeconds, Throwable cause) {
        super(message, cause);
        this.statusCode = statusCode;
        this.code = code;
        this.serverMessage = serverMessage;
        this.retryAfterSeconds = retryAfterSeconds;
    }

    /** The HTTP status of the answer; 0 when there was none. */
    public int getStatusCode() {
        return statusCode;
    }

    /** The device's error code, or the client's when the device sent none. */
    public String getCode() {
        return code;
    }

    /** The device's {@code message}, when it sent one; else null. */
    public String getServerMessage() {
        return serverMessage;
    }

    /** Seconds from a {@code Retry-After} header (429 TOO_MANY_ATTEMPTS, 503 QUEUE_FULL); else null. */
    public Long getRetryAfterSeconds() {
        return retryAfterSeconds;
    }
}
