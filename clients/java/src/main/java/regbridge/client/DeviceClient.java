package regbridge.client;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The client of a regbridge device (or of the vendor's own device), with the members of the
 * vendor's Java client class: the two constructors, {@link #processFmScript}, {@link #vendorScript}
 * and {@link #getTaskStatus}, plus {@link #waitForTask} (the vendor's asynchronous flow) and
 * {@link #cancelTask}. JDK only (Java 11+). Thread-safe: one instance may serve many threads.
 *
 * <p>With credentials, the client authenticates lazily (the first call fetches a token with
 * {@code GET /api/authenticate} and a JSON body, as the vendor's client does) and, when a call is
 * answered 401 (the token expired), fetches a fresh token once and sends the call again.
 */
public class DeviceClient {
    /** How long the device is asked to hold {@code POST /api/fm-script} before it answers 202. */
    private static final long FM_SCRIPT_WAIT_MS = 60_000;
    /** The longest long poll the device allows ({@code GET /api/tasks/{id}?waitMs=}). */
    private static final long LONG_POLL_MS = 30_000;
    /** Pause between two polls that both found the task RUNNING (a device that ignores waitMs). */
    private static final long POLL_INTERVAL_MS = 250;
    /** waitForTask and processFmScript give up (TimeoutException) on a task RUNNING this long. */
    private static final long WAIT_LIMIT_MS = 600_000;

    private final Transport transport;
    private final String userName;
    private final String password;
    private final Object authLock = new Object();
    private volatile String token;

    /** No credentials and no Authorization header: for a device started with {@code --auth off}. */
    public DeviceClient(String ip, int port) {
        this(ip, port, null, null, false);
    }

    /** Authenticates lazily with these credentials, and once more after a 401 (expired token). */
    public DeviceClient(String ip, int port, String userName, String password) {
        this(ip, port, userName, password, true);
    }

    private DeviceClient(String ip, int port, String userName, String password, boolean withCredentials) {
        if (ip == null || ip.isEmpty()) throw new IllegalArgumentException("ip must not be empty");
        if (port < 1 || port > 65535) throw new IllegalArgumentException("invalid port " + port);
        if (withCredentials && (userName == null || userName.isEmpty() || password == null)) {
            throw new IllegalArgumentException("userName must be non-empty and come with a password");
        }
        this.transport = new Transport(ip, port);
        this.userName = userName;
        this.password = password;
    }

    /**
     * Runs the script and returns its report ({@code POST /api/fm-script}); the report may be empty,
     * and is null only if a device answers FINISHED without one. If the device has not finished it
     * within 60 s it answers 202, and the call continues as {@link #waitForTask} does.
     *
     * @throws TaskProcessingException the task ended FAILURE
     * @throws TimeoutException the task was still RUNNING after 10 minutes (it may still end)
     * @throws RestException any other refusal (400 INVALID_REQUEST for an empty script, 413, 503, ...)
     */
    public String processFmScript(String script) throws RestException {
        long deadline = System.currentTimeMillis() + WAIT_LIMIT_MS;
        Transport.Response res = call("POST", "/api/fm-script?timeoutMs=" + FM_SCRIPT_WAIT_MS,
                body("fmScript", script), FM_SCRIPT_WAIT_MS);
        if (res.status == 200) {
            TasksResponse task = Tasks.parse(res);
            if (!TasksResponse.RUNNING.equals(task.getStatus())) return Tasks.outcome(task);
            return pollUntilEnd(task.getId(), deadline);
        }
        if (res.status == 202) return pollUntilEnd(Tasks.acceptedId(res), deadline);
        throw Transport.error(res);
    }

    /**
     * Queues the script ({@code POST /api/vendor-script}) and returns its task id at once. Ids are
     * large (about 1.8e15): keep them in a {@code long}.
     */
    public long vendorScript(String script) throws RestException {
        Transport.Response res = call("POST", "/api/vendor-script", body("vendorScript", script), 0);
        if (res.status != 202 && res.status != 200) throw Transport.error(res);
        return Tasks.acceptedId(res);
    }

    /**
     * The task as the device holds it ({@code GET /api/tasks/{id}}). An unknown or evicted id is not
     * an exception: it returns status {@code TASK_DOES_NOT_EXIST}.
     */
    public TasksResponse getTaskStatus(long id) throws RestException {
        return status(id, 0);
    }

    /**
     * The vendor's asynchronous flow: waits while the task is RUNNING and returns its report once
     * FINISHED. Each poll is a long poll (the device answers as soon as the task ends, or after
     * 30 s).
     *
     * @throws TaskProcessingException the task ended FAILURE
     * @throws TaskDoesNotExistException the id is unknown or was evicted
     * @throws InternalErrorException the device answered a status this client does not know
     * @throws TimeoutException the task was still RUNNING after 10 minutes (it may still end)
     */
    public String waitForTask(long id) throws RestException {
        return pollUntilEnd(id, System.currentTimeMillis() + WAIT_LIMIT_MS);
    }

    /**
     * Cancels a queued task ({@code DELETE /api/tasks/{id}}) and returns it: ended FAILURE, with an
     * error starting {@code CANCELLED}. A running script is never cut.
     *
     * @throws TaskRunningException the task is running (409 TASK_RUNNING)
     * @throws TaskEndedException the task has already ended (409 TASK_ENDED)
     * @throws TaskDoesNotExistException the id is unknown or was evicted (404)
     */
    public TasksResponse cancelTask(long id) throws RestException {
        Transport.Response res = call("DELETE", "/api/tasks/" + id, null, 0);
        if (res.status == 200) return Tasks.parse(res);
        RestException error = Transport.error(res);
        if (res.status == 409 && "TASK_RUNNING".equals(error.getCode())) {
            throw new TaskRunningException(id, error.getServerMessage());
        }
        if (res.status == 409 && "TASK_ENDED".equals(error.getCode())) {
            throw new TaskEndedException(id, Tasks.statusOf(res), error.getServerMessage());
        }
        if (res.status == 404 && "TASK_DOES_NOT_EXIST".equals(error.getCode())) {
            throw new TaskDoesNotExistException(id, error.getServerMessage());
        }
        throw error;
    }

    private TasksResponse status(long id, long waitMs) throws RestException {
        String query = waitMs > 0 ? "?waitMs=" + waitMs : "";
        Transport.Response res = call("GET", "/api/tasks/" + id + query, null, waitMs);
        if (res.status == 200) return Tasks.parse(res);
        RestException error = Transport.error(res);
        // A 404 with another code (a wrong path: ROUTE_NOT_FOUND) is still an error.
        if (res.status == 404 && "TASK_DOES_NOT_EXIST".equals(error.getCode())) {
            return TasksResponse.doesNotExist(id);
        }
        throw error;
    }

    private String pollUntilEnd(long id, long deadline) throws RestException {
        for (;;) {
            long left = deadline - System.currentTimeMillis();
            TasksResponse task = status(id, Math.max(0, Math.min(LONG_POLL_MS, left)));
            if (!TasksResponse.RUNNING.equals(task.getStatus())) return Tasks.outcome(task);
            left = deadline - System.currentTimeMillis();
            if (left <= 0) {
                throw new TimeoutException("Task " + id + " still RUNNING after " + WAIT_LIMIT_MS
                        + " ms; it may still end, see GET /api/tasks/" + id, id, null);
            }
            try {
                Thread.sleep(Math.min(POLL_INTERVAL_MS, left));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new RestException("interrupted while waiting for task " + id, 0, "INTERRUPTED", null, null, e);
            }
        }
    }

    /** One API call with the bearer token; after a 401 the token is renewed and the call sent once more. */
    private Transport.Response call(String method, String path, String jsonBody, long serverWaitMs)
            throws RestException {
        if (userName == null) return transport.send(method, path, jsonBody, null, serverWaitMs);
        String used = currentToken();
        Transport.Response res = transport.send(method, path, jsonBody, used, serverWaitMs);
        if (res.status != 401) return res;
        // The device checks the token before it reads the body, so the refused call created nothing.
        return transport.send(method, path, jsonBody, renewToken(used), serverWaitMs);
    }

    private String currentToken() throws RestException {
        String current = token;
        if (current != null) return current;
        synchronized (authLock) {
            if (token == null) token = fetchToken();
            return token;
        }
    }

    /** Threads that met the same expired token renew it once. */
    private String renewToken(String stale) throws RestException {
        synchronized (authLock) {
            if (token == null || stale.equals(token)) token = fetchToken();
            return token;
        }
    }

    private String fetchToken() throws RestException {
        Map<String, String> credentials = new LinkedHashMap<>();
        credentials.put("userName", userName);
        credentials.put("password", password);
        Transport.Response res = transport.send("GET", "/api/authenticate", Json.writeObject(credentials), null, 0);
        if (res.status != 200) throw Transport.error(res);
        Object value = Transport.object(res).get("token");
        if (!(value instanceof String) || ((String) value).isEmpty()) throw Transport.invalid(res, "no token");
        return (String) value;
    }

    private static String body(String field, String script) {
        Map<String, String> fields = new LinkedHashMap<>();
        fields.put(field, script);
        return Json.writeObject(fields);
    }
}
