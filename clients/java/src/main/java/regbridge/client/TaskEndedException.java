package regbridge.client;

/**
 * {@code cancelTask} on a task that has already ended (409 TASK_ENDED); {@link #getStatus()} is
 * how it ended (FINISHED or FAILURE).
 */
public class TaskEndedException extends RestException {
    private static final long serialVersionUID = 1L;

    private final long taskId;
    private final String status;

    public TaskEndedException(long taskId, String status, String serverMessage) {
        super(
                serverMessage != null ? serverMessage : "Task " + taskId + " has ended " + status,
                409,
                "TASK_ENDED",
                serverMessage,
                null,
                null);
        this.taskId = taskId;
        this.status = status;
    }

    public long getTaskId() {
        return taskId;
    }

    /** FINISHED or FAILURE, as the device reported it (null if it sent none). */
    public String getStatus() {
        return status;
    }
}
