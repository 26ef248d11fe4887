package regbridge.client;

/**
 * {@code cancelTask} on a task that is running (409 TASK_RUNNING): a running script is never cut,
 * it ends by itself.
 */
public class TaskRunningException extends RestException {
    private static final long serialVersionUID = 1L;

    private final long taskId;

    public TaskRunningException(long taskId, String serverMessage) {
        super(
                serverMessage != null ? serverMessage : "Task " + taskId + " is running",
                409,
                "TASK_RUNNING",
                serverMessage,
                null,
                null);
        this.taskId = taskId;
    }

    public long getTaskId() {
        return taskId;
    }
}
