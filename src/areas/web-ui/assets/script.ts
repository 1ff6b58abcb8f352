/**
 * The pages' only script, served as /ui/app.js (no inline script: the CSP forbids it). Pages work
 * without it; it only adds what needs JavaScript (search as you type, upload progress, live logs).
 */
export const SCRIPT = `"use strict";
document.addEventListener("DOMContentLoaded", () => {
  // Search as you type: a form marked data-live submits itself after a pause in typing.
  for (const form of document.querySelectorAll("form[data-live]")) {
    let timer;
    form.addEventListener("input", () => {
      clearTimeout(timer);
      timer = setTimeout(() => form.requestSubmit(), 300);
    });
  }
});
`;
