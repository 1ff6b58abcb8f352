import { ADMIN_SCRIPT } from "../admin/script.js";
import { ASSET_DIRS_SCRIPT } from "../asset-dirs/script.js";
import { CONFIGURATION_SCRIPT } from "../configuration/script.js";
import { DELIVERY_SCRIPT } from "../delivery/script.js";
import { PACKAGES_SCRIPT } from "../pages/script.js";
import { REFERENCE_SCRIPT } from "../reference/script.js";

/** What every page may use: search as you type and copy buttons. */
const BASE_SCRIPT = `"use strict";
document.addEventListener("DOMContentLoaded", () => {
  // Search as you type: a form marked data-live submits itself after a pause in typing.
  for (const form of document.querySelectorAll("form[data-live]")) {
    let timer;
    form.addEventListener("input", () => {
      clearTimeout(timer);
      timer = setTimeout(() => form.requestSubmit(), 300);
    });
    // The answer is a new page: typing goes on in the search field, after what was typed.
    const field = form.querySelector("input[type=search]");
    if (field && new URLSearchParams(location.search).has(field.name)) {
      field.focus();
      field.setSelectionRange(field.value.length, field.value.length);
    }
  }
  // Copy buttons (hidden without JavaScript): data-copy names the element whose text they copy.
  for (const button of document.querySelectorAll("button[data-copy]")) {
    button.hidden = false;
    button.addEventListener("click", async () => {
      const source = document.getElementById(button.dataset.copy);
      if (!source || !navigator.clipboard) return;
      await navigator.clipboard.writeText(source.textContent);
      button.textContent = "Copied";
      setTimeout(() => (button.textContent = "Copy"), 1500);
    });
  }
});
`;

/**
 * The pages' only script, served as /ui/app.js with `defer` (no inline script: the CSP forbids
 * it): the shared behaviour, then each part's own, each in its own block scope. Pages work
 * without it; it only adds what needs JavaScript (search as you type, upload progress, live logs).
 */
export const SCRIPT = [
  BASE_SCRIPT,
  ...[PACKAGES_SCRIPT, ASSET_DIRS_SCRIPT, DELIVERY_SCRIPT, CONFIGURATION_SCRIPT, ADMIN_SCRIPT, REFERENCE_SCRIPT]
    .filter((part) => part !== "")
    .map((part) => `{\n${part}\n}`),
].join("\n");
