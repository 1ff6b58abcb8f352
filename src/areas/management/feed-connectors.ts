import { DomainError } from "../../domain/errors.js";
import type { Db } from "../../storage/database.js";

/**
 * A feed's connectors as rows of `feed_connectors` (migration 0010): stored by connector id in
 * list order, read back as the connectors' current names. Bound to ids, a connector deleted and
 * recreated under its name is not silently the feed's again, and a renamed one stays the feed's;
 * the feed API still speaks names. Synchronous, and reading the connectors table itself rather
 * than through the connectors service: the feed repository calls these inside its transactions,
 * where nothing can be awaited.
 */
export interface FeedConnectorRows {
  /** Current names of the feed's connectors, in order. */
  namesOf(feedId: number): string[];
  /** Every feed's connector names, by feed id (feeds with none are absent). */
  all(): Map<number, string[]>;
  /** Replaces the feed's connectors; throws unprocessable CONNECTOR_NOT_FOUND for a name no connector has. */
  replace(feedId: number, names: readonly string[]): void;
}

/**
 * A feed's `connectors` naming no connector: unprocessable (422), the one builder of the feed
 * service's check and of both repositories' backstops (repository-postgres.ts replaces the rows as
 * `replace` does). The connectors area's CONNECTOR_NOT_FOUND (connectors/model.ts) is another
 * error on purpose: there the connector is the resource addressed, so not_found (404).
 */
export function connectorNotFound(name: string): DomainError {
  return new DomainError("unprocessable", "CONNECTOR_NOT_FOUND", `connector '${name}' does not exist`);
}

export function createFeedConnectorRows(db: Db): FeedConnectorRows {
  const namesOfFeed = db
    .prepare<[number], string>(
      `SELECT c.name FROM feed_connectors fc JOIN connectors c ON c.id = fc.connector_id
        WHERE fc.feed_id = ? ORDER BY fc.position`,
    )
    .pluck();
  const allRows = db.prepare<[], { feed_id: number; name: string }>(
    `SELECT fc.feed_id, c.name FROM feed_connectors fc JOIN connectors c ON c.id = fc.connector_id
      ORDER BY fc.feed_id, fc.position`,
  );
  const connectorId = db.prepare<[string], number>("SELECT id FROM connectors WHERE name_key = ?").pluck();
  const deleteRows = db.prepare<[number]>("DELETE FROM feed_connectors WHERE feed_id = ?");
  const insertRow = db.prepare<[number, number, number]>(
    "INSERT INTO feed_connectors (feed_id, position, connector_id) VALUES (?, ?, ?)",
  );

  return {
    namesOf: (feedId) => namesOfFeed.all(feedId),
    all() {
      const byFeed = new Map<number, string[]>();
      for (const { feed_id, name } of allRows.all()) {
        const names = byFeed.get(feed_id);
        if (names === undefined) byFeed.set(feed_id, [name]);
        else names.push(name);
      }
      return byFeed;
    },
    replace(feedId, names) {
      deleteRows.run(feedId);
      names.forEach((name, position) => {
        const id = connectorId.get(name.toLowerCase());
        // The feed service checked first; this is the backstop for a connector deleted meanwhile.
        if (id === undefined) throw connectorNotFound(name);
        insertRow.run(feedId, position, id);
      });
    },
  };
}
