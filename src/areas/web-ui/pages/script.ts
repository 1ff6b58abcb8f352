/**
 * Script of the web UI's part: browsing and publishing packages (joined into /ui/app.js, run after
 * the page is parsed). Pages work without it: the upload zone is a plain multipart form. With it, a
 * package dropped on the zone or picked in it is sent as the raw body of one XMLHttpRequest (the
 * upload service reads raw bodies as the API does) with a progress bar and the session's CSRF token
 * as `x-csrf-token`; the answer names the package page, which is then opened.
 */
export const PACKAGES_SCRIPT = `const packageForm = document.querySelector("form[data-packages-upload]");
if (packageForm) {
  const input = packageForm.querySelector("input[type=file]");
  const drop = packageForm.querySelector("[data-packages-drop]");
  const box = packageForm.querySelector("[data-packages-progress]");
  const bar = box.querySelector("progress");
  const status = packageForm.querySelector("[data-packages-status]");
  const submit = packageForm.querySelector("button[type=submit]");
  const token = document.querySelector("meta[name=csrf-token]")?.content ?? "";
  packageForm.querySelector("[data-packages-drop-hint]").hidden = false;

  // The message of an error page (the UI answers errors as pages), else the status.
  const messageOf = (xhr) => {
    const page = new DOMParser().parseFromString(xhr.responseText || "", "text/html");
    const text = page.querySelector("main p")?.textContent?.trim();
    return text || "the server answered " + xhr.status;
  };
  const upload = (file) => {
    submit.disabled = true;
    box.hidden = false;
    bar.value = 0;
    status.textContent = "Uploading " + file.name + "…";
    const xhr = new XMLHttpRequest();
    xhr.open("POST", packageForm.action);
    xhr.setRequestHeader("x-csrf-token", token);
    xhr.setRequestHeader("Content-Type", "application/octet-stream");
    xhr.upload.onprogress = (event) => {
      if (event.lengthComputable) bar.value = Math.round((event.loaded / event.total) * 100);
    };
    xhr.onload = () => {
      submit.disabled = false;
      if (xhr.status === 201) {
        bar.value = 100;
        status.textContent = "Uploaded " + file.name + ".";
        location.assign(JSON.parse(xhr.responseText).href);
      } else {
        box.hidden = true;
        status.textContent = "Not uploaded: " + messageOf(xhr);
      }
    };
    xhr.onerror = () => {
      submit.disabled = false;
      box.hidden = true;
      status.textContent = "Not uploaded: the connection failed.";
    };
    xhr.send(file);
  };
  packageForm.addEventListener("submit", (event) => {
    const file = input.files?.[0];
    if (!file) return;
    event.preventDefault();
    upload(file);
  });
  drop.addEventListener("dragover", (event) => {
    event.preventDefault();
    drop.classList.add("package-dragging");
  });
  drop.addEventListener("dragleave", () => drop.classList.remove("package-dragging"));
  drop.addEventListener("drop", (event) => {
    event.preventDefault();
    drop.classList.remove("package-dragging");
    const file = event.dataTransfer?.files?.[0];
    if (file) upload(file);
  });
}
`;
