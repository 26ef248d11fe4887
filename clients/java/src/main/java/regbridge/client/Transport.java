package regbridge.client;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpConnectTimeoutException;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpTimeoutException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Map;

/**
 * One HTTP exchange over the JDK's {@link HttpClient}, every failure turned into a
 * {@link RestException}. {@code HttpRequest.Builder.method("GET", ofString(...))} sends a GET with
 * a body, which the vendor's authenticate call is.
 */
final class Transport {
    /** Time allowed to open a connection. */
    private static final Duration CONNECT_TIMEOUT = Duration.ofSeconds(10);
    /** Time allowed for one exchange, on top of the server-side wait it asked for. */
    private static final long REQUEST_TIMEOUT_MS = 30_000;

    private final String origin;
    private final HttpClient http;

    Transport(String ip, int port) {
        String host = ip.indexOf(':') >= 0 && !ip.startsWith("[") ? "[" + ip + "]" : ip;
        this.origin = "http://" + host + ":" + port;
        // HTTP/1.1: the default (HTTP/2) would try an h2c upgrade on every plain-http connection.
        this.http = HttpClient.newBuilder()
                .version(HttpClient.Version.HTTP_1_1)
                .connectTimeout(CONNECT_TIMEOUT)
                .build();
    }

    /** The status, the text of the body (UTF-8) and the Retry-After header of one answer. */
    static final class Response {
        final int status;
        final String text;
        final String retryAfter;

        Response(int status, String text, String retryAfter) {
            this.status = status;
            this.text = text;
            this.retryAfter = retryAfter;
        }
    }

    /**
     * @param jsonBody the request body, or null for none
     * @param bearer the token for the Authorization header, or null for none
     * @param serverWaitMs how long the device was asked to hold the answer (long poll), added to the time allowed
     */
    Response send(String method, String path, String jsonBody, String bearer, long serverWaitMs)
            throws RestException {
        String what = method + " " + origin + path;
        HttpRequest.Builder request = HttpRequest.newBuilder(URI.create(origin + path))
                .timeout(Duration.ofMillis(REQUEST_TIMEOUT_MS + serverWaitMs))
                .header("Accept", "application/json");
        if (bearer != null) request.header("Authorization", "Bearer " + bearer);
        if (jsonBody != null) {
            request.header("Content-Type", "application/json");
            request.method(method, HttpRequest.BodyPublishers.ofString(jsonBody, StandardCharsets.UTF_8));
        } else {
            request.method(method, HttpRequest.BodyPublishers.noBody());
        }
        HttpResponse<byte[]> answer;
        try {
            answer = http.send(request.build(), HttpResponse.BodyHandlers.ofByteArray());
        } catch (HttpConnectTimeoutException e) {
            throw new ConnectionException(what + ": connect timed out", e);
        } catch (HttpTimeoutException e) {
            throw new TimeoutException(what + ": no answer in time", null, e);
        } catch (IOException e) {
            String reason = e.getMessage() != null ? e.getMessage() : e.getClass().getSimpleName();
            throw new ConnectionException(what + ": " + reason, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new RestException(what + ": interrupted", 0, "INTERRUPTED", null, null, e);
        }
        String text = new String(answer.body(), StandardCharsets.UTF_8);
        return new Response(answer.statusCode(), text, answer.headers().firstValue("Retry-After").orElse(null));
    }

    /** The body as a JSON object; a 2xx answer that is not one is INVALID_RESPONSE, an error answer HTTP_ERROR. */
    static Map<String, Object> object(Response res) throws RestException {
        Object value;
        try {
            value = Json.parse(res.text);
        } catch (Json.JsonException e) {
            throw new RestException(
                    "HTTP " + res.status + ": answer is not JSON (" + e.getMessage() + ")",
                    res.status,
                    res.status >= 400 ? "HTTP_ERROR" : "INVALID_RESPONSE",
                    null,
                    null,
                    e);
        }
        if (!(value instanceof Map)) {
            throw invalid(res, "not a JSON object");
        }
        @SuppressWarnings("unchecked")
        Map<String, Object> object = (Map<String, Object>) value;
        return object;
    }

    static RestException invalid(Response res, String why) {
        return new RestException("HTTP " + res.status + ": unexpected answer body (" + why + ")", res.status,
                "INVALID_RESPONSE");
    }

    /** The RestException for a non-2xx answer, carrying the device's code and message when it sent an error body. */
    static RestException error(Response res) {
        String code = "HTTP_ERROR";
        String message = null;
        try {
            Object value = Json.parse(res.text);
            if (value instanceof Map) {
                Object c = ((Map<?, ?>) value).get("code");
                Object m = ((Map<?, ?>) value).get("message");
                if (c instanceof String) code = (String) c;
                if (m instanceof String) message = (String) m;
            }
        } catch (Json.JsonException notJson) {
            // e.g. an HTML page from a proxy: the status says enough.
        }
        Long retryAfter = null;
        if (res.retryAfter != null && res.retryAfter.trim().matches("\\d{1,9}")) {
            retryAfter = Long.valueOf(res.retryAfter.trim());
        }
        String text = message != null ? "HTTP " + res.status + " " + code + ": " + message : "HTTP " + res.status;
        return new RestException(text, res.status, code, message, retryAfter, null);
    }
}
