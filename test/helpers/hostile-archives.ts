/**
 * Archives that cost a server far more than they cost to send (issue 11 section 7), built in
 * memory in milliseconds.
 */
import { gzipSync } from "node:zlib";
import tar from "tar-stream";

const MiB = 1024 * 1024;
const EMPTY = Buffer.alloc(0);

/** A gzipped TAR of these files, in this order. */
export async function tgzOf(files: ReadonlyArray<{ name: string; content: Buffer }>): Promise<Buffer> {
  const pack = tar.pack();
  for (const { name, content } of files) pack.entry({ name }, content);
  pack.finalize();
  const chunks: Buffer[] = [];
  for await (const chunk of pack as AsyncIterable<Buffer>) chunks.push(chunk);
  return gzipSync(Buffer.concat(chunks));
}

/** A gzipped TAR of `count` empty files: 50,000 of them make about 310 KB. */
export function tgzOfEmptyFiles(count: number): Promise<Buffer> {
  return tgzOf(Array.from({ length: count }, (_, i) => ({ name: `empty-${i}`, content: EMPTY })));
}

/**
 * A gzipped TAR of one file of `size` zero bytes (a whole number of MiB): concatenated gzip
 * members, one per MiB, each about 1 KiB, so 1 GiB of zeros takes about 1 MiB.
 */
export function tgzBomb(size: number, name = "big.bin"): Buffer {
  const zeros = gzipSync(Buffer.alloc(MiB), { level: 9 });
  const members = [gzipSync(tarHeader(name, size))];
  for (let sent = 0; sent < size; sent += MiB) members.push(zeros);
  members.push(gzipSync(Buffer.alloc(1024))); // the end-of-archive blocks
  return Buffer.concat(members);
}

/** A ustar header of a regular file, with its checksum (POSIX.1-1988). */
function tarHeader(name: string, size: number): Buffer {
  const header = Buffer.alloc(512);
  const octal = (value: number, offset: number, length: number) =>
    header.write(`${value.toString(8).padStart(length - 1, "0")}\0`, offset, "latin1");
  header.write(name, 0, "utf8");
  octal(0o644, 100, 8);
  octal(0, 108, 8);
  octal(0, 116, 8);
  octal(size, 124, 12);
  octal(Math.floor(Date.UTC(2024, 0, 1) / 1000), 136, 12);
  header.write("        ", 148, "latin1"); // the checksum counts its own field as spaces
  header.write("0", 156, "latin1");
  header.write("ustar\u000000", 257, "latin1");
  let sum = 0;
  for (const byte of header) sum += byte;
  header.write(`${sum.toString(8).padStart(6, "0")}\0 `, 148, "latin1");
  return header;
}
