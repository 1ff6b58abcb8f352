/**
 * Script of the web UI's part: delivery (joined into /ui/app.js, run after the page is parsed).
 * An execution page of a deployment still running carries `data-delivery-log` (the `ui` JSON route
 * of its log) and `data-delivery-offset` (the length already shown): the script asks for what
 * follows every second, appends it as text (never as HTML: log lines are whatever a plan printed),
 * and stops once the deployment ended, then shows its final status. Without the script, reloading
 * the page shows the log so far.
 */
export const DELIVERY_SCRIPT = `const log = document.querySelector("pre[data-delivery-log]");
if (log) {
  const url = log.dataset.deliveryLog;
  let offset = Number(log.dataset.deliveryOffset) || 0;
  const hint = document.querySelector("[data-delivery-hint]");
  if (hint) hint.textContent = "Still running: the log updates by itself.";
  const status = document.querySelector("[data-delivery-status] .state");
  const poll = async () => {
    let next;
    try {
      const res = await fetch(url + "?from=" + offset, { headers: { accept: "application/json" }, cache: "no-store" });
      if (!res.ok) throw new Error(String(res.status));
      next = await res.json();
    } catch {
      setTimeout(poll, 5000);
      return;
    }
    if (next.text) {
      const atBottom = log.scrollTop + log.clientHeight >= log.scrollHeight - 4;
      log.append(document.createTextNode(next.text));
      if (atBottom) log.scrollTop = log.scrollHeight;
    }
    offset = next.next;
    if (status && status.textContent !== next.status) {
      status.textContent = next.status;
      status.className = "state state-" + next.status;
    }
    if (next.running) setTimeout(poll, 1000);
    else if (hint) hint.textContent = "The deployment ended: " + next.status + ".";
  };
  setTimeout(poll, 1000);
}
`;
