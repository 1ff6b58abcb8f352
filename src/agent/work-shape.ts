import { type DesiredItem, ITEM_TYPES, type ItemType } from "../drift/model.js";
import type { PollAnswer, WorkItem } from "./protocol.js";

/**
 * Checks the shape of what Wharf answers to a poll before the agent acts on it (the agent loads
 * no schema library: a few checks by hand). Wharf validated the items when they were written;
 * the local executor confines every path to the agent's root whatever arrives.
 */
export function parsePollAnswer(value: unknown): PollAnswer {
  const work = record(value, "the poll's answer").work;
  if (!Array.isArray(work)) throw new Error("The poll's answer has no work list.");
  return { work: work.map((entry, index) => parseWork(entry, `work[${index}]`)) };
}

function parseWork(value: unknown, where: string): WorkItem {
  const work = record(value, where);
  const { id, kind, simulate, items, variables, leaseSeconds } = work;
  if (typeof id !== "string" || !/^[0-9a-f-]{36}$/.test(id)) throw new Error(`${where}.id is not a work id.`);
  if (kind !== "check" && kind !== "remediate") throw new Error(`${where}.kind is neither check nor remediate.`);
  if (!Array.isArray(items)) throw new Error(`${where}.items is not a list.`);
  if (typeof leaseSeconds !== "number" || !(leaseSeconds > 0))
    throw new Error(`${where}.leaseSeconds is not a number.`);
  const names = record(variables, `${where}.variables`);
  for (const [name, text] of Object.entries(names)) {
    if (typeof text !== "string") throw new Error(`${where}.variables.${name} is not text.`);
  }
  return {
    id,
    kind,
    simulate: simulate === true,
    items: items.map((item, index) => parseItem(item, `${where}.items[${index}]`)),
    variables: names as Record<string, string>,
    leaseSeconds,
  };
}

function parseItem(value: unknown, where: string): DesiredItem {
  const item = record(value, where);
  const { type, key, role, sensitive, properties } = item;
  if (!ITEM_TYPES.includes(type as ItemType)) throw new Error(`${where}.type is not an item type.`);
  if (typeof key !== "string" || key === "") throw new Error(`${where}.key is not text.`);
  if (role !== null && typeof role !== "string") throw new Error(`${where}.role is neither text nor null.`);
  return {
    type: type as ItemType,
    key,
    role,
    sensitive: sensitive === true,
    properties: record(properties, `${where}.properties`),
  };
}

function record(value: unknown, where: string): Record<string, unknown> {
  if (typeof value !== "object" || value === null || Array.isArray(value))
    throw new Error(`${where} is not an object.`);
  return value as Record<string, unknown>;
}
