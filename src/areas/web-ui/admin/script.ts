/**
 * Script of the web UI's part: administration (joined into /ui/app.js, run after the page is
 * parsed). The feed page's storage form lists every store's settings; with this script only the
 * store picked is shown (the server reads only the picked store's fields either way).
 */
export const ADMIN_SCRIPT = `for (const select of document.querySelectorAll("select[data-admin-store-select]")) {
  const form = select.form;
  const update = () => {
    for (const set of form.querySelectorAll("fieldset[data-admin-store]")) set.hidden = set.dataset.adminStore !== select.value;
  };
  select.addEventListener("change", update);
  update();
}`;
