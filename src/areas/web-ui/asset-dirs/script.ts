/**
 * Script of the web UI's part: asset directories (joined into /ui/app.js, run after the page is
 * parsed). The upload form works without it (a multipart form post); with it, files dropped on the
 * form or picked in it go through the asset directory API's multipart protocol (ProGet's
 * `?multipart=upload|complete`, mounted under /ui: ui-api.ts) in parts of 4 MiB, so that large
 * files are never one request, with a progress bar (XMLHttpRequest's upload progress). Every
 * request carries the session's CSRF token as `x-csrf-token`.
 */
export const ASSET_DIRS_SCRIPT = `const form = document.querySelector("form[data-asset-upload]");
if (form) {
  const PART_BYTES = 4 * 1024 * 1024;
  const base = form.dataset.assetUpload;
  const input = form.querySelector("input[type=file]");
  const drop = form.querySelector("[data-asset-drop]");
  const box = form.querySelector("[data-asset-progress]");
  const bar = box.querySelector("progress");
  const status = form.querySelector("[data-asset-status]");
  const submit = form.querySelector("button[type=submit]");
  const token = document.querySelector("meta[name=csrf-token]")?.content ?? "";
  form.querySelector("[data-asset-drop-hint]").hidden = false;

  // The message of an error page (the UI answers errors as pages), else the status.
  const messageOf = (xhr) => {
    const page = new DOMParser().parseFromString(xhr.responseText || "", "text/html");
    const text = page.querySelector("main p")?.textContent?.trim();
    return text || "the server answered " + xhr.status;
  };
  const send = (url, body, type, onProgress) =>
    new Promise((resolve, reject) => {
      const xhr = new XMLHttpRequest();
      xhr.open("POST", url);
      xhr.setRequestHeader("x-csrf-token", token);
      if (type) xhr.setRequestHeader("Content-Type", type);
      xhr.upload.onprogress = (event) => onProgress?.(event.loaded);
      xhr.onload = () => (xhr.status < 300 ? resolve() : reject(new Error(messageOf(xhr))));
      xhr.onerror = () => reject(new Error("the connection failed"));
      xhr.send(body);
    });
  // An upload id as the API accepts it (letters and digits); getRandomValues works without HTTPS too.
  const uploadId = () => Array.from(crypto.getRandomValues(new Uint8Array(16)), (b) => b.toString(16).padStart(2, "0")).join("");

  async function uploadFile(file, done, total) {
    const url = base + encodeURIComponent(file.name);
    const id = uploadId();
    const parts = Math.max(1, Math.ceil(file.size / PART_BYTES));
    for (let index = 0; index < parts; index++) {
      const offset = index * PART_BYTES;
      const part = file.slice(offset, Math.min(file.size, offset + PART_BYTES));
      const query = new URLSearchParams({ multipart: "upload", id, index, offset, totalSize: file.size, partSize: part.size, totalParts: parts });
      const show = (sent) => (bar.value = total === 0 ? 100 : Math.floor(((done + offset + sent) / total) * 100));
      await send(url + "?" + query, part, "application/octet-stream", show);
      // Browsers may skip progress events of a fast request: each part's end counts as well.
      show(part.size);
    }
    await send(url + "?multipart=complete&id=" + id, null, file.type);
  }

  async function upload(files) {
    const total = files.reduce((sum, file) => sum + file.size, 0);
    box.hidden = false;
    submit.disabled = true;
    bar.value = 0;
    let done = 0;
    try {
      for (const [i, file] of files.entries()) {
        status.textContent = "Uploading " + file.name + " (" + (i + 1) + " of " + files.length + ")…";
        await uploadFile(file, done, total);
        done += file.size;
      }
      bar.value = 100;
      status.textContent = "Uploaded " + files.length + (files.length === 1 ? " file." : " files.");
      location.assign(location.pathname);
    } catch (error) {
      status.textContent = "Upload failed: " + error.message;
      status.classList.add("error");
      submit.disabled = false;
    }
  }

  form.addEventListener("submit", (event) => {
    event.preventDefault();
    if (input.files.length > 0) upload([...input.files]);
  });
  drop.addEventListener("dragover", (event) => {
    event.preventDefault();
    drop.classList.add("asset-dragging");
  });
  drop.addEventListener("dragleave", () => drop.classList.remove("asset-dragging"));
  drop.addEventListener("drop", (event) => {
    event.preventDefault();
    drop.classList.remove("asset-dragging");
    if (event.dataTransfer.files.length > 0) upload([...event.dataTransfer.files]);
  });
}`;
