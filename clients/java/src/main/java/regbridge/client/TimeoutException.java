package regbridge.client;

/**
 * One HTTP exchange got no answer in time, or {@code waitForTask} / {@code processFmScript} saw
 * the task still RUNNING at its time limit ({@link #getTaskId()} is then set: the task may still
 * end). Not {@code java.util.concurrent.TimeoutException}: import this one by its full name if a
 * file uses both.
 */
public class TimeoutException extends RestException {
    private static final long serialVersionUID = 1L;

    private final Long taskId;

    public TimeoutException(String message, Long taskId, Throwable cause) {
        super(message, 0, "TIMEOUT", null, null, cause);
        this.taskId = taskId;
    }

    /** The task waited for, or null when one HTTP exchange timed out. */
    public Long getTaskId() {
        return taskId;
    }
}
