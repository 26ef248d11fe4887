package regbridge.client;

/** No HTTP answer: refused or reset connection, unknown host, TLS failure. */
public class ConnectionException extends RestException {
    private static final long serialVersionUID = 1L;

    public ConnectionException(String message, Throwable cause) {
        super(message, 0, "CONNECTION_ERROR", null, null, cause);
    }
}
