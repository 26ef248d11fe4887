package regbridge.client;

/**
 * A task as {@code getTaskStatus} and {@code cancelTask} return it: the device's task body, or, for
 * an unknown or evicted id, only the id and the status {@code TASK_DOES_NOT_EXIST}.
 */
public final class TasksResponse {
    public static final String RUNNING = "RUNNING";
    public static final String FINISHED = "FINISHED";
    public static final String FAILURE = "FAILURE";
    public static final String TASK_DOES_NOT_EXIST = "TASK_DOES_NOT_EXIST";

    private final long id;
    private final String status;
    private final String report;
    private final String error;
    private final String queuedAt;
    private final String startedAt;
    private final String finishedAt;

    TasksResponse(
            long id, String status, String report, String error, String queuedAt, String startedAt, String finishedAt) {
        this.id = id;
        this.status = status;
        this.report = report;
        this.error = error;
        this.queuedAt = queuedAt;
        this.startedAt = startedAt;
        this.finishedAt = finishedAt;
    }

    static TasksResponse doesNotExist(long id) {
        return new TasksResponse(id, TASK_DOES_NOT_EXIST, null, null, null, null, null);
    }

    public long getId() {
        return id;
    }

    /**
     * RUNNING (queued or running), FINISHED, FAILURE or TASK_DOES_NOT_EXIST. A String, not an
     * enum, so a status a newer device may add is passed through rather than lost.
     */
    public String getStatus() {
        return status;
    }

    /** The report when FINISHED (may be empty); else null. */
    public String getReport() {
        return report;
    }

    /** The error text when FAILURE; else null. */
    public String getError() {
        return error;
    }

    /** ISO-8601 instant; null only for TASK_DOES_NOT_EXIST. */
    public String getQueuedAt() {
        return queuedAt;
    }

    /** ISO-8601 instant once the script started; else null. */
    public String getStartedAt() {
        return startedAt;
    }

    /** ISO-8601 instant once the task ended; else null. */
    public String getFinishedAt() {
        return finishedAt;
    }

    @Override
    public String toString() {
        StringBuilder out = new StringBuilder("TasksResponse{id=").append(id).append(", status=").append(status);
        if (report != null) out.append(", report=").append(report.length()).append(" chars");
        if (error != null) out.append(", error=").append(error);
        return out.append('}').toString();
    }
}
