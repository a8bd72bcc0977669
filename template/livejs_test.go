package template

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/go-waitingroom/waitingroom/internal/servicetest"
)

// liveHarness runs the live page's script in node on a small document
// built from a page's <main> (what the script reads and writes: elements,
// attributes, text, <template> contents, live children), answers its
// requests with the JSON it is given, one answer a refresh (its Refresh
// header 31 s), and prints <main> as the script left it after each: the
// first as loaded. It fails when the script navigates or fails to update
// (it then asks again after the page's 30 s).
const liveHarness = `"use strict";
const input = JSON.parse(require("fs").readFileSync(process.argv[2], "utf8"));
const VOID = new Set(["area", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "wbr"]);
const ENT = {amp: "&", lt: "<", gt: ">", quot: '"', apos: "'"};
const decode = s => s.replace(/&(#x?[0-9a-f]+|[a-z]+);/gi, (m, e) => e[0] === "#" ?
  String.fromCodePoint(e[1] === "x" ? parseInt(e.slice(2), 16) : +e.slice(1)) : (ENT[e] ?? m));
const esc = (s, q) => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(q ? /"/g : /$^/, "&quot;");
function live(f) { return new Proxy({}, {get: (_, k) => k === "length" ? f().length : /^\d+$/.test(k) ? f()[+k] : undefined}); }
class Txt {
  constructor(t) { this.nodeType = 3; this.data = t; this.parentNode = null; }
  get textContent() { return this.data; }
  cloneNode() { return new Txt(this.data); }
  html() { return esc(this.data); }
}
class Frag {
  constructor() { this.nodeType = 11; this.childNodes = []; this.parentNode = null; }
  get children() { return live(() => this.childNodes.filter(n => n.nodeType === 1)); }
  get textContent() { return this.childNodes.map(n => n.textContent).join(""); }
  set textContent(t) { this.childNodes.forEach(n => n.parentNode = null); this.childNodes = []; if (t !== "") this.appendChild(new Txt(t)); }
  insertBefore(n, ref) {
    const add = n.nodeType === 11 ? n.childNodes.splice(0) : [n];
    for (const c of add) { if (c.parentNode) c.parentNode.removeChild(c); c.parentNode = this; }
    const at = ref ? this.childNodes.indexOf(ref) : this.childNodes.length;
    this.childNodes.splice(at < 0 ? this.childNodes.length : at, 0, ...add);
    return n;
  }
  appendChild(n) { return this.insertBefore(n, null); }
  removeChild(n) { this.childNodes.splice(this.childNodes.indexOf(n), 1); n.parentNode = null; return n; }
  replaceChild(n, old) { this.insertBefore(n, old); return this.removeChild(old); }
  cloneNode(deep) { const c = this.shallow(); if (deep) this.childNodes.forEach(n => c.appendChild(n.cloneNode(true))); return c; }
  shallow() { return new Frag(); }
  querySelectorAll(sel) {
    const [, tag, attr] = /^([a-z]*)\[([a-z-]+)\]$/.exec(sel), out = [];
    const walk = n => n.childNodes.forEach(c => { if (c.nodeType !== 1) return; if ((!tag || c.tag === tag) && c.hasAttribute(attr)) out.push(c); walk(c); });
    walk(this);
    return out;
  }
  html() { return this.childNodes.map(n => n.html()).join(""); }
}
class El extends Frag {
  constructor(tag, attrs) { super(); this.nodeType = 1; this.tag = tag; this.attrs = attrs || []; if (tag === "template") this.content = new Frag(); }
  getAttribute(n) { const a = this.attrs.find(a => a[0] === n); return a ? a[1] : null; }
  hasAttribute(n) { return this.getAttribute(n) !== null; }
  setAttribute(n, v) { const a = this.attrs.find(a => a[0] === n); if (a) a[1] = String(v); else this.attrs.push([n, String(v)]); }
  removeAttribute(n) { this.attrs = this.attrs.filter(a => a[0] !== n); }
  get hidden() { return this.hasAttribute("hidden"); }
  set hidden(h) { if (h) this.setAttribute("hidden", ""); else this.removeAttribute("hidden"); }
  shallow() { const c = new El(this.tag, this.attrs.map(a => a.slice())); if (this.content) c.content = this.content.cloneNode(true); return c; }
  html() {
    const open = "<" + this.tag + this.attrs.map(([k, v]) => v === "" ? " " + k : " " + k + '="' + esc(v, true) + '"').join("") + ">";
    return VOID.has(this.tag) ? open : open + (this.content || this).childNodes.map(n => n.html()).join("") + "</" + this.tag + ">";
  }
}
function parse(src) {
  const root = new Frag(), stack = [root];
  const re = /<\/([a-z0-9]+)\s*>|<([a-z0-9]+)((?:\s+[^\s=>]+(?:="[^"]*")?)*)\s*>|[^<]+/gi;
  for (let m; (m = re.exec(src));) {
    const top = stack[stack.length - 1];
    if (m[1]) { while (stack.length > 1 && stack.pop().tag !== m[1]); continue; }
    if (!m[2]) { (top.content || top).appendChild(new Txt(decode(m[0]))); continue; }
    const attrs = [...m[3].matchAll(/([^\s=]+)(?:="([^"]*)")?/g)].map(a => [a[1], decode(a[2] ?? "")]);
    const el = new El(m[2].toLowerCase(), attrs);
    (top.content || top).appendChild(el);
    if (!VOID.has(el.tag)) stack.push(el);
  }
  return root;
}
(async () => {
  const main = parse(input.main), timers = [], out = [];
  const document = {
    documentElement: {lang: input.lang}, readyState: "complete", cookie: "",
    currentScript: {getAttribute: n => ({"data-refresh": String(input.refresh), "data-cookie": ""})[n] ?? null},
    querySelectorAll: s => main.querySelectorAll(s),
    getElementById: id => main.querySelectorAll("[id]").find(e => e.getAttribute("id") === id) || null,
  };
  const window = {stop() {}, addEventListener() {}};
  window.top = window.self = window;
  let answer = null, navigated = false;
  const location = {href: "http://room.test/", replace() { navigated = true; }};
  const fetch = () => Promise.resolve({type: "basic",
    headers: {get: n => ({refresh: "31", "content-type": "application/json"})[n.toLowerCase()] ?? null},
    json: () => Promise.resolve(JSON.parse(answer))});
  new Function("document", "window", "location", "fetch", "setTimeout", "clearTimeout", input.script)(
    document, window, location, fetch, (f, ms) => timers.push([f, ms]), () => timers.splice(0));
  out.push(main.html());
  for (const a of input.answers) {
    const marked = main.querySelectorAll("[data-wr-mark]");
    answer = a;
    const due = timers.splice(0);
    if (due.length !== 1) throw new Error(due.length + " timers");
    due[0][0]();
    for (let i = 0; i < 5; i++) await new Promise(r => setImmediate(r));
    if (navigated) throw new Error("navigated");
    // As the answer's Refresh header says; 30 s (the page's) after an error.
    if (timers.length !== 1 || timers[0][1] !== 31000) throw new Error("the update failed: " + JSON.stringify(timers));
    marked.forEach(e => { if (!main.querySelectorAll("[data-wr-mark]").includes(e)) throw new Error("replaced: " + e.tag); });
    out.push(main.html());
  }
  console.log(JSON.stringify(out));
})().catch(e => { console.error(e.stack); process.exit(1); });
`

// mainRE is the <main> of a page.
var mainRE = regexp.MustCompile(`(?s)<main>(.*)</main>`)

// runLive loads page in node's harness, answers its refreshes with the
// JSON of each of answers, and returns its <main> after each, the first
// as loaded. Elements of page marked data-wr-mark must stay the same
// element (not replaced by another copy) throughout.
func runLive(t *testing.T, page, lang string, answers ...*Data) []string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		servicetest.Unavailable(t, servicetest.Program("node", "to run the live page's script"), err)
	}
	m := mainRE.FindStringSubmatch(page)
	require.NotNil(t, m)
	in := map[string]any{"main": m[1], "lang": lang, "refresh": 30, "script": liveJS, "answers": []string{}}
	var texts []string
	for _, d := range answers {
		var b bytes.Buffer
		require.NoError(t, WriteJSON(&b, "room", d))
		texts = append(texts, b.String())
	}
	if texts != nil {
		in["answers"] = texts
	}
	dir := t.TempDir()
	src, err := json.Marshal(in)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "in.json"), src, 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "harness.js"), []byte(liveHarness), 0o600))
	out, err := exec.Command(node, filepath.Join(dir, "harness.js"), filepath.Join(dir, "in.json")).Output()
	if ee, ok := err.(*exec.ExitError); ok {
		t.Fatalf("node: %v\n%s", err, ee.Stderr)
	}
	require.NoError(t, err)
	var mains []string
	require.NoError(t, json.Unmarshal(out, &mains))
	require.Len(t, mains, len(answers)+1)
	return mains
}

// loaded is page's <main> as the harness writes it once the page is
// loaded: what a page updated in place should read as.
func loaded(t *testing.T, d *Data, lang string) string {
	t.Helper()
	return runLive(t, render(t, Default(), d, lang), lang)[0]
}

// drawRE is the draw's section of a page.
var drawRE = regexp.MustCompile(`(?s)<details class="draw".*?</details>`)

// section is page's draw section, "" for none.
func section(page string) string {
	return drawRE.FindString(strings.NewReplacer(` data-wr-mark=""`, "", ` data-wr-mark`, "").Replace(page))
}
