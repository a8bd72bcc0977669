// The waiting room's lottery, checked in the browser: the same
// computations and checks as the Go package
// github.com/go-waitingroom/waitingroom/lottery (Commit, Draw, RankHash,
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
      this.kind = kind; // record, notRevealed, seed, missingOdds, oddsChanged, notDrawn, rank
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

  // draw returns identity's (BigInt) draw for interval w, in [0, 1).
  async function draw(seed, identity, w) {
    const mac = await hmac(seed, concat(enc.encode("waitingroom lottery v1 draw"), be64(identity, w)));
    const x = new DataView(mac.buffer).getBigUint64(0) >> 11n;
    return Number(x) / 2 ** 53;
  }

  // rankHash returns identity's (BigInt) rank hash, hex.
  async function rankHash(seed, identity) {
    return toHex(await hmac(seed, concat(enc.encode("waitingroom lottery v1 rank"), be64(identity))));
  }

  // parseIdentity reads 1 to 16 hex digits as a BigInt.
  function parseIdentity(s) {
    if (typeof s !== "string" || !/^[0-9a-fA-F]{1,16}$/.test(s)) {
      throw new LotteryError("record", "identity: want 1 to 16 hex digits");
    }
    return BigInt("0x" + s);
  }

  const isInt = (x) => Number.isSafeInteger(x);
  const ceilDiv = (a, b) => Math.floor(a / b) + (a % b > 0 ? 1 : 0);

  // holds reports whether interval w belongs to record r's period.
  function holds(r, w) {
    return w >= ceilDiv(r.start * 1000, r.intervalMs) && w < ceilDiv(r.end * 1000, r.intervalMs);
  }

  // admitOdds returns the odds a visitor let in at interval w is held to:
  // the greater of w's and those of the interval before (which the room
  // draws under until it has w's), or undefined if the record has neither.
  function admitOdds(odds, w) {
    const o = odds.get(w), p = odds.get(w - 1);
    return p !== undefined && (o === undefined || p > o) ? p : o;
  }

  // admits reports whether the draw lets visitor id in at interval w of
  // record r (odds: its odds by interval): their draw of w, or of one of
  // the HOLD-1 intervals before it within the period, fell under
  // admitOdds.
  async function admits(r, odds, id, w) {
    const o = admitOdds(odds, w);
    if (o === undefined) return false;
    for (let x = w; x > w - HOLD && holds(r, x); x--) {
      if ((await draw(r.seedBytes, id, x)) < o) return true;
    }
    return false;
  }

  // check throws a "record" LotteryError if r is malformed or claim c names
  // an interval outside its period or a negative rank; it returns the
  // seed's and the rank hashes' bytes.
  function check(r, c) {
    const bad = (m) => new LotteryError("record", m);
    if (r === null || typeof r !== "object") throw bad("no record");
    const start = r.start ?? 0, end = r.end ?? 0;
    if (!isInt(start) || !isInt(end) || start < 0 || end <= start || end > MAX_UNIX) {
      throw bad("period " + start + "-" + end + ": want 0 <= start < end <= " + MAX_UNIX);
    }
    r = { ...r, start, end, intervalMs: r.intervalMs ?? 0, odds: r.odds ?? [], ranks: r.ranks ?? [] };
    if (!Array.isArray(r.odds) || !Array.isArray(r.ranks)) throw bad("odds and ranks must be lists");
    const named = c.waited.length > 0 || c.shown.length > 0 || c.admitted !== 0;
    if ((r.odds.length > 0 || named) && (!isInt(r.intervalMs) || r.intervalMs <= 0 || r.intervalMs > MAX_INTERVAL_MS)) {
      throw bad("intervalMs " + r.intervalMs + ": want 1 to " + MAX_INTERVAL_MS);
    }
    r.odds.forEach((o, i) => {
      if (o === null || typeof o !== "object" || !isInt(o.interval ?? 0) || typeof (o.odds ?? 0) !== "number") {
        throw bad("odds record " + (i + 1) + " is not {interval, odds}");
      }
      o = { interval: o.interval ?? 0, odds: o.odds ?? 0 };
      r.odds[i] = o;
      if (!(o.odds >= 0 && o.odds <= 1)) throw bad("interval " + o.interval + ": odds " + o.odds + " outside [0, 1]");
      if (i > 0 && o.interval <= r.odds[i - 1].interval) throw bad("odds of interval " + o.interval + " out of order");
      if (!holds(r, o.interval)) throw bad("odds of interval " + o.interval + ", outside the period");
    });
    r.seedBytes = r.seed && !/^0+$/.test(r.seed) ? fromHex(r.seed, "seed") : null;
    r.commitment = toHex(fromHex(r.commitment, "commitment"));
    if (/^0+$/.test(r.commitment)) throw bad("no commitment");
    r.ranks = r.ranks.map((h) => toHex(fromHex(h, "rank hash")));
    for (let i = 1; i < r.ranks.length; i++) {
      if (r.ranks[i - 1] >= r.ranks[i]) throw bad("rank hashes " + i + " and " + (i + 1) + " out of order");
    }
    for (const w of [...c.waited, c.admitted]) {
      if (!isInt(w)) throw bad("interval " + w + ": not a whole number");
      if (w !== 0 && !holds(r, w)) throw bad("interval " + w + " is outside the period: verify it with its own period's record");
    }
    for (const s of c.shown) {
      if (!isInt(s.interval) || typeof s.odds !== "number") throw bad("shown odds: want {interval, odds}");
    }
    if (!isInt(c.rank) || c.rank < 0) throw bad("rank " + c.rank + ": want 1 or more, or 0 for none");
    return r;
  }

  // verify checks visitor identity's (hex text) claim against record r
  // (parsed JSON), as lottery.Verify does. claim: {waited: [w...], shown:
  // [{interval, odds}...], admitted: w or 0, rank: n or 0}. It resolves to
  // {draws: [{interval, draw, odds, won}...], rank, error: null or
  // {kind, message}}.
  async function verify(r, identity, claim) {
    const rep = { draws: [], rank: 0, error: null };
    try {
      const id = parseIdentity(identity);
      const list = (x) => (Array.isArray(x) ? x : []);
      const c = {
        waited: list(claim?.waited),
        shown: list(claim?.shown).map((s) => ({ interval: s?.interval ?? 0, odds: s?.odds ?? 0 })),
        admitted: claim?.admitted ?? 0,
        rank: claim?.rank ?? 0,
      };
      r = check(r, c);
      if (!r.seedBytes) throw new LotteryError("notRevealed", "the record has no seed yet");
      if ((await commit(r.seedBytes, r.start, r.end)) !== r.commitment) {
        throw new LotteryError("seed", "the seed is not the one committed to for " + r.start + "-" + r.end);
      }
      const odds = new Map(r.odds.map((o) => [o.interval, o.odds]));
      const ws = [...c.waited, ...c.shown.map((s) => s.interval)];
      if (c.admitted !== 0) for (let k = 0; k < HOLD; k++) ws.push(c.admitted - k);
      for (const w of [...new Set(ws)].sort((a, b) => a - b)) {
        if (!odds.has(w) || !holds(r, w)) continue;
        const d = await draw(r.seedBytes, id, w);
        rep.draws.push({ interval: w, draw: d, odds: odds.get(w), won: d < odds.get(w) });
      }
      if (r.ranks.length > 0) rep.rank = r.ranks.indexOf(await rankHash(r.seedBytes, id)) + 1;
      for (const w of c.waited) {
        if (!odds.has(w)) throw new LotteryError("missingOdds", "the record has no odds for interval " + w);
      }
      if (c.admitted !== 0 && admitOdds(odds, c.admitted) === undefined) {
        throw new LotteryError("missingOdds", "the record has no odds for interval " + c.admitted + ", nor for the one before");
      }
      for (const s of c.shown) {
        if (!odds.has(s.interval)) throw new LotteryError("missingOdds", "the record has no odds for interval " + s.interval);
        if (odds.get(s.interval) !== s.odds) {
          throw new LotteryError("oddsChanged", "interval " + s.interval + ": shown " + s.odds + ", recorded " + odds.get(s.interval));
        }
      }
      if (c.admitted !== 0 && !(await admits(r, odds, id, c.admitted))) {
        throw new LotteryError("notDrawn", "let in at interval " + c.admitted + ", no draw of intervals " +
          (c.admitted - HOLD + 1) + " to " + c.admitted + " fell under the odds");
      }
      if (c.rank > 0) {
        if (r.ranks.length === 0) throw new LotteryError("rank", "rank " + c.rank + " shown, but the record has no rank list");
        if (rep.rank === 0) throw new LotteryError("rank", "rank " + c.rank + " shown, but the visitor's rank hash is not in the list");
        if (rep.rank !== c.rank) throw new LotteryError("rank", "rank " + c.rank + " shown, " + rep.rank + " in the list");
      }
    } catch (e) {
      if (!(e instanceof LotteryError)) throw e;
      rep.error = { kind: e.kind, message: e.message };
    }
    return rep;
  }

  // parseClaim reads a claim from text, as `waitingroom verify` takes it:
  // waited "58828440-58828445, 58828450", shown "58828440=0.25, ...",
  // admitted and rank a number each or empty. It throws an Error saying
  // what is wrong.
  function parseClaim(waited, shown, admitted, rank) {
    const int = (s, what) => {
      if (!/^-?[0-9]+$/.test(s) || !Number.isSafeInteger(Number(s))) throw new Error(what + " " + JSON.stringify(s) + ": want a whole number");
      return Number(s);
    };
    const items = (s) => s.split(",").map((x) => x.trim()).filter((x) => x !== "");
    const c = { waited: [], shown: [], admitted: 0, rank: 0 };
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
    if (rank.trim() !== "") c.rank = int(rank.trim(), "rank");
    return c;
  }

  const api = { commit, draw, rankHash, parseIdentity, parseClaim, verify };
  if (typeof module === "object" && module.exports) module.exports = api;
  else root.lottery = api;
})(globalThis);
