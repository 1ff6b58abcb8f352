/**
 * Script of the web UI's part: delivery: applications, releases, builds, deployments and their live logs (joined into /ui/app.js, run
 * after the page is parsed). Pages work without it: it only adds what needs JavaScript.
 */
export const DELIVERY_SCRIPT = ``;
