import { setFlagsFromString } from "node:v8";

/**
 * Lets V8 free short-lived Buffers in a young-generation collection again, as it did up to Node.js
 * 23. Every socket read is a fresh Buffer whose bytes live outside the JavaScript heap; a server
 * relaying a large body (a download from an object store, an upload on its way to disk) makes many
 * of them and few other objects. V8 13.6 (Node.js 24) raised `scavenger-max-new-space-capacity-mb`
 * from 8 to 32, which moved the point where such Buffers start a young collection from 32 MB to
 * 128 MB: above the 64 MB at which outside-heap memory starts a full one. Each 100 MiB download
 * then cost two to four full collections of the whole heap (50-100 ms of marking each) instead of
 * a few of the young generation (nodejs/node issues 61967 and 63863; bench/object-store.ts).
 *
 * Set at run time, so that every way of starting the server has it; a value the operator passed
 * on the command line wins. On Node.js 22 this is already the default.
 */
const FLAG = "--scavenger-max-new-space-capacity-mb";

/** False, changing nothing, when the command line already sets it. */
export function collectSocketBuffersYoung(execArgv: readonly string[] = process.execArgv): boolean {
  if (execArgv.some((arg) => arg === FLAG || arg.startsWith(`${FLAG}=`))) return false;
  setFlagsFromString(`${FLAG}=8`);
  return true;
}
