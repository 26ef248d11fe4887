// A consumer's plain ESM script: the client from the installed package, one script on a device.
// usage: node client.mjs <port> <user> <password>
import { DeviceClient, TaskDoesNotExistException } from 'regbridge';

const [port, user, password] = process.argv.slice(2);
const client = new DeviceClient('127.0.0.1', Number(port), user, password);
try {
  const report = await client.processFmScript('PRINT from a consumer\nX REPORT');
  const missing = await client.waitForTask(1).catch((error) => error);
  console.log(
    JSON.stringify({ report, missing: missing instanceof TaskDoesNotExistException ? missing.code : 'no' }),
  );
} finally {
  await client.close();
}
