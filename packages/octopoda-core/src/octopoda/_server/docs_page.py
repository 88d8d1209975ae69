"""The interactive API page at ``/docs``: one self-contained HTML page (no CDN, no external
asset: FastAPI's Swagger UI and ReDoc pages load theirs from a CDN, so they are off). It
reads ``/openapi.json`` and lists every operation with a form to call it."""

from __future__ import annotations

from typing import Final

__all__ = ["DOCS_HTML"]

DOCS_HTML: Final = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Octopoda API</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
body{font:14px system-ui,sans-serif;margin:2em auto;max-width:70em;color:#222}
details{border:1px solid #ccc;border-radius:4px;margin:.4em 0;padding:.3em .6em}
summary{cursor:pointer} code{background:#f4f4f4;padding:0 .2em}
.m{display:inline-block;width:4.5em;font-weight:bold} textarea,input{width:100%;font:12px monospace}
pre{background:#f7f7f7;padding:.5em;overflow:auto;max-height:30em}
</style></head><body>
<h1>Octopoda API</h1>
<p>The OpenAPI document is <a href="/openapi.json">/openapi.json</a>. Token (if the server
needs one): <input id="token" type="password" placeholder="bearer token"></p>
<div id="ops">loading /openapi.json ...</div>
<script>
"use strict";
function el(tag, attrs, text){const e=document.createElement(tag);
  Object.assign(e, attrs||{}); if(text!==undefined) e.textContent=text; return e;}
async function call(method, path, form, out){
  let url=path; const q=new URLSearchParams();
  for(const inp of form.querySelectorAll("input[data-in]")){
    if(!inp.value) continue;
    if(inp.dataset.in==="path") url=url.replace("{"+inp.name+"}", encodeURIComponent(inp.value));
    else q.append(inp.name, inp.value);}
  url=url.replace(":path}","}"); if(q.toString()) url+="?"+q;
  const headers={}; const t=document.getElementById("token").value;
  if(t) headers["Authorization"]="Bearer "+t;
  const body=form.querySelector("textarea"); const init={method, headers};
  if(body && body.value){headers["Content-Type"]="application/json"; init.body=body.value;}
  const r=await fetch(url, init); out.textContent=r.status+"\\n"+await r.text();}
fetch("/openapi.json").then(r=>r.json()).then(doc=>{
  const ops=document.getElementById("ops"); ops.textContent="";
  for(const [path, item] of Object.entries(doc.paths)){
    for(const [method, op] of Object.entries(item)){
      const d=el("details"); const s=el("summary");
      s.append(el("span",{className:"m"},method.toUpperCase()), el("code",{},path),
               " "+(op.summary||""));
      d.append(s, el("p",{},op.description||""));
      const form=el("form");
      for(const p of op.parameters||[]){
        form.append(el("label",{},p.name+" ("+p.in+(p.required?", required":"")+")"));
        form.append(el("input",{name:p.name,dataset:{in:p.in}}));
        form.lastChild.dataset.in=p.in;}
      if(op.requestBody){form.append(el("label",{},"JSON body"));
        form.append(el("textarea",{rows:4}));}
      const out=el("pre"); const b=el("button",{type:"submit"},"Send");
      form.append(b); form.onsubmit=(ev)=>{ev.preventDefault();
        call(method.toUpperCase(), path, form, out).catch(e=>out.textContent=String(e));};
      d.append(form, out); ops.append(d);}}});
</script></body></html>
"""
