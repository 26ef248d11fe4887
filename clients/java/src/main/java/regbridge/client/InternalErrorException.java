package regbridge.client;

/** The device answered a task status this client does not know; {@link #getStatus()} names it. */
public class InternalErrorException extends RestException {
    private static final long serialVersionUID = 1L;

    private final long taskId;
    private final String status;

    public InternalErrorException(long taskId, String status) {
        super("Task " + taskId + " has unexpected status " + status, 0, "UNEXPECTED_STATUS");
        this.taskId = taskId;
        this.status = status;
    }

    public long getTaskId() {
        return taskId;
    }

    public String getStatus() {
        return status;
    }
}
