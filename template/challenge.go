package template

import (
	"encoding/json"
	"strconv"
	"strings"
)

// powWorker is the proof-of-work solver that ChallengeScript runs in a Web
// Worker: given a puzzle "<seed>.<seconds>.<difficulty>", it finds the
// decimal n for which SHA-256("<puzzle>.<n>") starts with difficulty zero
// bits, and posts that answer back. Self-contained: its own SHA-256.
const powWorker = `"use strict";
var K=new Int32Array([0x428a2f98,0x71374491,0xb5c0fbcf,0xe9b5dba5,0x3956c25b,0x59f111f1,0x923f82a4,0xab1c5ed5,0xd807aa98,0x12835b01,0x243185be,0x550c7dc3,0x72be5d74,0x80deb1fe,0x9bdc06a7,0xc19bf174,0xe49b69c1,0xefbe4786,0x0fc19dc6,0x240ca1cc,0x2de92c6f,0x4a7484aa,0x5cb0a9dc,0x76f988da,0x983e5152,0xa831c66d,0xb00327c8,0xbf597fc7,0xc6e00bf3,0xd5a79147,0x06ca6351,0x14292967,0x27b70a85,0x2e1b2138,0x4d2c6dfc,0x53380d13,0x650a7354,0x766a0abb,0x81c2c92e,0x92722c85,0xa2bfe8a1,0xa81a664b,0xc24b8b70,0xc76c51a3,0xd192e819,0xd6990624,0xf40e3585,0x106aa070,0x19a4c116,0x1e376c08,0x2748774c,0x34b0bcb5,0x391c0cb3,0x4ed8aa4a,0x5b9cca4f,0x682e6ff3,0x748f82ee,0x78a5636f,0x84c87814,0x8cc70208,0x90befffa,0xa4506ceb,0xbef9a3f7,0xc67178f2]);
var W=new Int32Array(64),H=new Int32Array(2);
function sha(s){
var l=s.length,nb=((l+8)>>6)+1,M=new Int32Array(nb*16),i,t,b;
for(i=0;i<l;i++)M[i>>2]|=(s.charCodeAt(i)&255)<<(24-(i&3)*8);
M[l>>2]|=0x80<<(24-(l&3)*8);M[nb*16-1]=l*8;
var h0=0x6a09e667,h1=0xbb67ae85|0,h2=0x3c6ef372,h3=0xa54ff53a|0,h4=0x510e527f,h5=0x9b05688c|0,h6=0x1f83d9ab,h7=0x5be0cd19;
for(b=0;b<nb;b++){
for(t=0;t<64;t++){if(t<16)W[t]=M[b*16+t];else{var x=W[t-15],y=W[t-2];
W[t]=(W[t-16]+(((x>>>7)|(x<<25))^((x>>>18)|(x<<14))^(x>>>3))+W[t-7]+(((y>>>17)|(y<<15))^((y>>>19)|(y<<13))^(y>>>10)))|0;}}
var a=h0,c=h1,d=h2,e=h3,f=h4,g=h5,k=h6,h=h7;
for(t=0;t<64;t++){
var T1=(h+(((f>>>6)|(f<<26))^((f>>>11)|(f<<21))^((f>>>25)|(f<<7)))+((f&g)^(~f&k))+K[t]+W[t])|0;
var T2=((((a>>>2)|(a<<30))^((a>>>13)|(a<<19))^((a>>>22)|(a<<10)))+((a&c)^(a&d)^(c&d)))|0;
h=k;k=g;g=f;f=(e+T1)|0;e=d;d=c;c=a;a=(T1+T2)|0;}
h0=(h0+a)|0;h1=(h1+c)|0;h2=(h2+d)|0;h3=(h3+e)|0;h4=(h4+f)|0;h5=(h5+g)|0;h6=(h6+k)|0;h7=(h7+h)|0;}
H[0]=h0;H[1]=h1;return H;}
function zeros(s){var h=sha(s);return h[0]!==0?Math.clz32(h[0]):32+Math.clz32(h[1]);}
self.onmessage=function(e){var p=String(e.data),d=+p.split(".")[2],pre=p+".";
for(var n=0;;n++){if(zeros(pre+n)>=d){self.postMessage(pre+n);return;}}};`

// ChallengeScript returns the markup that answers a challenge in the
// browser, for the {{{turnstile}}} slot of a waiting page: for a proof of
// work (puzzle set), a script that solves it in a Web Worker; for a hosted
// widget (widget set, the provider's markup calling wrChallengeDone with
// its token), that markup and the callback. Either way the answer goes in
// the cookie named cookie (path path, SameSite=Lax, Secure when the page is
// served over HTTPS) and the page reloads once solved, no sooner than
// refresh seconds after it loaded, when the visitor's next chance is due.
// Without JavaScript nothing happens: the page's own refresh comes back
// without an answer.
//
// A SameSite=Lax cookie cannot be written inside an iframe on another
// site: ChallengeScriptFor writes the answer with the attributes of the
// room's own cookie, which the room passes.
func ChallengeScript(puzzle, widget, cookie, path string, refresh int) string {
	return challengeScript(puzzle, widget, cookie, "; Path="+path+"; SameSite=Lax", true, refresh)
}

// ChallengeScriptFor is ChallengeScript writing the answer's cookie with
// the attributes attrs, those of the room's visitor cookie as
// Data.CookieAttributes holds them ("; Path=/; Secure; SameSite=None;
// Partitioned"), so that the answer comes back wherever the visitor cookie
// does: inside an iframe on another site too, when the visitor cookie is
// SameSite=None. When the page updates itself ({{{liveScript}}}), the
// script leaves the next request to it instead of reloading the page.
func ChallengeScriptFor(puzzle, widget, cookie, attrs string, refresh int) string {
	return challengeScript(puzzle, widget, cookie, attrs, false, refresh)
}

// challengeScript is ChallengeScript's and ChallengeScriptFor's markup:
// the answer's cookie gets attrs, and Secure on an HTTPS page when
// secureOnHTTPS is set.
func challengeScript(puzzle, widget, cookie, attrs string, secureOnHTTPS bool, refresh int) string {
	js := func(s string) string {
		b, _ := json.Marshal(s) // a string always marshals
		// Not "</script>" inside the script.
		return strings.ReplaceAll(string(b), "<", `\u003c`)
	}
	var b strings.Builder
	b.WriteString(widget)
	b.WriteString(`<script>(function(){var t0=Date.now(),c=`)
	b.WriteString(js(cookie))
	b.WriteString(`,a=`)
	b.WriteString(js(attrs))
	if secureOnHTTPS {
		b.WriteString(`+(location.protocol==="https:"?"; Secure":"")`)
	}
	b.WriteString(`,r=`)
	b.WriteString(itoa(refresh))
	// window.wrAnswered is false until the answer is in the cookie; the
	// live page's script (liveScript) waits for it before it asks again.
	b.WriteString(`;window.wrAnswered=false;window.wrChallengeDone=function(v){document.cookie=c+"="+v+a+"; Max-Age=600";window.wrAnswered=true;` +
		`if(window.wrLive){window.wrLive.answered();return}` +
		`setTimeout(function(){location.reload()},Math.max(0,t0+r*1000-Date.now()))};`)
	if puzzle != "" {
		b.WriteString(`var w=new Worker(URL.createObjectURL(new Blob([`)
		b.WriteString(js(powWorker))
		b.WriteString(`],{type:"text/javascript"})));w.onmessage=function(e){window.wrChallengeDone(e.data)};w.postMessage(`)
		b.WriteString(js(puzzle))
		b.WriteString(`);`)
	}
	b.WriteString(`})();</script>`)
	return b.String()
}

func itoa(n int) string { return strconv.Itoa(n) }
