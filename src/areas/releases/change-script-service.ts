import type { Clock } from "../../domain/clock.js";
import { invalid } from "../../domain/errors.js";
import {
  type ChangeScript,
  type ChangeScriptDraft,
  type ChangeScriptFilter,
  MAX_SCRIPT_NAME_LENGTH,
  MAX_SCRIPT_TEXT_LENGTH,
} from "./change-script-model.js";
import type { ChangeScriptRepository } from "./change-script-repository.js";

/**
 * Database change scripts per release (issue 14 section 1): the rules a script's name and text
 * follow, and the time and actor (actor.ts display name) recorded on every change. Reads of an
 * unknown application, release or script find nothing, as BuildMaster's stored procedures do.
 * Messages name the native API's parameters, the interface scripts are managed through.
 */
export interface ChangeScriptService {
  list(filter: ChangeScriptFilter): Promise<ChangeScript[]>;
  find(id: number): Promise<ChangeScript | undefined>;
  /** Creates or changes a script (change-script-repository.ts save); `by` is recorded as creator or modifier. */
  save(draft: ChangeScriptDraft, by: string): Promise<ChangeScript>;
  delete(id: number): Promise<boolean>;
}

// Control characters (tabs, line breaks, escapes) would break the one line a name is shown on.
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;

function checkedName(name: string): string {
  const trimmed = name.trim();
  if (trimmed === "") throw invalid("MISSING_PARAMETER", "The parameter 'Script_Name' is required.");
  if (trimmed.length > MAX_SCRIPT_NAME_LENGTH || CONTROL.test(trimmed)) {
    throw invalid(
      "INVALID_SCRIPT_NAME",
      `The parameter 'Script_Name' must be one line of at most ${MAX_SCRIPT_NAME_LENGTH} characters.`,
    );
  }
  return trimmed;
}

function checkedText(text: string): string {
  if (text.trim() === "") throw invalid("MISSING_PARAMETER", "The parameter 'Script_Text' is required.");
  if (text.length > MAX_SCRIPT_TEXT_LENGTH) {
    throw invalid(
      "SCRIPT_TEXT_TOO_LONG",
      `The parameter 'Script_Text' must be at most ${MAX_SCRIPT_TEXT_LENGTH} characters.`,
    );
  }
  return text;
}

export function createChangeScriptService(deps: {
  readonly scripts: ChangeScriptRepository;
  readonly clock: Clock;
}): ChangeScriptService {
  const { scripts, clock } = deps;
  return {
    list: (filter) => scripts.list(filter),
    find: (id) => scripts.find(id),
    save: async (draft, by) =>
      scripts.save(
        { ...draft, name: checkedName(draft.name), text: checkedText(draft.text) },
        { by, now: clock.now().toISOString() },
      ),
    delete: (id) => scripts.delete(id),
  };
}
