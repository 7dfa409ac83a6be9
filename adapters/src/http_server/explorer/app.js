// The operations explorer: reads the server's OpenAPI document (the one clients read), lists
// every operation by namespace, builds a form from each input schema, calls operations and
// streams subscriptions. Plain JavaScript, no dependencies.
"use strict";

const config = JSON.parse(document.getElementById("opkit-config").textContent);
const $ = (selector, root = document) => root.querySelector(selector);
const el = (tag, attrs = {}, ...children) => {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") node.className = value;
    else if (key === "text") node.textContent = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value === true ? "" : value);
  }
  for (const child of children.flat()) {
    if (child !== undefined && child !== null) node.append(child);
  }
  return node;
};

let doc = null;
let current = null; // {id, kind, schema, spec}
let running = null; // AbortController of a subscription

// ------------------------------------------------------------------------------------------
// Schemas

function decodeToken(token) {
  return decodeURIComponent(token).replace(/~1/g, "/").replace(/~0/g, "~");
}

/** The schema a `$ref` points to inside the document (local refs only). */
function resolve(schema) {
  let seen = 0;
  while (schema && typeof schema === "object" && typeof schema.$ref === "string" && seen < 64) {
    const ref = schema.$ref;
    if (!ref.startsWith("#/")) return {};
    let target = doc;
    for (const token of ref.slice(2).split("/")) {
      target = target === undefined ? undefined : target[decodeToken(token)];
    }
    schema = target === undefined ? {} : target;
    seen += 1;
  }
  return schema === true || schema === undefined ? {} : schema;
}

function types(schema) {
  if (Array.isArray(schema.type)) return schema.type;
  if (typeof schema.type === "string") return [schema.type];
  if (schema.properties) return ["object"];
  if (schema.items || schema.prefixItems) return ["array"];
  if (Array.isArray(schema.enum)) {
    return [...new Set(schema.enum.map((v) => (v === null ? "null" : Array.isArray(v) ? "array" : typeof v)))];
  }
  return [];
}

/** `Option<T>`-style schemas (`anyOf`/`oneOf` with a null branch, or `type: [T, "null"]`). */
function nullable(schema) {
  const union = schema.anyOf || schema.oneOf;
  if (Array.isArray(union) && union.length === 2) {
    const rest = union.filter((branch) => !types(resolve(branch)).includes("null") || types(resolve(branch)).length > 1);
    if (rest.length === 1) return { inner: resolve(rest[0]), nullable: true };
  }
  const t = types(schema);
  if (t.length === 2 && t.includes("null")) {
    return { inner: { ...schema, type: t.find((x) => x !== "null") }, nullable: true };
  }
  return { inner: schema, nullable: false };
}

function typeName(value) {
  if (value === null) return "null";
  if (Array.isArray(value)) return "array";
  if (typeof value === "number") return Number.isInteger(value) ? "integer" : "number";
  return typeof value;
}

function isType(value, type) {
  const actual = typeName(value);
  return actual === type || (type === "number" && actual === "integer");
}

/** Validates `value` against `schema`: a list of `{path, message}` (JSON pointers). */
function validate(schema, value, path = "", out = []) {
  schema = resolve(schema);
  if (schema === false) { out.push({ path, message: "no value is allowed here" }); return out; }
  const t = types(schema);
  if (schema.type !== undefined && t.length && !t.some((x) => isType(value, x))) {
    out.push({ path, message: `expected ${t.join(" or ")}, found ${typeName(value)}` });
    return out;
  }
  if (Array.isArray(schema.enum) && !schema.enum.some((v) => JSON.stringify(v) === JSON.stringify(value))) {
    out.push({ path, message: `must be one of ${schema.enum.map((v) => JSON.stringify(v)).join(", ")}` });
  }
  if ("const" in schema && JSON.stringify(schema.const) !== JSON.stringify(value)) {
    out.push({ path, message: `must be ${JSON.stringify(schema.const)}` });
  }
  if (typeof value === "number") {
    if (schema.minimum !== undefined && value < schema.minimum) out.push({ path, message: `must be at least ${schema.minimum}` });
    if (schema.maximum !== undefined && value > schema.maximum) out.push({ path, message: `must be at most ${schema.maximum}` });
    if (typeof schema.exclusiveMinimum === "number" && value <= schema.exclusiveMinimum) out.push({ path, message: `must be more than ${schema.exclusiveMinimum}` });
    if (typeof schema.exclusiveMaximum === "number" && value >= schema.exclusiveMaximum) out.push({ path, message: `must be less than ${schema.exclusiveMaximum}` });
  }
  if (typeof value === "string") {
    const length = [...value].length;
    if (schema.minLength !== undefined && length < schema.minLength) out.push({ path, message: `must have at least ${schema.minLength} characters` });
    if (schema.maxLength !== undefined && length > schema.maxLength) out.push({ path, message: `must have at most ${schema.maxLength} characters` });
    if (schema.pattern) {
      try { if (!new RegExp(schema.pattern, "u").test(value)) out.push({ path, message: `must match ${schema.pattern}` }); } catch (_) { /* an unsupported pattern is not checked here */ }
    }
  }
  if (Array.isArray(value)) {
    if (schema.minItems !== undefined && value.length < schema.minItems) out.push({ path, message: `needs at least ${schema.minItems} items` });
    if (schema.maxItems !== undefined && value.length > schema.maxItems) out.push({ path, message: `takes at most ${schema.maxItems} items` });
    const prefix = schema.prefixItems || [];
    value.forEach((item, i) => {
      const itemSchema = i < prefix.length ? prefix[i] : schema.items;
      if (itemSchema !== undefined) validate(itemSchema, item, `${path}/${i}`, out);
    });
  }
  if (value && typeof value === "object" && !Array.isArray(value)) {
    for (const name of schema.required || []) {
      if (!(name in value)) out.push({ path: `${path}/${name}`, message: "is required" });
    }
    const props = schema.properties || {};
    for (const [name, item] of Object.entries(value)) {
      const pointer = `${path}/${name.replace(/~/g, "~0").replace(/\//g, "~1")}`;
      if (name in props) validate(props[name], item, pointer, out);
      else if (schema.additionalProperties === false) out.push({ path: pointer, message: "is not a declared field" });
      else if (schema.additionalProperties && typeof schema.additionalProperties === "object") validate(schema.additionalProperties, item, pointer, out);
    }
  }
  for (const part of schema.allOf || []) validate(part, value, path, out);
  const union = schema.anyOf || schema.oneOf;
  if (Array.isArray(union) && !union.some((branch) => validate(branch, value, path, []).length === 0)) {
    out.push({ path, message: "matches none of the allowed shapes" });
  }
  return out;
}

// ------------------------------------------------------------------------------------------
// Operations from the document

function operationsOf(document) {
  const ops = [];
  for (const [path, item] of Object.entries(document.paths || {})) {
    const methods = Object.entries(item).filter(([, op]) => op && op["x-opkit-id"] && !op["x-opkit-alias"]);
    for (const [method, op] of methods) {
      const body = Object.values(item).find((o) => o && o.requestBody);
      const schemaRef = body && body.requestBody.content["application/json"].schema;
      ops.push({
        id: op["x-opkit-id"],
        kind: op["x-opkit-kind"],
        namespace: (op.tags && op.tags[0]) || op["x-opkit-id"].split(".").slice(0, -1).join("."),
        summary: op.summary || "",
        description: op.description || "",
        access: op["x-opkit-access"],
        method,
        path,
        schemaRef: schemaRef || { type: "object" },
      });
    }
  }
  ops.sort((a, b) => a.id.localeCompare(b.id));
  return ops;
}

function describeAccess(access) {
  if (!access) return "public";
  const parts = [];
  if (access.scopes && access.scopes.length) parts.push(`scopes: ${access.scopes.join(", ")}`);
  if (access.roles && access.roles.length) parts.push(`one of the roles: ${access.roles.join(", ")}`);
  return parts.length ? parts.join("; ") : "public";
}

// ------------------------------------------------------------------------------------------
// Forms

/** A form control for `schema` at `path`; returns `{node, read}` where `read()` gives
 *  `{present, value}` (absent optional fields are left out of the input). */
function control(schema, path, label, required, description) {
  schema = resolve(schema);
  const { inner, nullable: isNullable } = nullable(schema);
  const s = resolve(inner);
  const t = types(s);
  const hint = description || s.description || schema.description;
  const wrap = (input, extra) => el("div", { class: "field", "data-field": path },
    el("label", { for: `f${path}` }, label || "(input)", required ? el("span", { class: "required", text: "*" }) : null),
    input,
    extra,
    hint ? el("div", { class: "hint", text: hint }) : null,
    el("div", { class: "field-error", "data-path": path }));
  const def = s.default !== undefined ? s.default : schema.default;

  if (Array.isArray(s.enum) && s.enum.every((v) => typeof v === "string" || typeof v === "number")) {
    const select = el("select", { id: `f${path}`, "data-path": path },
      required ? null : el("option", { value: "", text: "(not set)" }),
      s.enum.map((v) => el("option", { value: JSON.stringify(v), text: String(v), selected: def !== undefined && JSON.stringify(def) === JSON.stringify(v) })));
    return { node: wrap(select), read: () => (select.value === "" ? { present: false } : { present: true, value: JSON.parse(select.value) }) };
  }
  if (t.length === 1 && t[0] === "boolean") {
    if (required && !isNullable) {
      const box = el("input", { type: "checkbox", id: `f${path}`, "data-path": path, checked: def === true });
      return { node: wrap(box), read: () => ({ present: true, value: box.checked }) };
    }
    const select = el("select", { id: `f${path}`, "data-path": path },
      el("option", { value: "", text: "(not set)" }),
      el("option", { value: "true", text: "true", selected: def === true }),
      el("option", { value: "false", text: "false", selected: def === false }));
    return { node: wrap(select), read: () => (select.value === "" ? { present: false } : { present: true, value: select.value === "true" }) };
  }
  if (t.length === 1 && (t[0] === "integer" || t[0] === "number")) {
    const min = s.minimum !== undefined ? s.minimum : s.exclusiveMinimum;
    const max = s.maximum !== undefined ? s.maximum : s.exclusiveMaximum;
    const input = el("input", { type: "number", id: `f${path}`, "data-path": path, step: t[0] === "integer" ? "1" : "any",
      min, max, value: def !== undefined ? String(def) : undefined, placeholder: t[0] });
    const range = min !== undefined || max !== undefined ? el("span", { class: "muted", text: ` ${min ?? "−∞"} … ${max ?? "∞"}` }) : null;
    return { node: wrap(input, range), read: () => {
      if (input.value.trim() === "") return required && !isNullable ? { present: true, value: undefined, raw: "" } : { present: false };
      const n = Number(input.value);
      return { present: true, value: Number.isNaN(n) ? input.value : n };
    } };
  }
  if (t.length === 1 && t[0] === "string") {
    const input = el("input", { type: "text", id: `f${path}`, "data-path": path, value: def !== undefined ? String(def) : undefined, placeholder: s.format || "text" });
    return { node: wrap(input), read: () => (input.value === "" && !required ? { present: false } : { present: true, value: input.value }) };
  }
  if (t.length === 1 && t[0] === "object" && s.properties) {
    const reads = [];
    const set = el("fieldset", { "data-path": path }, label ? el("legend", { text: label }) : null);
    const requiredNames = new Set(s.required || []);
    const entries = Object.entries(s.properties);
    entries.sort(([a], [b]) => Number(requiredNames.has(b)) - Number(requiredNames.has(a)));
    for (const [name, prop] of entries) {
      const pointer = `${path}/${name.replace(/~/g, "~0").replace(/\//g, "~1")}`;
      const sub = control(prop, pointer, name, requiredNames.has(name), resolve(prop).description);
      set.append(sub.node);
      reads.push([name, sub.read]);
    }
    set.append(el("div", { class: "field-error", "data-path": path }));
    return { node: set, read: () => {
      const value = {};
      let any = false;
      for (const [name, read] of reads) {
        const got = read();
        if (got.present) { value[name] = got.value; any = true; }
      }
      return required || any || path === "" ? { present: true, value } : { present: false };
    } };
  }
  if (t.length === 1 && t[0] === "array" && s.items && !s.prefixItems) {
    const list = el("div", { class: "array", "data-path": path });
    const rows = [];
    const add = (initial) => {
      const index = rows.length;
      const sub = control(s.items, `${path}/${index}`, `#${index}`, true);
      const row = el("div", { class: "array-item" }, sub.node, el("button", { type: "button", class: "small", text: "remove", onclick: () => {
        const at = rows.indexOf(entry); rows.splice(at, 1); row.remove();
      } }));
      const entry = { read: sub.read };
      rows.push(entry);
      list.append(row);
      if (initial !== undefined) setValue(sub.node, initial);
    };
    const addButton = el("button", { type: "button", class: "small", text: "+ add item", "data-add": path, onclick: () => add() });
    if (Array.isArray(def)) def.forEach(add);
    return { node: wrap(list, addButton), read: () => {
      if (!rows.length && !required) return { present: false };
      return { present: true, value: rows.map((r) => r.read()).filter((r) => r.present).map((r) => r.value) };
    } };
  }
  // Anything else (unions, free-form objects, tuples): JSON text.
  const area = el("textarea", { id: `f${path}`, "data-path": path, rows: 3, placeholder: "JSON" });
  if (def !== undefined) area.value = JSON.stringify(def, null, 2);
  return { node: wrap(area), read: () => {
    if (area.value.trim() === "") return { present: false };
    try { return { present: true, value: JSON.parse(area.value) }; } catch (_) { return { present: true, value: area.value, invalidJson: true }; }
  } };
}

function setValue(node, value) {
  const input = node.querySelector("input, select, textarea");
  if (!input) return;
  if (input.type === "checkbox") input.checked = value === true;
  else if (input.tagName === "SELECT") input.value = JSON.stringify(value);
  else if (input.tagName === "TEXTAREA") input.value = JSON.stringify(value, null, 2);
  else input.value = String(value);
}

// ------------------------------------------------------------------------------------------
// Calls

function authHeaders() {
  const name = $("#auth-scheme").value;
  const secret = $("#auth-value").value.trim();
  sessionStorage.setItem("opkit-explorer-auth", JSON.stringify({ name, secret }));
  if (!secret) return {};
  if (name === "bearer") return { Authorization: `Bearer ${secret}` };
  return { [name]: secret };
}

function clearErrors() {
  for (const node of document.querySelectorAll(".field-error")) node.textContent = "";
  for (const node of document.querySelectorAll(".invalid")) node.classList.remove("invalid");
}

/** Puts each violation next to its field; returns the ones with no field. */
function showViolations(violations) {
  clearErrors();
  const loose = [];
  for (const violation of violations) {
    const slot = document.querySelector(`.field-error[data-path="${CSS.escape(violation.path)}"]`);
    if (slot) {
      slot.textContent = slot.textContent ? `${slot.textContent}; ${violation.message}` : violation.message;
      const input = document.querySelector(`[data-path="${CSS.escape(violation.path)}"]:is(input, select, textarea)`);
      if (input) input.classList.add("invalid");
    } else {
      loose.push(violation);
    }
  }
  return loose;
}

function metaTable(meta) {
  return el("table", { class: "meta", id: "meta" }, Object.entries(meta || {}).map(([key, value]) =>
    el("tr", {}, el("td", { text: key }), el("td", { text: typeof value === "object" ? JSON.stringify(value) : String(value) }))));
}

function showEnvelope(envelope, status, requestId, ms) {
  const result = $("#result");
  result.className = "card result-ok";
  result.replaceChildren(
    el("h3", { text: `HTTP ${status} · ${ms.toFixed(0)} ms` }),
    el("div", { class: "muted" }, "request id ", el("code", { id: "request-id", text: requestId || "?" })),
    el("h3", { text: "data", style: "margin-top:10px" }),
    el("pre", { id: "data", text: JSON.stringify(envelope.data, null, 2) }),
    el("h3", { text: "meta", style: "margin-top:10px" }),
    metaTable(envelope.meta));
}

function showError(error, status, requestId, ms) {
  const result = $("#result");
  result.className = "card result-error";
  const violations = Array.isArray(error.details) ? error.details.filter((v) => v && typeof v.path === "string") : [];
  const loose = showViolations(violations);
  result.replaceChildren(
    el("h3", { text: `HTTP ${status} · ${error.code || "error"}${error.kind ? ` (${error.kind})` : ""}${ms !== undefined ? ` · ${ms.toFixed(0)} ms` : ""}` }),
    el("div", { id: "error-message", text: error.message || JSON.stringify(error) }),
    requestId ? el("div", { class: "muted" }, "request id ", el("code", { text: requestId })) : null,
    loose.length ? el("ul", { class: "violations" }, loose.map((v) => el("li", { text: `${v.path || "/"}: ${v.message}` }))) : null);
}

function readInput() {
  if ($("#raw-panel").hidden === false) {
    const text = $("#raw").value.trim();
    if (!text) return {};
    return JSON.parse(text);
  }
  return current.read().value || {};
}

async function call() {
  let input;
  try { input = readInput(); } catch (error) { showError({ code: "INVALID_JSON", message: `the input is not JSON: ${error.message}` }, "-"); return; }
  const local = $("#precheck").checked ? validate(current.schema, input) : [];
  if (local.length) {
    showError({ code: "VALIDATION_ERROR", message: `the input does not match the schema (${local.length})`, details: local }, "not sent");
    return;
  }
  clearErrors();
  if (current.op.kind === "SUBSCRIPTION") return subscribe(input);
  $("#status").textContent = "calling…";
  const started = performance.now();
  let response;
  try {
    response = await fetch(`${config.ops}${current.op.id}`, {
      method: "POST", headers: { "content-type": "application/json", ...authHeaders() }, body: JSON.stringify(input),
    });
  } catch (error) {
    showError({ code: "NETWORK", message: String(error) }, "-");
    $("#status").textContent = "";
    return;
  }
  const ms = performance.now() - started;
  const requestId = response.headers.get("x-request-id");
  const body = await response.json().catch(() => ({ message: "the response is not JSON" }));
  $("#status").textContent = "";
  if (response.ok) showEnvelope(body, response.status, requestId, ms);
  else showError(body, response.status, requestId, ms);
}

function parseEvents(buffer, emit) {
  const blocks = buffer.split(/\r?\n\r?\n/);
  const rest = blocks.pop();
  for (const block of blocks) {
    let event = "message";
    let id = null;
    const data = [];
    for (const line of block.split(/\r?\n/)) {
      if (line.startsWith(":")) continue;
      const at = line.indexOf(":");
      const field = at < 0 ? line : line.slice(0, at);
      const value = at < 0 ? "" : line.slice(at + 1).replace(/^ /, "");
      if (field === "event") event = value;
      else if (field === "data") data.push(value);
      else if (field === "id") id = value;
    }
    if (data.length) emit(event, data.join("\n"), id);
  }
  return rest;
}

async function subscribe(input) {
  const controller = new AbortController();
  running = controller;
  $("#call").disabled = true;
  $("#stop").hidden = false;
  const items = el("div", { id: "items" });
  const result = $("#result");
  result.className = "card";
  result.replaceChildren(el("h3", { id: "stream-state", text: "streaming…" }), items);
  const started = performance.now();
  let count = 0;
  const finish = (text) => {
    $("#stream-state").textContent = `${text} · ${count} item${count === 1 ? "" : "s"} · ${(performance.now() - started).toFixed(0)} ms`;
    $("#call").disabled = false;
    $("#stop").hidden = true;
    running = null;
  };
  try {
    const response = await fetch(`${config.ops}${current.op.id}`, {
      method: "POST", headers: { "content-type": "application/json", accept: "text/event-stream", ...authHeaders() },
      body: JSON.stringify(input), signal: controller.signal,
    });
    if (!response.ok) {
      const body = await response.json().catch(() => ({}));
      finish("failed");
      showError(body, response.status, response.headers.get("x-request-id"));
      return;
    }
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    let ended = false;
    while (!ended) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer = parseEvents(buffer + decoder.decode(value, { stream: true }), (event, data, id) => {
        const parsed = JSON.parse(data);
        if (event === "complete") { ended = true; finish("completed"); }
        else if (event === "error") { ended = true; finish("failed"); showError(parsed, response.status); }
        else {
          count += 1;
          items.append(el("div", { class: "item" }, el("div", { class: "n", text: `#${id ?? count - 1} · ${parsed.meta && parsed.meta.timestamp ? new Date(parsed.meta.timestamp).toISOString() : ""}` }),
            el("pre", { text: JSON.stringify(parsed.data, null, 2) })));
        }
      });
    }
    if (!ended) finish("ended");
  } catch (error) {
    finish(controller.signal.aborted ? "stopped" : `failed: ${error}`);
  }
}

// ------------------------------------------------------------------------------------------
// Page

function select(op) {
  if (running) running.abort();
  for (const node of document.querySelectorAll("nav button.op")) node.classList.toggle("selected", node.dataset.op === op.id);
  const schema = resolve(op.schemaRef);
  const form = control(schema, "", null, true);
  current = { op, schema, read: form.read };
  const raw = el("textarea", { id: "raw", spellcheck: "false" });
  const rawErrors = el("ul", { class: "violations", id: "raw-errors" });
  raw.addEventListener("input", () => {
    let value;
    try { value = raw.value.trim() ? JSON.parse(raw.value) : {}; } catch (error) {
      rawErrors.replaceChildren(el("li", { class: "field-error", text: `not JSON: ${error.message}` }));
      return;
    }
    const problems = validate(schema, value);
    rawErrors.replaceChildren(...problems.map((p) => el("li", { class: "field-error", text: `${p.path || "/"}: ${p.message}` })));
  });
  const formPanel = el("div", { id: "form-panel" }, form.node);
  const rawPanel = el("div", { id: "raw-panel", hidden: true }, raw, rawErrors);
  const tab = (id, text, active, show) => el("button", { type: "button", id, class: active ? "active" : "", text, onclick: () => {
    for (const node of document.querySelectorAll(".tabs button")) node.classList.remove("active");
    $(`#${id}`).classList.add("active");
    if (show === "raw") {
      try { raw.value = JSON.stringify(form.read().value || {}, null, 2); } catch (_) { /* keep the text */ }
      raw.dispatchEvent(new Event("input"));
    }
    formPanel.hidden = show !== "form";
    rawPanel.hidden = show !== "raw";
  } });
  const isStream = op.kind === "SUBSCRIPTION";
  $("main").replaceChildren(
    el("div", { class: "card" },
      el("div", { class: "op-title" }, el("span", { class: `kind ${op.kind}`, text: op.kind }), el("code", { id: "op-id", text: op.id })),
      op.description ? el("p", { text: op.description }) : (op.summary ? el("p", { text: op.summary }) : null),
      el("div", { class: "access muted", id: "access" }, "access: ", describeAccess(op.access)),
      el("div", { class: "muted", style: "font-size:12px;margin-top:4px" }, `${op.method.toUpperCase()} ${config.ops}${op.id}`)),
    el("div", { class: "card" },
      el("div", { class: "tabs" }, tab("mode-form", "Form", true, "form"), tab("mode-raw", "Raw JSON", false, "raw")),
      formPanel, rawPanel,
      el("div", { class: "actions" },
        el("button", { type: "button", class: "primary", id: "call", text: isStream ? "Subscribe" : "Call", onclick: call }),
        el("button", { type: "button", class: "stop", id: "stop", text: "Stop", hidden: true, onclick: () => running && running.abort() }),
        el("label", { class: "muted", title: "check the input against the schema here before sending it" },
          el("input", { type: "checkbox", id: "precheck", checked: true }), " check before sending"),
        el("span", { id: "status", class: "muted" }))),
    el("div", { class: "card", id: "result" }, el("div", { class: "muted", text: "The result appears here." })));
  history.replaceState(null, "", `#${op.id}`);
}

function renderNav(ops, filter) {
  const nav = $("#ops");
  const byNamespace = new Map();
  for (const op of ops) {
    if (filter && !op.id.toLowerCase().includes(filter) && !op.summary.toLowerCase().includes(filter)) continue;
    if (!byNamespace.has(op.namespace)) byNamespace.set(op.namespace, []);
    byNamespace.get(op.namespace).push(op);
  }
  nav.replaceChildren(...[...byNamespace.entries()].map(([namespace, list]) => el("section", { "data-namespace": namespace },
    el("h2", { text: namespace }),
    list.map((op) => el("button", { type: "button", class: "op", "data-op": op.id, title: op.summary, onclick: () => select(op) },
      el("span", { class: `kind ${op.kind}`, text: op.kind[0] }), el("span", { text: op.id.slice(namespace.length + 1) || op.id }))))));
}

async function start() {
  const saved = JSON.parse(sessionStorage.getItem("opkit-explorer-auth") || "{}");
  if (saved.name) $("#auth-scheme").value = saved.name;
  if (saved.secret) $("#auth-value").value = saved.secret;
  const links = [el("a", { href: config.openapi, id: "openapi-link", text: "OpenAPI document" })];
  if (config.mcp) links.push(el("a", { href: config.mcp, id: "mcp-link", title: "MCP Streamable HTTP endpoint: point an MCP client here", text: `MCP endpoint (${config.mcp})` }));
  $(".links").replaceChildren(...links);
  try {
    const response = await fetch(config.openapi, { headers: authHeaders() });
    doc = await response.json();
  } catch (error) {
    $("main").replaceChildren(el("div", { class: "empty", text: `The OpenAPI document could not be read: ${error}` }));
    return;
  }
  document.title = `${doc.info.title} · operations`;
  $("#title").textContent = doc.info.title;
  const ops = operationsOf(doc);
  renderNav(ops, "");
  $("#filter").addEventListener("input", (event) => renderNav(ops, event.target.value.toLowerCase()));
  const wanted = decodeURIComponent(location.hash.slice(1));
  const first = ops.find((op) => op.id === wanted) || ops[0];
  if (first) select(first);
  else $("main").replaceChildren(el("div", { class: "empty", text: "This server has no operations." }));
  document.body.dataset.ready = "true";
}

start();
