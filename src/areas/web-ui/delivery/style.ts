/** Stylesheet rules of the web UI's part: delivery: applications, releases, builds, deployments and their live logs (joined into /ui/style.css). */
export const DELIVERY_STYLE = ``;
