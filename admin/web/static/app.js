// fptrack admin: small progressive enhancements. Every page works without this file.
"use strict";

// Upload works one file at a time with a progress bar (the form alone posts them all).
function enhanceUpload(form) {
  const input = form.querySelector("input[type=file]");
  const bar = document.getElementById("upload-progress");
  const log = document.getElementById("upload-log");
  if (!input || !bar || !log || !window.fetch) return;
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const files = Array.from(input.files);
    bar.max = files.length;
    bar.value = 0;
    bar.hidden = false;
    for (const file of files) {
      const body = new FormData();
      body.append("csrf_token", form.querySelector("input[name=csrf_token]").value);
      body.append("files", file, file.name);
      const line = document.createElement("li");
      try {
        const response = await fetch(form.action, {
          method: "POST", body: body, headers: {"Accept": "application/json"},
          credentials: "same-origin",
        });
        const result = await response.json();
        line.textContent = file.name + ": " + (result.message || response.statusText);
      } catch (error) {
        line.textContent = file.name + ": " + error;
      }
      log.appendChild(line);
      bar.value += 1;
    }
  });
}

// "Select all" checkbox of the match list.
function enhanceSelectAll(box) {
  box.addEventListener("change", () => {
    document.querySelectorAll("input[name=ids]").forEach((c) => { c.checked = box.checked; });
  });
}

document.addEventListener("DOMContentLoaded", () => {
  document.querySelectorAll("form[data-upload]").forEach(enhanceUpload);
  const all = document.getElementById("select-all");
  if (all) enhanceSelectAll(all);
});
