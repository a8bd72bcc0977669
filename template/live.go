package template

import (
	"html"
	"strings"
)

// liveJS is the script of the live page (LiveScript). Its markup carries
// the page's refresh interval (data-refresh) and the attributes of the
// room's cookie (data-cookie). It
//
//   - formats every <time data-wr-time="name"> in the page's language and
//     the visitor's time zone, named (Intl.DateTimeFormat);
//   - with a refresh (not on the closed page), stops the page's own refresh (the Refresh header, the meta refresh)
//     once loaded, and asks the page's URL for its JSON (Accept:
//     application/json) instead, when the refresh is due: first
//     data-refresh seconds after the page loaded, then as each answer's
//     Refresh header says, never sooner than a reload would;
//   - updates the page in place from the JSON: an element with
//     data-wr-if="a !b" is shown when a is true and b false (false, 0,
//     "" and missing are false), one with data-wr-text="name" shows the
//     value (missing: its data-wr-or, else nothing), one with
//     data-wr-href="name" links to it (missing or "": no href), a <template
//     data-wr-unfold="a !b"> is replaced by its content once its
//     condition holds (a section the page was served without), and a
//     <template data-wr-lines="id"> lists the lines of the element id,
//     each shown when its data-wr-if holds: a line whose text did not
//     change stays as it is, so that a live region announces only what
//     changed;
//   - navigates to the page's URL, as the reload would, when the answer
//     is not the room's waiting JSON (the visitor was let in, a redirect,
//     an error), says the site is closed (isRejectQueue) or gives a
//     challenge; waits, with a challenge, until its answer is in the
//     cookie (window.wrAnswered, ChallengeScriptFor);
//   - inside a frame (window.top !== window.self) whose cookie the
//     browser does not keep (a test cookie with the room's attributes
//     does not come back), shows the elements marked data-wr-framed, sets
//     the href of those marked data-wr-self to the page's URL, and asks
//     nothing more: each request would be a new place in the queue.
const liveJS = `(function(){"use strict";
var d=document,s=d.currentScript,lang=d.documentElement.lang||undefined,refresh=+s.getAttribute("data-refresh")||0,attrs=s.getAttribute("data-cookie")||"",tf=null;
try{tf=new Intl.DateTimeFormat(lang,{hour:"numeric",minute:"2-digit",second:"2-digit",timeZoneName:"short"})}catch(e){}
function each(q,f){var l=d.querySelectorAll(q);for(var i=0;i<l.length;i++)f(l[i])}
function times(v){each("[data-wr-time]",function(el){var iso=v?v[el.getAttribute("data-wr-time")]:el.getAttribute("datetime");if(!iso)return;var t=new Date(iso);if(isNaN(t.getTime()))return;
var txt=tf?tf.format(t):iso;el.setAttribute("datetime",iso);el.removeAttribute("dir");if(el.textContent!==txt)el.textContent=txt})}
times(null);
var framed=true;try{framed=window.top!==window.self}catch(e){}
function keeps(){var n="__waitingroom_probe=";try{d.cookie=n+"1"+attrs+"; Max-Age=60";var ok=d.cookie.indexOf(n+"1")>=0;d.cookie=n+attrs+"; Max-Age=0";return ok}catch(e){return false}}
function stopRefresh(){if(d.readyState==="complete")window.stop();else window.addEventListener("load",function(){window.stop()})}
if(framed&&!keeps()){window.wrLive={answered:function(){}};stopRefresh();
each("[data-wr-self]",function(a){a.href=location.href});each("[data-wr-framed]",function(el){el.hidden=false});return}
if(!(refresh>0)||typeof fetch!=="function")return;
function truthy(v,k){return !!v[k]}
function meets(c,v){var ks=(c||"").split(/\s+/);for(var i=0;i<ks.length;i++){var k=ks[i];if(k&&(k.charAt(0)==="!"?truthy(v,k.slice(1)):!truthy(v,k)))return false}return true}
function holds(el,v){return meets(el.getAttribute("data-wr-if"),v)}
function fill(root,v){var l=root.querySelectorAll("[data-wr-text]");for(var i=0;i<l.length;i++){var x=v[l[i].getAttribute("data-wr-text")],txt=x==null?l[i].getAttribute("data-wr-or")||"":String(x);if(l[i].textContent!==txt)l[i].textContent=txt}
l=root.querySelectorAll("[data-wr-href]");for(i=0;i<l.length;i++){x=v[l[i].getAttribute("data-wr-href")];if(x==null||x==="")l[i].removeAttribute("href");else if(l[i].getAttribute("href")!==String(x))l[i].setAttribute("href",String(x))}}
function unfold(v){each("template[data-wr-unfold]",function(t){if(meets(t.getAttribute("data-wr-unfold"),v))t.parentNode.replaceChild(t.content.cloneNode(true),t)})}
function lines(t,v){var box=d.getElementById(t.getAttribute("data-wr-lines"));if(!box)return;var want=[],c=t.content.children;
for(var i=0;i<c.length;i++)if(holds(c[i],v)){var n=c[i].cloneNode(true);n.removeAttribute("data-wr-if");fill(n,v);want.push(n)}
var at=0;for(i=0;i<want.length;i++){var have=box.children,j=at;while(j<have.length&&have[j].textContent!==want[i].textContent)j++;
if(j<have.length){while(j>at){box.removeChild(have[at]);j--}at++}else{box.insertBefore(want[i],have[at]||null);at++}}
while(box.children.length>at)box.removeChild(box.children[at])}
function update(v){unfold(v);each("[data-wr-if]",function(el){var h=!holds(el,v);if(el.hidden!==h)el.hidden=h});each("template[data-wr-lines]",function(t){lines(t,v)});fill(d,v);times(v)}
var url=location.href.split("#")[0],timer=0,held=false;
function navigate(){location.replace(url)}
function later(ms){clearTimeout(timer);timer=setTimeout(due,Math.max(0,ms))}
function due(){if(window.wrAnswered===false){held=true;return}ask()}
window.wrLive={answered:function(){if(held){held=false;ask()}}};
function ask(){var p;try{p=fetch(url,{headers:{Accept:"application/json"},credentials:"same-origin",cache:"no-store",redirect:"manual"})}catch(e){navigate();return}
p.then(function(r){var secs=parseInt(r.headers.get("Refresh"),10);
if(r.type==="opaqueredirect"||(r.headers.get("Content-Type")||"").indexOf("application/json")!==0){navigate();return}
return r.json().then(function(o){var v=null;for(var k in o){if(o[k]&&o[k].inWaitingRoom===true)v=o[k];break}
if(!v||v.isRejectQueue||v.challenge||!(secs>0)){navigate();return}
update(v);later(secs*1000)})}).catch(function(){later(refresh*1000)})}
stopRefresh();later(refresh*1000)})();`

// LiveScript returns the markup of the live page's script for d, which
// templates place with {{{liveScript}}}: with JavaScript, the page
// updates itself in place from the room's JSON instead of reloading, and
// tells a visitor inside another site's iframe whose browser does not
// keep the room's cookie there; see the package documentation. Without
// JavaScript, the page's meta refresh reloads it as before.
func LiveScript(d *Data) string {
	refresh := d.RefreshIntervalSeconds
	if d.IsRejectQueue {
		refresh = 0 // the closed page does not refresh
	}
	var b strings.Builder
	b.Grow(len(liveJS) + 128)
	b.WriteString(`<script data-refresh="`)
	b.WriteString(itoa(refresh))
	b.WriteString(`" data-cookie="`)
	b.WriteString(html.EscapeString(d.CookieAttributes))
	b.WriteString(`">`)
	b.WriteString(liveJS)
	b.WriteString(`</script>`)
	return b.String()
}
