package regbridge.client;

/** The script ran and the task ended FAILURE; {@link #getTaskError()} is the task's {@code error}. */
public class TaskProcessingException extends RestException {
    private static final long serialVersionUID = 1L;

    private final long taskId;
    private final String taskError;

    public TaskProcessingException(long taskId, String taskError) {
        super("Task " + taskId + " failed: " + taskError, 0, "TASK_FAILURE");
        this.taskId = taskId;
        this.taskError = taskError;
    }

    public long getTaskId() {
        return taskId;
    }

    public String getTaskError() {
        return taskError;
    }
}
