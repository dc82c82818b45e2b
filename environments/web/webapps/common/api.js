// Tiny helpers shared by the apps: JSON calls to /api, query parameters, element building.
async function api(path, body) {
  const opts = body === undefined ? {} : {method: 'POST', headers: {'Content-Type': 'application/json'},
                                          body: JSON.stringify(body)};
  const reply = await fetch('/api/' + path, opts);
  const data = await reply.json();
  if (!reply.ok) { throw new Error(data.error || reply.statusText); }
  return data;
}
function param(name) { return new URLSearchParams(location.search).get(name); }
function h(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k.startsWith('on')) { node.addEventListener(k.slice(2), v); } else { node.setAttribute(k, v); }
  }
  for (const c of children) { node.append(c); }
  return node;
}
function show(id, text) { document.getElementById(id).textContent = text; }
