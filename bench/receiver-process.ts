import { startReceiver } from "../test/helpers/webhook-receiver.js";

/**
 * A webhook receiver in a process of its own, as a real one is (another service, another host):
 * what it costs to answer a delivery is not Wharf's to pay on Wharf's event loop. Prints its base
 * URL, then answers each line on standard input with how many requests it has received.
 *
 *   started by bench/lifecycle-upload.ts
 */
const receiver = await startReceiver();
process.stdout.write(`${receiver.base}\n`);
process.stdin.setEncoding("utf8");
process.stdin.on("data", () => process.stdout.write(`${receiver.received.length}\n`));
process.stdin.on("end", () => void receiver.close().then(() => process.exit(0)));
