/**
 * Script of the web UI's part: configuration management (joined into /ui/app.js, run after the page
 * is parsed). While a part of the page is still moving (`data-configuration-live`: a check running,
 * a remediation job pending or running) it is fetched again every two seconds and swapped in, until
 * it no longer is. Pages work without it: reloading shows the same.
 */
export const CONFIGURATION_SCRIPT = `
{
  const refresh = async () => {
    const live = document.querySelector("[data-configuration-live]");
    if (!live) return;
    try {
      const response = await fetch(location.href, { headers: { accept: "text/html" }, credentials: "same-origin" });
      if (!response.ok) return;
      const next = new DOMParser().parseFromString(await response.text(), "text/html").getElementById(live.id);
      if (!next) return;
      live.replaceWith(document.importNode(next, true));
    } catch {
      return;
    }
    setTimeout(refresh, 2000);
  };
  if (document.querySelector("[data-configuration-live]")) setTimeout(refresh, 2000);
}
`;
