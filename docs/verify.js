// The waiting room's lottery, checked in the browser: the same
// computations and checks as the Go package
// github.com/go-waitingroom/waitingroom/lottery (Commit, Draw, Place,
// Verify), with WebCrypto's SHA-256 and HMAC. verify.html uses it; node
// (18 or later) runs it too, which is how the repository's tests compare it
// with the Go package. No external resources, no build step.
"use strict";

(function (root) {
  const subtle = root.crypto.subtle;
  const enc = new TextEncoder();
  const HOLD = 3; // intervals a winning draw holds: its own and the next two
  const MAX_UNIX = 253402300800; // the year 10000
  const MAX_INTERVAL_MS = 86400000;

  class LotteryError extends Error {
    constructor(kind, message) {
      super(message);
      this.kind = kind; // record, commitmentChanged, notRevealed, seed, unlisted, rankMoved, missingOdds, oddsChanged, notDrawn, outOfTurn
    }
  }

  function fromHex(s, what) {
    if (typeof s !== "string" || s.length !== 64 || !/^[0-9a-fA-F]*$/.test(s)) {
      throw new LotteryError("record", what + ": want 64 hex digits");
    }
    const b = new Uint8Array(32);
    for (let i = 0; i < 32; i++) b[i] = parseInt(s.substr(2 * i, 2), 16);
    return b;
  }

  function toHex(b) {
    return Array.from(new Uint8Array(b), (x) => x.toString(16).padStart(2, "0")).join("");
  }

  // be64 writes each of xs (BigInt or integer Number) as 8 bytes big-endian.
  function be64(...xs) {
    const b = new Uint8Array(8 * xs.length);
    const v = new DataView(b.buffer);
    xs.forEach((x, i) => v.setBigUint64(8 * i, BigInt.asUintN(64, BigInt(x))));
    return b;
  }

  function concat(...parts) {
    const b = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
    let o = 0;
    for (const p of parts) {
      b.set(p, o);
      o += p.length;
    }
    return b;
  }

  async function hmac(seed, msg) {
    const key = await subtle.importKey("raw", seed, { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
    return new Uint8Array(await subtle.sign("HMAC", key, msg));
  }

  // commit returns the commitment to seed (32 bytes) for [start, end), hex.
  async function commit(seed, start, end) {
    const msg = concat(enc.encode("waitingroom lottery v1 commit"), be64(start, end), seed);
    return toHex(await subtle.digest("SHA-256", msg));
  }

  // unit reads the first 8 bytes of mac as a number in [0, 1): shifted
  // right by 11, over 2^53.
  function unit(mac) {
    return Number(new DataView(mac.buffer).getBigUint64(0) >> 11n) / 2 ** 53;
  }

  // draw returns identity's (BigInt) draw for interval w, in [0, 1).
  async function draw(seed, identity, w) {
    return unit(await hmac(seed, concat(enc.encode("waitingroom lottery v1 draw"), be64(identity, w))));
  }

  // place returns identity's (BigInt) place in an event's shuffle, in
  // [0, 1).
  async function place(seed, identity) {
    return unit(await hmac(seed, concat(enc.encode("waitingroom lottery v1 place"), be64(identity))));
  }

  // parseIdentity reads 1 to 16 hex digits as a BigInt.
  function parseIdentity(s) {
    if (typeof s !== "string" || !/^[0-9a-fA-F]{1,16}$/.test(s)) {
      throw new LotteryError("record", "identity: want 1 to 16 hex digits");
    }
    return BigInt("0x" + s);
  }

  const isInt = (x) => Number.isSafeInteger(x);

  // The keys of a record and of its odds and cuts. A key that names one
  // of them in another case ("Odds", "SEED") makes the record malformed,
  // as in the Go package, which would otherwise take it for the key: the
  // fold is Go's strings.EqualFold against these ASCII names: letters in
  // either case, and the long s, which folds to s (the Kelvin sign folds
  // to k, which none has).
  const KEYS = ["start", "end", "commitment", "seed", "intervalMs", "odds", "cuts", "prequeued", "places", "interval"];
  const fold = (s) => s.replace(/[A-Z]/g, (ch) => ch.toLowerCase()).replace(/\u017f/g, "s");
  function exactKeys(obj) {
    if (obj === null || typeof obj !== "object" || Array.isArray(obj)) return;
    for (const k of Object.keys(obj)) {
      for (const name of KEYS) {
        if (k !== name && fold(k) === fold(name)) {
          throw new LotteryError("record", "key " + JSON.stringify(k) + ": did you mean " + JSON.stringify(name) + "? (keys are case-sensitive)");
        }
      }
    }
  }

  // hexOrNone reads a hash given as 64 hex digits, or nothing ("", null or
  // missing) as null; all zeros too, which stand for none.
  function hexOrNone(s, what) {
    if (s === undefined || s === null || s === "") return null;
    const b = fromHex(s, what);
    return b.every((x) => x === 0) ? null : b;
  }
  const floorDiv = (a, b) => (a - (a % b)) / b; // exact, for a >= 0 and b > 0

  // holds reports whether interval w belongs to record r's period: whether
  // its last millisecond, (w + 1) * intervalMs - 1, lies in the period.
  function holds(r, w) {
    return w >= floorDiv(r.start * 1000, r.intervalMs) && w < floorDiv(r.end * 1000, r.intervalMs);
  }

  // cutAt returns the cut of cuts (checked: ascending intervals) in force
  // in interval w: the latest at or before w, or undefined if none.
  function cutAt(cuts, w) {
    let c;
    for (const o of cuts) {
      if (o.interval > w) break;
      c = o.odds;
    }
    return c;
  }

  // rankOf returns the 1-based rank of place p in places (checked:
  // strictly ascending) if p is one of them, exactly, or 0: 1 + the
  // number of places below it.
  function rankOf(places, p) {
    let lo = 0, hi = places.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (places[mid] < p) lo = mid + 1;
      else hi = mid;
    }
    return lo < places.length && places[lo] === p ? lo + 1 : 0;
  }

  // held returns the odds (odds: by interval) a visitor let in at
  // interval w is held to: the greater of w's and that of the interval
  // before (which the room uses until it has w's), or undefined if the
  // record has neither.
  function held(odds, w) {
    const o = odds.get(w), p = odds.get(w - 1);
    return p !== undefined && (o === undefined || p > o) ? p : o;
  }

  // admits reports whether the draw lets visitor id in at interval w of
  // record r (odds: its odds by interval): their draw of w, or of one of
  // the HOLD-1 intervals before it within the period, fell under held of
  // w or of its own interval: a win holds HOLD intervals, whatever the
  // odds do after it, and odds that rise hold the draws they favour.
  async function admits(r, odds, id, w) {
    const now = held(odds, w);
    for (let x = w; x > w - HOLD && holds(r, x); x--) {
      let o = held(odds, x);
      if (now !== undefined && (o === undefined || now > o)) o = now;
      if (o !== undefined && (await draw(r.seedBytes, id, x)) < o) return true;
    }
    return false;
  }

  // check throws a "record" LotteryError if r is malformed or claim c names
  // an interval outside its period; it returns r with its defaults filled
  // in and the seed's bytes.
  function check(r, c) {
    const bad = (m) => new LotteryError("record", m);
    if (r === null || typeof r !== "object" || Array.isArray(r)) throw bad("no record");
    if (r.intervalMs != null && !isInt(r.intervalMs)) throw bad("intervalMs " + r.intervalMs + ": not a whole number");
    exactKeys(r);
    for (const list of [r.odds, r.cuts]) if (Array.isArray(list)) list.forEach(exactKeys);
    const start = r.start ?? 0, end = r.end ?? 0;
    if (!isInt(start) || !isInt(end) || start < 0 || end <= start || end > MAX_UNIX) {
      throw bad("period " + start + "-" + end + ": want 0 <= start < end <= " + MAX_UNIX);
    }
    const prequeued = r.prequeued ?? 0;
    if (!isInt(prequeued) || prequeued < 0) throw bad("prequeued " + prequeued + ": want 0 or more");
    r = { ...r, start, end, intervalMs: r.intervalMs ?? 0, odds: r.odds ?? [], cuts: r.cuts ?? [], places: r.places ?? [] };
    if (!Array.isArray(r.odds) || !Array.isArray(r.cuts) || !Array.isArray(r.places)) throw bad("odds, cuts and places must be lists");
    r.odds = [...r.odds];
    r.cuts = [...r.cuts];
    r.places = [...r.places];
    const named = c.waited.length > 0 || c.shown.length > 0 || c.admitted !== 0;
    if ((r.odds.length > 0 || r.cuts.length > 0 || named) && (!isInt(r.intervalMs) || r.intervalMs <= 0 || r.intervalMs > MAX_INTERVAL_MS)) {
      throw bad("intervalMs " + r.intervalMs + ": want 1 to " + MAX_INTERVAL_MS);
    }
    r.odds.forEach((o, i) => {
      if (o === null) o = {}; // as Go reads null
      if (typeof o !== "object" || Array.isArray(o) || !isInt(o.interval ?? 0) || typeof (o.odds ?? 0) !== "number") {
        throw bad("odds record " + (i + 1) + " is not {interval, odds}");
      }
      o = { interval: o.interval ?? 0, odds: o.odds ?? 0 };
      r.odds[i] = o;
      if (!(o.odds >= 0 && o.odds <= 1)) throw bad("interval " + o.interval + ": odds " + o.odds + " outside [0, 1]");
      if (i > 0 && o.interval <= r.odds[i - 1].interval) throw bad("odds of interval " + o.interval + " out of order");
      if (!holds(r, o.interval)) throw bad("odds of interval " + o.interval + ", outside the period");
    });
    r.cuts.forEach((o, i) => {
      if (o === null) o = {}; // as Go reads null
      if (typeof o !== "object" || Array.isArray(o) || !isInt(o.interval ?? 0) || typeof (o.odds ?? 0) !== "number") {
        throw bad("cut record " + (i + 1) + " is not {interval, odds}");
      }
      o = { interval: o.interval ?? 0, odds: o.odds ?? 0 };
      r.cuts[i] = o;
      if (!(o.odds >= 0 && o.odds <= 1)) throw bad("interval " + o.interval + ": cut " + o.odds + " outside [0, 1]");
      if (i > 0 && o.interval <= r.cuts[i - 1].interval) throw bad("cut of interval " + o.interval + " out of order");
      if (i > 0 && o.odds < r.cuts[i - 1].odds) {
        throw bad("cut of interval " + o.interval + ", " + o.odds + ", below that of " + r.cuts[i - 1].interval + ": cuts never decrease");
      }
      if (!holds(r, o.interval)) throw bad("cut of interval " + o.interval + ", outside the period");
    });
    r.places.forEach((v, i) => {
      if (v === null) v = 0; // as Go reads null
      if (typeof v !== "number") throw bad("place " + (i + 1) + " of the list is not a number");
      r.places[i] = v;
      if (!(v >= 0 && v < 1)) throw bad("place " + (i + 1) + " of the list, " + v + ", outside [0, 1)");
      if (!Number.isInteger(v * 2 ** 53)) throw bad("place " + (i + 1) + " of the list, " + v + ", not a multiple of 2^-53");
      if (i > 0 && v <= r.places[i - 1]) {
        throw bad("place " + (i + 1) + " of the list, " + v + ", not above the one before, " + r.places[i - 1] +
          ": want places in strictly ascending order");
      }
    });
    r.seedBytes = hexOrNone(r.seed, "seed");
    r.commitment = toHex(fromHex(r.commitment, "commitment"));
    if (/^0+$/.test(r.commitment)) throw bad("no commitment");
    for (const w of [...c.waited, c.admitted]) {
      if (!isInt(w)) throw bad("interval " + w + ": not a whole number");
    }
    for (const w of [...c.waited, ...(c.admitted !== 0 ? [c.admitted] : [])]) { // admitted 0: not let in
      if (!holds(r, w)) {
        throw bad("interval " + w + " is outside the period: verify it with its own period's record" +
          " (let in after the period, by neither its draws nor its shuffle, claim no admission in it)");
      }
    }
    for (const s of c.shown) {
      if (!isInt(s.interval) || typeof s.odds !== "number") throw bad("shown odds: want {interval, odds}");
      if (!(s.odds >= 0 && s.odds <= 1)) throw bad("odds " + s.odds + " shown for interval " + s.interval + ": want 0 to 1");
      if (!holds(r, s.interval)) throw bad("interval " + s.interval + " is outside the period: verify it with its own period's record");
    }
    c.commitmentHex = c.commitment === "" ? null : hexOrNone(c.commitment, "the commitment shown");
    if (c.commitmentHex) c.commitmentHex = toHex(c.commitmentHex);
    if (typeof c.shuffled !== "boolean") throw bad("shuffled " + c.shuffled + ": want true or false");
    if (!isInt(c.rank) || c.rank < 0) throw bad("rank " + c.rank + ": want 1 or more (0 claims none)");
    if (c.rank !== 0 && !c.shuffled) throw bad("rank " + c.rank + " claimed by a visitor not of the shuffle");
    return r;
  }

  // verify checks visitor identity's (hex text) claim against record r
  // (parsed JSON), as lottery.Verify does. claim: {waited: [w...], shown:
  // [{interval, odds}...], admitted: w or 0, shuffled: true if the visitor
  // joined the event's pre-queue, rank: the rank in the shuffle they
  // noted or 0, commitment: the commitment the room showed them, 64 hex
  // digits, or ""}. It resolves to {draws: [{interval, draw, odds, won}...],
  // place, cut, rank, listed, error: null or {kind, message}}: place when
  // the record has cuts or the claim is shuffled, cut when a shuffled
  // admission has one, rank (1-based) and listed (how many places the
  // record lists) when a shuffled claim's place is listed, 0 otherwise.
  async function verify(r, identity, claim) {
    const rep = { draws: [], place: 0, cut: 0, rank: 0, listed: 0, error: null };
    try {
      const id = parseIdentity(identity);
      const list = (x) => (Array.isArray(x) ? x : []);
      const c = {
        waited: list(claim?.waited),
        shown: list(claim?.shown).map((s) => ({ interval: s?.interval ?? 0, odds: s?.odds ?? 0 })),
        admitted: claim?.admitted ?? 0,
        shuffled: claim?.shuffled ?? false,
        rank: claim?.rank ?? 0,
        commitment: claim?.commitment ?? "",
      };
      r = check(r, c);
      if (c.commitmentHex && c.commitmentHex !== r.commitment) {
        throw new LotteryError("commitmentChanged", "shown " + c.commitmentHex + ", recorded " + r.commitment + " for " + r.start + "-" + r.end);
      }
      if (!r.seedBytes) throw new LotteryError("notRevealed", "the record has no seed yet");
      if ((await commit(r.seedBytes, r.start, r.end)) !== r.commitment) {
        throw new LotteryError("seed", "the seed is not the one committed to for " + r.start + "-" + r.end);
      }
      const odds = new Map(r.odds.map((o) => [o.interval, o.odds]));
      const ws = [...c.waited, ...c.shown.map((s) => s.interval)];
      if (c.admitted !== 0) for (let k = 0; k < (c.shuffled ? 1 : HOLD); k++) ws.push(c.admitted - k);
      for (const w of [...new Set(ws)].sort((a, b) => a - b)) {
        if (!odds.has(w) || !holds(r, w)) continue;
        const d = await draw(r.seedBytes, id, w);
        rep.draws.push({ interval: w, draw: d, odds: odds.get(w), won: d < odds.get(w) });
      }
      if (r.cuts.length > 0 || c.shuffled) rep.place = await place(r.seedBytes, id);
      if (c.shuffled) {
        if (r.places.length === 0) throw new LotteryError("unlisted", "the record lists no places");
        const k = rankOf(r.places, rep.place);
        if (k === 0) {
          throw new LotteryError("unlisted", "place " + rep.place + " is not among the record's " + r.places.length);
        }
        rep.rank = k;
        rep.listed = r.places.length;
        if (c.rank !== 0 && c.rank !== k) {
          throw new LotteryError("rankMoved", "noted " + c.rank + ", now " + k + " of " + rep.listed);
        }
      }
      for (const w of c.waited) {
        // a shuffled visitor did not draw
        if (!odds.has(w) && !c.shuffled) throw new LotteryError("missingOdds", "the record has no odds for interval " + w);
      }
      if (c.admitted !== 0 && c.shuffled) {
        const cut = cutAt(r.cuts, c.admitted);
        if (cut === undefined) {
          throw new LotteryError("missingOdds", "the record has no cut at or before interval " + c.admitted);
        }
        rep.cut = cut;
      } else if (c.admitted !== 0 && held(odds, c.admitted) === undefined) {
        throw new LotteryError("missingOdds", "the record has no odds for interval " + c.admitted + ", nor for the one before");
      }
      for (const s of c.shown) {
        // A shuffled visitor is shown the cut fixed in the interval, not odds.
        const o = c.shuffled ? r.cuts.find((x) => x.interval === s.interval)?.odds : odds.get(s.interval);
        if (o === undefined) {
          throw new LotteryError("missingOdds", "the record has no " + (c.shuffled ? "cut" : "odds") + " for interval " + s.interval + ", shown as " + s.odds);
        }
        if (o !== s.odds) throw new LotteryError("oddsChanged", "interval " + s.interval + ": shown " + s.odds + ", recorded " + o);
      }
      if (c.admitted !== 0 && c.shuffled && !(rep.place < rep.cut)) {
        throw new LotteryError("outOfTurn", "let in at interval " + c.admitted + ", place " + rep.place +
          " not below the cut " + rep.cut);
      }
      if (c.admitted !== 0 && !c.shuffled && !(await admits(r, odds, id, c.admitted))) {
        let next = "";
        for (const x of [c.admitted - 1, c.admitted + 1]) {
          if (!next && (await admits(r, odds, id, x))) {
            next = " (it held at interval " + x + ": if the visitor was let in then, claim that one)";
          }
        }
        throw new LotteryError("notDrawn", "let in at interval " + c.admitted + ", no draw of intervals " +
          (c.admitted - HOLD + 1) + " to " + c.admitted + " fell under the odds" + next);
      }
    } catch (e) {
      if (!(e instanceof LotteryError)) throw e;
      rep.error = { kind: e.kind, message: e.message };
    }
    return rep;
  }

  // parseClaim reads a claim from text, as `waitingroom verify` takes it:
  // waited "58828440-58828445, 58828450", shown "58828440=0.25, ...",
  // admitted a number or empty, shuffled true or false (the visitor
  // joined the event's pre-queue), rank the rank in the shuffle they
  // noted, a number or empty, commitment the commitment the room showed
  // them, 64 hex digits or empty. It throws an Error saying what is wrong.
  function parseClaim(waited, shown, admitted, shuffled = false, rank = "", commitment = "") {
    const int = (s, what) => {
      if (!/^-?[0-9]+$/.test(s) || !Number.isSafeInteger(Number(s))) throw new Error(what + " " + JSON.stringify(s) + ": want a whole number");
      return Number(s);
    };
    const items = (s) => s.split(",").map((x) => x.trim()).filter((x) => x !== "");
    if (typeof shuffled !== "boolean") throw new Error("shuffled " + JSON.stringify(shuffled) + ": want true or false");
    const c = { waited: [], shown: [], admitted: 0, shuffled, rank: 0, commitment: commitment.trim() };
    if (c.commitment !== "" && !/^[0-9a-fA-F]{64}$/.test(c.commitment)) {
      throw new Error("commitment " + JSON.stringify(c.commitment) + ": want 64 hex digits, or nothing");
    }
    for (const x of items(waited)) {
      const m = /^(-?[0-9]+)-(-?[0-9]+)$/.exec(x);
      if (!m) {
        c.waited.push(int(x, "interval"));
        continue;
      }
      const a = int(m[1], "interval"), b = int(m[2], "interval");
      if (b < a || b - a >= 100000) throw new Error("range " + x + ": want first-last, at most 100000 intervals");
      for (let w = a; w <= b; w++) c.waited.push(w);
    }
    for (const x of items(shown)) {
      const [w, o, extra] = x.split("=");
      if (o === undefined || extra !== undefined || !/^\s*[0-9]*\.?[0-9]+(e[-+]?[0-9]+)?\s*$/i.test(o)) {
        throw new Error("shown odds " + JSON.stringify(x) + ": want interval=odds");
      }
      c.shown.push({ interval: int(w.trim(), "interval"), odds: Number(o) });
    }
    if (admitted.trim() !== "") c.admitted = int(admitted.trim(), "admitted interval");
    if (rank.trim() !== "") {
      c.rank = int(rank.trim(), "rank");
      if (c.rank < 1) throw new Error("rank " + JSON.stringify(rank.trim()) + ": want 1 or more, or nothing");
    }
    return c;
  }

  // parseRecord parses a record's JSON text as Go's encoding/json reads
  // it: nested no deeper than 10000 (arrays and objects), or malformed,
  // so that one record never gets two verdicts.
  function parseRecord(text) {
    let depth = 0, inString = false;
    for (let i = 0; i < text.length; i++) {
      const ch = text[i];
      if (inString) {
        if (ch === "\\") i++;
        else if (ch === '"') inString = false;
      } else if (ch === '"') inString = true;
      else if (ch === "[" || ch === "{") {
        if (++depth > 10000) throw new Error("nested deeper than 10000");
      } else if (ch === "]" || ch === "}") depth--;
    }
    return JSON.parse(text);
  }

  const api = { commit, draw, place, parseIdentity, parseClaim, parseRecord, verify };
  if (typeof module === "object" && module.exports) module.exports = api;
  else root.lottery = api;
})(globalThis);
