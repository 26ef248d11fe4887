// The same from CommonJS: require() of the package's ES modules (Node 20.19+, 22.12+).
const { DeviceClient } = require('regbridge');

const [port, user, password] = process.argv.slice(2);
const client = new DeviceClient('127.0.0.1', Number(port), user, password);
client
  .vendorScript('PRINT from commonjs')
  .then((id) => client.waitForTask(id))
  .then((report) => console.log(JSON.stringify({ report })))
  .finally(() => client.close());
