// transcli's page: it calls the server's API as any LibreTranslate client does.
// The translation follows the typing: a request goes out once typing has paused for the
// server's frontendTimeout, and a newer one cancels the one in flight (its answer would
// be stale).
"use strict";

(function () {
  const $ = (id) => document.getElementById(id);
  const source = $("source");
  const translation = $("translation");
  const state = {
    settings: null,
    timer: null,
    inFlight: null,    // the AbortController of the translation request in flight
    asked: 0,          // requests sent so far: an answer to an older one is dropped
    shown: "",         // the translation shown
    shownFor: "",      // the text it translates
    languages: [],     // GET /languages: each language with the targets it translates to
    detected: null,    // the language detected in the text last translated ("auto")
  };

  // ------------------------------------------------------------------ errors, in words

  class Problem extends Error {}

  function showError(message) {
    const box = $("error");
    box.textContent = message;
    box.hidden = false;
  }

  function clearError() {
    $("error").hidden = true;
    $("error").textContent = "";
  }

  // The JSON answer of a response, or a Problem that says in words what went wrong.
  async function answerOf(response) {
    let body = null;
    try {
      body = await response.json();
    } catch (e) {
      if (e.name === "AbortError") throw e;
    }
    if (response.ok && body !== null) return body;
    const said = body && typeof body.error === "string" ? body.error : "";
    const retry = response.headers.get("Retry-After");
    if (response.status === 429) {
      throw new Problem(`Too many requests from this address (${said}): try again in ` +
                        `${retry || "a few"} seconds.`);
    }
    if (response.status === 403) {
      $("key-row").hidden = false;
      throw new Problem(`The server needs its API key: type it in the "API key" box ` +
                        `above (${said || "refused"}).`);
    }
    if (response.status === 503 || response.status === 504) {
      throw new Problem(`The server is busy: ${said || response.statusText}.`);
    }
    throw new Problem(said || `The server answered ${response.status} ` +
                      `${response.statusText}.`);
  }

  function describe(error) {
    if (error instanceof Problem) return error.message;
    return `Cannot reach the server at ${location.host}: is transcli serve still running? ` +
           `(${error.message})`;
  }

  // ------------------------------------------------------------------ settings

  // The page translates once both the settings and the languages are in.
  async function loadSettings() {
    let s;
    try {
      s = await answerOf(await fetch("/frontend/settings"));
      state.languages = await answerOf(await fetch("/languages"));
    } catch (error) {
      showError(describe(error));
      return;
    }
    const model = s.model || {};
    $("model").textContent = `Model: ${model.name} · checkpoint ${model.checkpoint}` +
      (model.checkpointFile ? ` (${model.checkpointFile})` : "");
    $("key-row").hidden = !s.keyRequired;
    $("formats").textContent = `(${s.supportedFilesFormat.join(", ")})`;
    $("file").accept = s.supportedFilesFormat.join(",");
    fillLanguages(s.language.source.code, s.language.target.code);
    state.settings = s;
    updateCounter();
    if (source.value.trim()) scheduleTranslation();
  }

  // ------------------------------------------------------------------ languages

  function languageName(code) {
    const found = state.languages.find((language) => language.code === code);
    return found ? found.name : code;
  }

  // The targets a source translates to ("auto": any language's).
  function targetsOf(code) {
    const sources = code === "auto" ? state.languages :
      state.languages.filter((language) => language.code === code);
    return [...new Set(sources.flatMap((language) => language.targets))];
  }

  function option(code, name) {
    const item = document.createElement("option");
    item.value = code;
    item.textContent = name;
    return item;
  }

  // Both pickers: the sources the server translates from (and "auto"), then the targets
  // of the chosen one; `sourceCode` and `targetCode` chosen where they are offered.
  function fillLanguages(sourceCode, targetCode) {
    const sources = $("source-language");
    sources.replaceChildren(
      ...state.languages.filter((language) => language.targets.length)
        .map((language) => option(language.code, language.name)),
      option("auto", "Detect the language"));
    sources.value = sourceCode;
    fillTargets(targetCode);
  }

  function fillTargets(wanted) {
    const targets = $("target-language");
    const codes = targetsOf($("source-language").value);
    targets.replaceChildren(...codes.map((code) => option(code, languageName(code))));
    targets.value = codes.includes(wanted) ? wanted : codes[0];
    showPair();
  }

  function showPair() {
    const from = $("source-language").value, to = $("target-language").value;
    $("pair").textContent = from === "auto" ? `to ${languageName(to)}` :
      `${languageName(from)} → ${languageName(to)}`;
    source.lang = from === "auto" ? "" : from;
    translation.lang = to;
    $("swap").disabled = !swapped();
  }

  // The pair the swap button turns to (the detected language for "auto"), if the server
  // translates it; none while the translation shown is not the text's (typed since).
  function swapped() {
    if (source.value.trim() && source.value !== state.shownFor) return null;
    const chosen = $("source-language").value;
    const from = chosen === "auto" ? state.detected : chosen;
    const to = $("target-language").value;
    return from && from !== to && targetsOf(to).includes(from) ? [to, from] : null;
  }

  function swapLanguages() {
    const pair = swapped();
    if (!pair) return;
    const text = state.shown;
    fillLanguages(pair[0], pair[1]);
    if (text) source.value = text;
    state.detected = null;
    scheduleTranslation();
  }

  function apiKey() {
    const key = $("api-key").value;
    return key ? { api_key: key } : {};
  }

  // ------------------------------------------------------------------ typing

  function characters(text) {
    return Array.from(text).length;  // code points, as the server counts them
  }

  function updateCounter() {
    const limit = state.settings ? state.settings.charLimit : null;
    const used = characters(source.value);
    const counter = $("counter");
    counter.textContent = limit === null ? `${used.toLocaleString()}` :
      `${used.toLocaleString()} / ${limit.toLocaleString()} characters`;
    const over = limit !== null && used > limit;
    counter.classList.toggle("over", over);
    return !over;
  }

  function scheduleTranslation() {
    clearTimeout(state.timer);
    cancelInFlight();  // its answer would be for the text before this change
    $("swap").disabled = !swapped();
    const within = updateCounter();
    if (!state.settings) return;
    if (!source.value.trim()) {
      showTranslation("", [], null);
      clearError();
      return;
    }
    if (!within) {
      showError(`The text is longer than this server translates at once ` +
                `(${state.settings.charLimit.toLocaleString()} characters): shorten it, or ` +
                `translate it as a file.`);
      return;
    }
    state.timer = setTimeout(translateNow, state.settings.frontendTimeout);
  }

  function cancelInFlight() {
    state.asked += 1;  // whatever is in flight is now stale
    if (state.inFlight) state.inFlight.abort();
    state.inFlight = null;
    $("busy").hidden = true;
  }

  async function translateNow() {
    clearTimeout(state.timer);
    if (!state.settings || !source.value.trim() || !updateCounter()) return;
    cancelInFlight();
    const controller = new AbortController();
    const asked = state.asked;
    state.inFlight = controller;
    $("busy").hidden = false;
    const text = source.value;
    const body = {
      q: text,
      source: $("source-language").value,
      target: $("target-language").value,
      format: "text",
      alternatives: Math.min(3, state.settings.alternativesLimit || 0),
      ...apiKey(),
    };
    try {
      const response = await fetch("/translate", {
        method: "POST", headers: { "Content-Type": "application/json" },
        body: JSON.stringify(body), signal: controller.signal,
      });
      const answer = await answerOf(response);
      if (asked !== state.asked) return;
      clearError();
      state.shownFor = text;
      showTranslation(answer.translatedText, answer.alternatives || [],
                      answer.detectedLanguage || null, answer.confidence,
                      answer.alternativesConfidence || []);
    } catch (error) {
      if (error.name === "AbortError" || asked !== state.asked) return;
      showError(describe(error));
    } finally {
      if (asked === state.asked) {
        $("busy").hidden = true;
        state.inFlight = null;
      }
    }
  }

  // ------------------------------------------------------------------ the translation

  function showTranslation(text, alternatives, detected, confidence, confidences) {
    state.shown = text;
    showTrust(confidence);
    translation.textContent = text;
    $("copy").disabled = !text;
    $("copied").textContent = "";
    showDetected(detected);
    const list = $("alternatives");
    list.replaceChildren();
    alternatives.forEach((other, index) => {
      const item = document.createElement("li");
      const button = document.createElement("button");
      button.type = "button";
      button.textContent = other;
      button.dataset.confidence = confidences && typeof confidences[index] === "number"
        ? confidences[index] : "";
      button.addEventListener("click", () => pickAlternative(button));
      item.appendChild(button);
      list.appendChild(item);
    });
    $("alternatives-box").hidden = alternatives.length === 0;
  }

  // The server's confidence (0-1, an estimate of how close the translation is to a
  // good one: docs/INFERENCE.md, "Confidence"), said in words when it is low.
  const TRUST = [
    [0.35, "low", "Likely wrong: the model is unsure of this translation. Check it before you use it."],
    [0.55, "rough", "Rough: parts of this translation may be wrong."],
  ];

  function showTrust(confidence) {
    const trust = $("trust");
    state.confidence = typeof confidence === "number" ? confidence : undefined;
    const band = state.confidence !== undefined && state.shown
      ? TRUST.find(([below]) => confidence < below) : undefined;
    trust.hidden = !band;
    trust.textContent = band ? band[2] : "";
    trust.className = band ? `trust ${band[1]}` : "trust";
  }

  function showDetected(detected) {
    state.detected = detected ? detected.language : null;
    $("swap").disabled = !swapped();
    if (!detected) {
      $("detected").textContent = "";
      return;
    }
    const target = $("target-language").value;
    $("detected").textContent = `Detected: ${languageName(detected.language)} ` +
      `(${detected.confidence}%)` + (detected.language === target ? ", shown as it is" : "");
  }

  // The picked alternative is shown; the translation it replaces takes its place.
  function pickAlternative(button) {
    const picked = button.textContent, confidence = button.dataset.confidence;
    button.textContent = state.shown;
    button.dataset.confidence = state.confidence === undefined ? "" : state.confidence;
    state.shown = picked;
    translation.textContent = picked;
    showTrust(confidence === "" ? undefined : Number(confidence));
    $("copied").textContent = "";
    button.focus();
  }

  async function copyTranslation() {
    try {
      if (navigator.clipboard && window.isSecureContext) {
        await navigator.clipboard.writeText(state.shown);
      } else {  // a page served over plain HTTP from another machine
        const scratch = document.createElement("textarea");
        scratch.value = state.shown;
        document.body.appendChild(scratch);
        scratch.select();
        const done = document.execCommand("copy");
        scratch.remove();
        if (!done) throw new Error("the browser refused");
      }
      $("copied").textContent = "Copied.";
    } catch (error) {
      $("copied").textContent = `Not copied (${error.message}): select the text and copy it.`;
    }
  }

  // ------------------------------------------------------------------ files

  async function translateFile(event) {
    event.preventDefault();
    const file = $("file").files[0];
    const status = $("file-status");
    const link = $("download");
    link.hidden = true;
    if (!file) {
      status.textContent = "Choose a file first.";
      return;
    }
    const form = new FormData();
    form.append("file", file);
    form.append("source", $("source-language").value);
    form.append("target", $("target-language").value);
    const key = apiKey();
    if (key.api_key) form.append("api_key", key.api_key);
    status.textContent = `Translating ${file.name}…`;
    $("file-button").disabled = true;
    try {
      const answer = await answerOf(await fetch("/translate_file", { method: "POST", body: form }));
      const url = new URL(answer.translatedFileUrl, location.href);
      const name = decodeURIComponent(url.pathname.split("/").pop()).replace(/^[^.]*\./, "");
      link.href = url.pathname;
      link.download = name;
      link.textContent = `Download ${name}`;
      link.hidden = false;
      status.textContent = `${file.name} is translated.`;
      clearError();
      link.focus();
    } catch (error) {
      status.textContent = "";
      showError(describe(error));
    } finally {
      $("file-button").disabled = false;
    }
  }

  // ------------------------------------------------------------------ wiring

  source.addEventListener("input", scheduleTranslation);
  source.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
      event.preventDefault();
      translateNow();
    }
  });
  $("source-language").addEventListener("change", () => {
    state.detected = null;
    fillTargets($("target-language").value);
    scheduleTranslation();
  });
  $("target-language").addEventListener("change", () => {
    showPair();
    scheduleTranslation();
  });
  $("swap").addEventListener("click", swapLanguages);
  $("api-key").addEventListener("change", scheduleTranslation);
  $("copy").addEventListener("click", copyTranslation);
  $("file-form").addEventListener("submit", translateFile);
  loadSettings();
})();
