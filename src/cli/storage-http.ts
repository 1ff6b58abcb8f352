import type { MoveStateJson } from "../areas/management/storage-move-routes.js";

/** What `wharf storage` asks of a server (storage-http.ts) or of the data directory (storage-local.ts). */
export interface MoveApi {
  /** Sets the feed's storage; true when a move of its blobs began. */
  setStorage(storage: object, move: boolean): Promise<boolean>;
  /** Retries the feed's failed move, resumes an unfinished one, or moves all blobs into its current store. */
  retry(): Promise<void>;
  /** The feed's latest move; undefined when it never moved. */
  state(): Promise<MoveStateJson | undefined>;
  close(): Promise<void>;
}

/** The API of the server running on the data directory (GET/POST /api/storage/move, POST /api/storage). */
export function serverMoveApi(base: string, apiKey: string, feed: string): MoveApi {
  const query = `feed=${encodeURIComponent(feed)}`;
  async function call(method: string, path: string, body?: object): Promise<Response> {
    const url = `${base}${path}`;
    try {
      return await fetch(url, {
        method,
        headers: { "X-ApiKey": apiKey, ...(body === undefined ? {} : { "Content-Type": "application/json" }) },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
    } catch (error) {
      throw new Error(`${base} could not be reached (${error instanceof Error ? error.message : String(error)})`);
    }
  }
  async function expectOk(response: Response): Promise<Response> {
    if (response.status !== 200) throw new Error(`the server answered ${response.status}: ${await response.text()}`);
    return response;
  }
  return {
    async setStorage(storage, move) {
      const response = await expectOk(await call("POST", `/api/storage?${query}&move=${move}`, storage));
      return response.headers.get("x-wharf-store-move") !== null;
    },
    async retry() {
      await expectOk(await call("POST", `/api/storage/move?${query}`));
    },
    async state() {
      const response = await call("GET", `/api/storage/move?${query}`);
      if (response.status === 404 && response.headers.get("x-wharf-error") === "MOVE_NOT_FOUND") return undefined;
      return (await (await expectOk(response)).json()) as MoveStateJson;
    },
    close: async () => undefined,
  };
}
