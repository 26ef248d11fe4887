package regbridge.client;

/** The id is unknown or was evicted from the device's retention window (404 TASK_DOES_NOT_EXIST). */
public class TaskDoesNotExistException extends RestException {
    private static final long serialVersionUID = 1L;

    private final long taskId;

    public TaskDoesNotExistException(long taskId, String serverMessage) {
        super(
                serverMessage != null ? serverMessage : "Task " + taskId + " does not exist",
                404,
                "TASK_DOES_NOT_EXIST",
                serverMessage,
                null,
                null);
        this.taskId = taskId;
    }

    public long getTaskId() {
        return taskId;
    }
}
