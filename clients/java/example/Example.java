import regbridge.client.ConnectionException;
import regbridge.client.DeviceClient;
import regbridge.client.RestException;
import regbridge.client.TaskDoesNotExistException;
import regbridge.client.TaskEndedException;
import regbridge.client.TaskProcessingException;
import regbridge.client.TasksResponse;

/** Usage: java Example <ip> <port> <userName> <password> */
public class Example {
    public static void main(String[] args) throws Exception {
        if (args.length != 4) {
            System.err.println("usage: java Example <ip> <port> <userName> <password>");
            System.exit(2);
        }
        DeviceClient client = new DeviceClient(args[0], Integer.parseInt(args[1]), args[2], args[3]);
        try {
            run(client);
        } catch (ConnectionException e) {
            // No HTTP answer at all: say where, and why (the cause: refused, unknown host, TLS).
            System.err.println("cannot reach the device at " + args[0] + ":" + args[1] + ": " + e.getMessage()
                    + (e.getCause() == null ? "" : " (" + e.getCause() + ")"));
            System.exit(1);
        }
    }

    static void run(DeviceClient client) throws Exception {
        // Synchronous: runs the script, returns its report.
        String report = client.processFmScript("PRINT receipt 0042\r\nPRINT 2 x coffee   5.80\r\nPRINT total       5.80");
        System.out.println("processFmScript:\n" + report);

        // The vendor's asynchronous flow: queue, keep the id (a long), wait for the end.
        long id = client.vendorScript("SLEEP 200\nPRINT Z report: 3 receipts");
        System.out.println("queued task " + id + ": " + client.getTaskStatus(id).getStatus());
        System.out.println("waitForTask: " + client.waitForTask(id));

        // Reading a status never throws for an unknown id: it is a status.
        TasksResponse task = client.getTaskStatus(id);
        switch (task.getStatus()) {
            case TasksResponse.RUNNING: System.out.println("still running"); break;
            case TasksResponse.FINISHED: System.out.println("FINISHED, report: " + task.getReport()); break;
            case TasksResponse.FAILURE: System.out.println("failed: " + task.getError()); break;
            case TasksResponse.TASK_DOES_NOT_EXIST: System.out.println("gone"); break;
            default: System.out.println("unknown status " + task.getStatus());
        }

        // Cancel: a task still queued ends FAILURE, its error starting CANCELLED; a running one is never cut.
        long busy = client.vendorScript("SLEEP 2000\nPRINT drawer counted");
        long queued = client.vendorScript("PRINT not needed any more");
        System.out.println("cancelled: " + client.cancelTask(queued).getError());
        try {
            client.cancelTask(queued);
        } catch (TaskEndedException e) {
            System.out.println("cancel again: " + e.getCode() + " (" + e.getStatus() + ")");
        }
        System.out.println("the running one still ends: " + client.waitForTask(busy));

        // Failures are exceptions, all of them RestException.
        try {
            client.waitForTask(client.vendorScript("PRINT start\nFAIL printer offline"));
        } catch (TaskProcessingException e) {
            System.out.println("task " + e.getTaskId() + " failed: " + e.getTaskError());
        }
        try {
            client.waitForTask(1);
        } catch (TaskDoesNotExistException e) {
            System.out.println("task " + e.getTaskId() + ": " + e.getCode());
        }
        try {
            client.processFmScript("");
        } catch (RestException e) {
            System.out.println(e.getStatusCode() + " " + e.getCode() + ": " + e.getServerMessage());
        }
    }
}
