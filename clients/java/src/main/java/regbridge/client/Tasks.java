package regbridge.client;

import java.util.Map;

/** Reading the device's task bodies, and the vendor's flow's verdict on an ended task. */
final class Tasks {
    private Tasks() {}

    /** A task body: {@code {"id", "status", "report"?, "error"?, "queuedAt", "startedAt"?, "finishedAt"?}}. */
    static TasksResponse parse(Transport.Response res) throws RestException {
        Map<String, Object> body = Transport.object(res);
        return new TasksResponse(
                id(res, body),
                requiredString(res, body, "status"),
                optionalString(res, body, "report"),
                optionalString(res, body, "error"),
                optionalString(res, body, "queuedAt"),
                optionalString(res, body, "startedAt"),
                optionalString(res, body, "finishedAt"));
    }

    /** The id of {@code {"id", "status": "RUNNING"}} (202) or of a whole task (200, an Idempotency-Key replay). */
    static long acceptedId(Transport.Response res) throws RestException {
        return id(res, Transport.object(res));
    }

    /** The {@code status} an error body carries (TASK_ENDED), or null. */
    static String statusOf(Transport.Response res) {
        try {
            Object status = Transport.object(res).get("status");
            return status instanceof String ? (String) status : null;
        } catch (RestException notAnObject) {
            return null;
        }
    }

    /** FINISHED gives the report; every other status is thrown as its exception. */
    static String outcome(TasksResponse task) throws RestException {
        switch (task.getStatus()) {
            case TasksResponse.FINISHED:
                return task.getReport();
            case TasksResponse.FAILURE:
                throw new TaskProcessingException(task.getId(), task.getError() != null ? task.getError() : "");
            case TasksResponse.TASK_DOES_NOT_EXIST:
                throw new TaskDoesNotExistException(task.getId(), null);
            default:
                throw new InternalErrorException(task.getId(), task.getStatus());
        }
    }

    private static long id(Transport.Response res, Map<String, Object> body) throws RestException {
        Object id = body.get("id");
        // Json reads every integer that fits as a Long; ids are below 2^53.
        if (!(id instanceof Long) || (Long) id <= 0) throw Transport.invalid(res, "id is not a positive integer");
        return (Long) id;
    }

    private static String requiredString(Transport.Response res, Map<String, Object> body, String name)
            throws RestException {
        Object value = body.get(name);
        if (!(value instanceof String)) throw Transport.invalid(res, name + " is not a string");
        return (String) value;
    }

    private static String optionalString(Transport.Response res, Map<String, Object> body, String name)
            throws RestException {
        Object value = body.get(name);
        if (value != null && !(value instanceof String)) throw Transport.invalid(res, name + " is not a string");
        return (String) value;
    }
}
