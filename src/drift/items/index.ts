import type { ItemType } from "../model.js";
import { configKeyHandler } from "./config-key.js";
import { directoryHandler } from "./directory.js";
import { fileHandler } from "./file.js";
import type { ItemHandler } from "./handler.js";
import { packageHandler } from "./package.js";
import { processHandler } from "./process.js";

/** A handler whose desired and actual states only it reads: the engine passes them back untouched. */
const opaque = <D, A>(handler: ItemHandler<D, A>) => handler as unknown as ItemHandler;

/** The handler of each item type. */
export const HANDLERS: Readonly<Record<ItemType, ItemHandler>> = {
  file: opaque(fileHandler),
  directory: opaque(directoryHandler),
  package: opaque(packageHandler),
  "config-key": opaque(configKeyHandler),
  process: opaque(processHandler),
};
