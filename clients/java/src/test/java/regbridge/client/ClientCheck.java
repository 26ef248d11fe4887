package regbridge.client;

import java.io.PrintStream;
import java.math.BigDecimal;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The Java client against a real device: test/cli/java-client.test.ts compiles this with the client,
 * starts devices, runs one scenario per JVM and compares what it prints line by line. Usage:
 * {@code ClientCheck <scenario> <port> [userName password] [extra...]}. No test framework, on
 * purpose: the client is JDK only, and so is its check. In the package of the client so that the
 * JSON reader and writer can be checked directly.
 */
public final class ClientCheck {
    private static final PrintStream out = new PrintStream(System.out, true, StandardCharsets.UTF_8);

    public static void main(String[] args) throws Exception {
        String scenario = args[0];
        List<String> rest = Arrays.asList(args).subList(1, args.length);
        switch (scenario) {
            case "json": json(); break;
            case "sync": sync(client(rest)); break;
            case "async": async(client(rest)); break;
            case "evicted": evicted(client(rest)); break;
            case "failure": failure(client(rest)); break;
            case "credentials": credentials(rest); break;
            case "expiry": expiry(client(rest), Integer.parseInt(rest.get(3)), rest.get(1), rest.get(2)); break;
            case "unicode": unicode(client(rest)); break;
            case "open": open(new DeviceClient("127.0.0.1", Integer.parseInt(rest.get(0)))); break;
            case "refused": refused(Integer.parseInt(rest.get(0))); break;
            case "cancel": cancel(client(rest)); break;
            default: throw new IllegalArgumentException("unknown scenario " + scenario);
        }
    }

    private static DeviceClient client(List<String> rest) {
        return new DeviceClient("127.0.0.1", Integer.parseInt(rest.get(0)), rest.get(1), rest.get(2));
    }

    /** A string with its line breaks, tabs, quotes and backslashes visible; null as null. */
    private static String q(String s) {
        if (s == null) return "null";
        return '"' + s.replace("\\", "\\\\").replace("\"", "\\\"").replace("\r", "\\r").replace("\n", "\\n")
                .replace("\t", "\\t") + '"';
    }

    /** What an exception is, in one line: class, status, code and the fields of its kind. */
    private static String describe(RestException e) {
        StringBuilder line = new StringBuilder(e.getClass().getSimpleName())
                .append(' ').append(e.getStatusCode()).append(' ').append(e.getCode());
        if (e instanceof TaskProcessingException) line.append(" taskError=").append(q(((TaskProcessingException) e).getTaskError()));
        if (e instanceof InternalErrorException) line.append(" status=").append(((InternalErrorException) e).getStatus());
        line.append(" extendsRestException=").append(e instanceof RestException);
        return line.toString();
    }

    private interface Call {
        Object run() throws RestException;
    }

    /** Runs a call that should fail and prints how it failed (or what it returned instead). */
    private static RestException expectFailure(String label, Call call) {
        try {
            Object value = call.run();
            out.println(label + ": returned " + value);
            return null;
        } catch (RestException e) {
            out.println(label + ": " + describe(e));
            return e;
        }
    }

    private static void json() {
        Map<?, ?> parsed = (Map<?, ?>) Json.parse(
                " {\"s\":\"q\\\" b\\\\ s\\/ \\b\\f\\n\\r\\t \\u00e9 \\u20ac \\ud83d\\ude00 raw:é€😀\","
                        + "\"id\":1795335940841663,\"neg\":-0,\"big\":12345678901234567890,\"dec\":1.5e3,"
                        + "\"list\":[true,false,null,{}],\"empty\":\"\"} ");
        String s = (String) parsed.get("s");
        out.println("escapes: " + s.equals("q\" b\\ s/ \b\f\n\r\t é € \uD83D\uDE00 raw:é€😀"));
        out.println("surrogate pair: " + (s.codePointAt(s.indexOf('\uD83D')) == 0x1F600));
        out.println("id: " + parsed.get("id").getClass().getSimpleName() + " " + parsed.get("id"));
        out.println("neg: " + parsed.get("neg") + ", big: " + parsed.get("big").getClass().getSimpleName()
                + ", dec: " + ((BigDecimal) parsed.get("dec")).intValueExact());
        out.println("list: " + parsed.get("list") + ", empty: " + q((String) parsed.get("empty")));
        out.println("order: " + parsed.keySet());
        for (String bad : new String[] {
                "{\"a\":1,}", "\"open", "\"bad \\x\"", "\"tab\tin string\"", "01", "{\"a\" 1}", "[1 2]", "\"\\u12\"",
                "", "nul", "-", "1.", "1e", "[" .repeat(100)}) {
            try {
                Json.parse(bad);
                out.println("accepted: " + bad);
            } catch (Json.JsonException e) {
                out.println("refused: " + e.getMessage().replaceAll(" at offset \\d+", ""));
            }
        }
        Map<String, String> fields = new LinkedHashMap<>();
        fields.put("script", "a\"b\\c\r\n\t\u0001\u001f é€😀 \uD800 x\uDC00 /");
        fields.put("none", null);
        String written = Json.writeObject(fields);
        out.println("written: " + written);
        Map<?, ?> back = (Map<?, ?>) Json.parse(written);
        out.println("round trip: " + fields.equals(back));
    }

    private static void sync(DeviceClient client) throws RestException {
        out.println("report: " + q(client.processFmScript("PRINT a\r\nPRINT b")));
        out.println("empty: " + q(client.processFmScript("# nothing to print\nSLEEP 0")));
        out.println("slow: " + q(client.processFmScript("SLEEP 200\nPRINT late")));
        expectFailure("blank script", () -> client.processFmScript("  "));
        TaskProcessingException unknown = (TaskProcessingException) expectFailure("unknown command",
                () -> client.processFmScript("PRINT x\nFROB 1"));
        out.println("unknown command error: " + unknown.getTaskError());
    }

    private static void async(DeviceClient client) throws RestException {
        long id = client.vendorScript("PRINT hello\r\n# a comment\nSLEEP 50\nprint world");
        out.println("id is a long beyond int: " + (id > Integer.MAX_VALUE));
        out.println("waitForTask: " + q(client.waitForTask(id)));
        TasksResponse task = client.getTaskStatus(id);
        out.println("status: " + (task.getId() == id) + " " + task.getStatus() + " report=" + q(task.getReport())
                + " error=" + q(task.getError()) + " times=" + (task.getQueuedAt() != null)
                + (task.getStartedAt() != null) + (task.getFinishedAt() != null));
        long slow = client.vendorScript("SLEEP 400");
        out.println("later id is larger: " + (slow > id));
        TasksResponse running = client.getTaskStatus(slow);
        out.println("while running: " + running.getStatus() + " report=" + q(running.getReport())
                + " finishedAt=" + running.getFinishedAt());
        out.println("then: " + q(client.waitForTask(slow)));
        long unknown = slow + 1_000_000;
        TasksResponse missing = client.getTaskStatus(unknown);
        out.println("unknown id: " + (missing.getId() == unknown) + " " + missing.getStatus());
        RestException e = expectFailure("waitForTask(unknown)", () -> client.waitForTask(unknown));
        out.println("taskId: " + (((TaskDoesNotExistException) e).getTaskId() == unknown));
    }

    private static void evicted(DeviceClient client) throws RestException {
        long first = client.vendorScript("PRINT one");
        out.println("first: " + q(client.waitForTask(first)));
        out.println("second: " + q(client.processFmScript("PRINT two")));
        out.println("first now: " + client.getTaskStatus(first).getStatus());
        RestException e = expectFailure("waitForTask(first)", () -> client.waitForTask(first));
        out.println("taskId: " + (((TaskDoesNotExistException) e).getTaskId() == first));
    }

    private static void failure(DeviceClient client) throws RestException {
        long id = client.vendorScript("PRINT before\nFAIL paper jam\nPRINT never");
        RestException e = expectFailure("waitForTask", () -> client.waitForTask(id));
        out.println("taskId: " + (((TaskProcessingException) e).getTaskId() == id));
        TasksResponse task = client.getTaskStatus(id);
        out.println("status: " + task.getStatus() + " error=" + q(task.getError()) + " report=" + q(task.getReport()));
        expectFailure("processFmScript", () -> client.processFmScript("FAIL drawer open"));
    }

    /** rest: port, userName, a wrong password. */
    private static void credentials(List<String> rest) {
        int port = Integer.parseInt(rest.get(0));
        DeviceClient wrong = new DeviceClient("127.0.0.1", port, rest.get(1), rest.get(2));
        RestException e = expectFailure("wrong password", () -> wrong.vendorScript("PRINT x"));
        out.println("server message: " + e.getServerMessage());
        out.println("password in message: " + e.getMessage().contains(rest.get(2)));
        expectFailure("wrong password, processFmScript", () -> wrong.processFmScript("PRINT x"));
        DeviceClient none = new DeviceClient("127.0.0.1", port);
        expectFailure("no credentials", () -> none.vendorScript("PRINT x"));
    }

    /**
     * rest: proxy port (the client's), userName, password, device port (the probe's). The probe's
     * token is issued after the client's, so once the device refuses it the client's has expired.
     */
    private static void expiry(DeviceClient client, int devicePort, String userName, String password)
            throws Exception {
        out.println("first: " + q(client.processFmScript("PRINT first")));
        HttpClient http = HttpClient.newHttpClient();
        String origin = "http://127.0.0.1:" + devicePort;
        Map<String, String> credentials = new LinkedHashMap<>();
        credentials.put("userName", userName);
        credentials.put("password", password);
        HttpResponse<String> auth = http.send(HttpRequest.newBuilder(URI.create(origin + "/api/authenticate"))
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(Json.writeObject(credentials), StandardCharsets.UTF_8))
                .build(), HttpResponse.BodyHandlers.ofString());
        String probe = (String) ((Map<?, ?>) Json.parse(auth.body())).get("token");
        long deadline = System.currentTimeMillis() + 10_000;
        for (;;) {
            int status = http.send(HttpRequest.newBuilder(URI.create(origin + "/api/tasks"))
                    .header("Authorization", "Bearer " + probe).build(), HttpResponse.BodyHandlers.discarding())
                    .statusCode();
            if (status == 401) break;
            if (System.currentTimeMillis() > deadline) throw new IllegalStateException("the probe token never expired");
            Thread.sleep(50);
        }
        out.println("token expired");
        out.println("second: " + q(client.processFmScript("PRINT second")));
        long id = client.vendorScript("PRINT third");
        out.println("third: " + q(client.waitForTask(id)));
    }

    private static final String UNICODE_SCRIPT = "PRINT Grüße, 5 € für Käse\r\n"
            + "# ein Kommentar: é ü\r\n"
            + "PRINT 日本語のレシート 😀 \"quoted\" back\\slash\ttab\r\n"
            + "PRINT ✓ done\u2028same line";
    private static final String UNICODE_REPORT = "Grüße, 5 € für Käse\n"
            + "日本語のレシート 😀 \"quoted\" back\\slash\ttab\n"
            + "✓ done\u2028same line";

    private static void unicode(DeviceClient client) throws RestException {
        String sync = client.processFmScript(UNICODE_SCRIPT);
        out.println("processFmScript equal: " + UNICODE_REPORT.equals(sync));
        long id = client.vendorScript(UNICODE_SCRIPT);
        String async = client.waitForTask(id);
        out.println("waitForTask equal: " + UNICODE_REPORT.equals(async));
        out.println("getTaskStatus equal: " + UNICODE_REPORT.equals(client.getTaskStatus(id).getReport()));
        String lone = client.processFmScript("PRINT lone \uD800 high and \uDC00 low");
        out.println("lone surrogates kept: " + "lone \uD800 high and \uDC00 low".equals(lone));
        out.println("report:");
        out.println(sync);
    }

    private static void open(DeviceClient client) throws RestException {
        long id = client.vendorScript("PRINT open");
        out.println("async: " + q(client.waitForTask(id)));
        out.println("sync: " + q(client.processFmScript("PRINT sync")));
        out.println("status: " + client.getTaskStatus(id).getStatus());
    }

    /** One script running, one queued behind it: the queued one is cancelled, the running one is not. */
    private static void cancel(DeviceClient client) throws Exception {
        long running = client.vendorScript("SLEEP 1500\nPRINT ran");
        long queued = client.vendorScript("PRINT never");
        long deadline = System.currentTimeMillis() + 10_000;
        while (client.getTaskStatus(running).getStartedAt() == null) {
            if (System.currentTimeMillis() > deadline) throw new IllegalStateException("the first task never started");
            Thread.sleep(20);
        }
        out.println("queued has not started: " + (client.getTaskStatus(queued).getStartedAt() == null));
        TasksResponse cancelled = client.cancelTask(queued);
        out.println("cancelled: " + (cancelled.getId() == queued) + " " + cancelled.getStatus() + " error starts CANCELLED: "
                + cancelled.getError().startsWith("CANCELLED") + " report=" + q(cancelled.getReport()));
        out.println("then reads: " + client.getTaskStatus(queued).getStatus());
        RestException e = expectFailure("waitForTask(cancelled)", () -> client.waitForTask(queued));
        out.println("taskError starts CANCELLED: " + ((TaskProcessingException) e).getTaskError().startsWith("CANCELLED"));
        e = expectFailure("cancel running", () -> client.cancelTask(running));
        out.println("taskId: " + (((TaskRunningException) e).getTaskId() == running));
        out.println("running still ends: " + q(client.waitForTask(running)));
        e = expectFailure("cancel finished", () -> client.cancelTask(running));
        out.println("ended as: " + ((TaskEndedException) e).getStatus() + " taskId: " + (((TaskEndedException) e).getTaskId() == running));
        e = expectFailure("cancel cancelled", () -> client.cancelTask(queued));
        out.println("ended as: " + ((TaskEndedException) e).getStatus());
        long unknown = running + 1_000_000;
        e = expectFailure("cancel unknown", () -> client.cancelTask(unknown));
        out.println("taskId: " + (((TaskDoesNotExistException) e).getTaskId() == unknown));
    }

    private static void refused(int port) {
        DeviceClient client = new DeviceClient("127.0.0.1", port, "u", "p");
        expectFailure("refused", () -> client.vendorScript("PRINT x"));
        DeviceClient open = new DeviceClient("127.0.0.1", port);
        expectFailure("refused, no credentials", () -> open.getTaskStatus(1));
    }
}
