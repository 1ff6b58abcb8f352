import { isIP } from "node:net";
import { invalid } from "../../domain/errors.js";
import type { StorageConfig } from "../../domain/package-store.js";
import { classifyAddress, describeCategory, isAlwaysRefused } from "../../net/address-class.js";
import { METADATA_HOSTNAMES } from "../../net/fetch-target.js";
import { storeEndpointOf } from "../../storage/store-factory.js";

/**
 * A feed's object store makes the server send requests, signed with the given credentials, to a
 * URL the feed's manager chooses: a cloud metadata service or a link-local address is refused, as
 * for every server-side fetch (net/fetch-target.ts). Private and loopback servers are allowed: an
 * S3 server on the local network is the common self-hosted setup.
 */
export function refuseUnsafeStoreEndpoint(config: StorageConfig): void {
  const endpoint = storeEndpointOf(config);
  if (endpoint === undefined) return;
  let host: string;
  try {
    host = new URL(endpoint).hostname
      .toLowerCase()
      .replace(/\.$/, "")
      .replace(/^\[|\]$/g, "");
  } catch {
    throw invalid("INVALID_STORAGE_CONFIG", "the store's endpoint is not a valid URL");
  }
  if (METADATA_HOSTNAMES.has(host)) {
    throw invalid("INVALID_STORAGE_CONFIG", `the store's endpoint '${host}' names a cloud metadata service`);
  }
  if (isIP(host) !== 0) {
    const category = classifyAddress(host);
    if (isAlwaysRefused(category)) {
      throw invalid("INVALID_STORAGE_CONFIG", `the store's endpoint is ${describeCategory(category)}`);
    }
  }
}
